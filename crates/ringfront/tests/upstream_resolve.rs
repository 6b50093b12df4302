//! `server NAME resolve [service=NAME]` in an upstream with `zone` (nginx 1.27.3; ringfront
//! only, nginx 1.22 has no such parameter), against the test kit's DNS server: the group
//! follows its SRV records as they are switched at run time (one notice line per change,
//! naming both sets); an address that stays keeps its failure state; a name that stops
//! resolving keeps its last servers and says so; a new address enters through slow start;
//! no request fails while the set changes under a steady stream; a reload keeps the
//! resolved servers, and one that brings the first `resolve` line resolves it at once; the group is empty until the first answer; and the configuration
//! errors of nginx 1.27.3.

mod common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{fill, served_by};
use ringfront_testkit::dns::{Answer, SRV};
use ringfront_testkit::{http, Backend, Canned, DnsServer, Mode, Ringfront};

const WAIT: Duration = Duration::from_secs(15);

fn config(p: u16, dns: &DnsServer, server: &str) -> String {
    config_with(p, dns, server, "")
}

/// [`config`] with `location` added to the proxying location (a `health_check`).
fn config_with(p: u16, dns: &DnsServer, server: &str, location: &str) -> String {
    fill(
        r#"worker_processes 2;
error_log stderr notice;
events { worker_connections 256; }
http {
    access_log off;
    resolver {DNS};
    resolver_timeout 1s;
    upstream u {
        zone u 64k;
        server {SERVER};
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass http://u;
            proxy_next_upstream error timeout;
            {LOC}
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("DNS", dns.addr()),
            ("SERVER", server.to_string()),
            ("LOC", location.to_string()),
        ],
    )
}

/// SRV records for backends (priority 1, weight 1, target `t.test`, their ports); TTL 1.
fn srv_of(bs: &[&Backend]) -> Answer {
    let list: Vec<(u16, u16, u16, &str)> = bs.iter().map(|b| (1, 1, b.port(), "t.test")).collect();
    Answer::srv(&list, 1)
}

/// The notice line for a change to `bs`.
fn changed_to(bs: &[&Backend]) -> String {
    let mut set: Vec<String> = bs
        .iter()
        .map(|b| format!("127.0.0.1:{}", b.port()))
        .collect();
    set.sort();
    format!("-> [{}]", set.join(", "))
}

/// The ports `n` requests were served by (0: a failure).
fn served(p: u16, n: usize) -> Vec<u16> {
    (0..n)
        .map(|_| match http::try_get(("127.0.0.1", p), "/") {
            Ok(r) if r.status == 200 => served_by(&r),
            _ => 0,
        })
        .collect()
}

fn ports(bs: &[&Backend]) -> BTreeSet<u16> {
    bs.iter().map(|b| b.port()).collect()
}

/// The checker's line for `b`'s peer of group `u` saying `what`, once it is there.
fn wait_state(rf: &Ringfront, b: &Backend, what: &str) -> bool {
    let line = format!("upstream server 127.0.0.1:{} of \"u\" {what}", b.port());
    rf.wait_for_stderr(&line, WAIT)
}

/// How many checker lines say `what` of `b`'s peer.
fn state_count(rf: &Ringfront, b: &Backend, what: &str) -> usize {
    let line = format!("upstream server 127.0.0.1:{} of \"u\" {what}", b.port());
    rf.stderr_lines()
        .iter()
        .filter(|l| l.contains(&line))
        .count()
}

/// Requests `b` served that were not probes.
fn user_requests(b: &Backend) -> usize {
    b.requests()
        .iter()
        .filter(|r| !r.target.starts_with("/health"))
        .count()
}

fn start(server: &str, dns: &DnsServer) -> (Ringfront, u16) {
    let p = common::port();
    let rf = Ringfront::start(&config(p, dns, server));
    (rf, p)
}

#[test]
fn the_upstream_follows_its_srv_records() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    let (rf, p) = start("backends.test service=http resolve", &dns);
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2]), WAIT),
        "first set"
    );
    let seen: BTreeSet<u16> = served(p, 10).into_iter().collect();
    assert_eq!(seen, ports(&[&b1, &b2]));
    dns.set("_http._tcp.backends.test", srv_of(&[&b2, &b3]));
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b2, &b3]), WAIT),
        "second set"
    );
    let seen: BTreeSet<u16> = served(p, 10).into_iter().collect();
    assert_eq!(seen, ports(&[&b2, &b3]));
    // The line names the old set too.
    let line = rf
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains(&changed_to(&[&b2, &b3])))
        .unwrap_or_default();
    assert!(line.contains("[notice]"), "{line}");
    assert!(line.contains(&format!("127.0.0.1:{}", b1.port())), "{line}");
}

#[test]
fn a_name_that_stops_resolving_keeps_its_servers() {
    let b = Backend::start();
    let dns = DnsServer::start();
    dns.set("one.test", Answer::a(&[Ipv4Addr::LOCALHOST], 1));
    let server = format!("one.test:{} resolve", b.port());
    let (rf, p) = start(&server, &dns);
    assert!(rf.wait_for_stderr(&changed_to(&[&b]), WAIT), "resolved");
    assert_eq!(served(p, 3), vec![b.port(); 3]);
    dns.set("one.test", Answer::nxdomain());
    let kept = "one.test could not be resolved (3: Host not found) in upstream \"u\", \
                its 1 server(s) from \"one.test";
    assert!(rf.wait_for_stderr(kept, WAIT), "kept line");
    assert_eq!(served(p, 5), vec![b.port(); 5]);
    // Answers again: nothing changed, so no notice line.
    let notices = || {
        rf.stderr_lines()
            .iter()
            .filter(|l| l.contains("resolved: ["))
            .count()
    };
    let before = notices();
    dns.set("one.test", Answer::a(&[Ipv4Addr::LOCALHOST], 1));
    let asked = dns.queries("one.test", ringfront_testkit::dns::A);
    assert!(dns.wait_queries("one.test", ringfront_testkit::dns::A, asked + 2, WAIT));
    assert_eq!(notices(), before);
}

#[test]
fn an_address_that_stays_keeps_its_failure_state() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    let (rf, p) = start(
        "backends.test service=http resolve max_fails=1 fail_timeout=60s",
        &dns,
    );
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2]), WAIT),
        "first set"
    );
    // b1 refuses once: it is failed out for 60 s (the request goes on to b2).
    b1.set_mode(Mode::Refuse);
    let got = served(p, 4);
    assert!(got.iter().all(|&s| s == b2.port()), "{got:?}");
    b1.set_mode(Mode::Ok);
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2, &b3]));
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2, &b3]), WAIT),
        "grown"
    );
    let seen: BTreeSet<u16> = served(p, 12).into_iter().collect();
    // b1 stayed, and so did its failure: only b2 and the new b3 serve.
    assert_eq!(seen, ports(&[&b2, &b3]));
}

#[test]
fn a_new_address_enters_through_slow_start() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    let (rf, p) = start("backends.test service=http resolve slow_start=60s", &dns);
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2]), WAIT),
        "first set"
    );
    // Let the first set's own ramp end (both started together, so they share equally).
    let _ = served(p, 4);
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2, &b3]));
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2, &b3]), WAIT),
        "grown"
    );
    let got = served(p, 30);
    let to_b3 = got.iter().filter(|&&s| s == b3.port()).count();
    // At full weight b3 would take a third; ramping from 0 over 60 s it takes almost none.
    assert!(to_b3 <= 2, "b3 took {to_b3} of 30: {got:?}");
    assert!(got.iter().all(|&s| s != 0), "{got:?}");
}

/// With a `mandatory` check, an address the resolver adds is held out until its first probe
/// passes (as a new peer on a reload), while the addresses that stay are not checked again:
/// they serve through the change.
#[test]
fn a_new_address_waits_for_its_mandatory_check() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    b3.set_route("/health", Canned::status(500, "not yet"));
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    let p = common::port();
    let check = "health_check interval=200ms fails=1 passes=1 uri=/health mandatory;";
    let rf = Ringfront::start(&config_with(
        p,
        &dns,
        "backends.test service=http resolve",
        check,
    ));
    for b in [&b1, &b2] {
        assert!(wait_state(&rf, b, "marked up: first active check passed"));
    }
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2, &b3]));
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2, &b3]), WAIT),
        "grown"
    );
    // From the change on: b1 and b2 keep serving (not held out again), b3 gets nothing
    // while its probe fails.
    let mut got = served(p, 10);
    assert!(wait_state(
        &rf,
        &b3,
        "marked down: first active check failed"
    ));
    let probes = b3.requests().len();
    let deadline = Instant::now() + WAIT;
    while b3.requests().len() < probes + 2 {
        got.extend(served(p, 2));
        assert!(Instant::now() < deadline, "b3 probed again");
    }
    assert!(
        got.iter().all(|&s| s == b1.port() || s == b2.port()),
        "{got:?}"
    );
    assert_eq!(user_requests(&b3), 0);
    for b in [&b1, &b2] {
        assert_eq!(
            state_count(&rf, b, "marked up"),
            1,
            "{:?}",
            rf.stderr_lines()
        );
        assert_eq!(state_count(&rf, b, "held out"), 0);
    }
    // Its probe passes: b3 takes its share.
    b3.clear_route("/health");
    assert!(wait_state(&rf, &b3, "marked up"));
    let got = served(p, 9);
    assert!(got.contains(&b3.port()), "{got:?}");
    assert!(got.iter().all(|&s| s != 0), "{got:?}");
}

/// With `slow_start` too, the new address's ramp begins when its first probe lets it in
/// (CHECKING -> UP), not when it entered the group: the held-out time does not count
/// toward the ramp. (A probe that fails first takes it DOWN; from there every return
/// ramps.)
#[test]
fn a_new_address_held_by_its_check_ramps_from_its_first_pass() {
    let (b1, b2) = (Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1]));
    let p = common::port();
    let check = "health_check interval=200ms fails=1 passes=1 uri=/health mandatory;";
    let rf = Ringfront::start(&config_with(
        p,
        &dns,
        "backends.test service=http resolve slow_start=60s",
        check,
    ));
    assert!(wait_state(&rf, &b1, "marked up"));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    assert!(rf.wait_for_stderr(&changed_to(&[&b1, &b2]), WAIT), "grown");
    assert!(wait_state(&rf, &b2, "marked up: first active check passed"));
    let line = rf
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains(&format!("127.0.0.1:{} of \"u\" marked up", b2.port())))
        .unwrap_or_default();
    assert!(line.contains("slow start over 60000ms"), "{line}");
    let got = served(p, 20);
    let to_b2 = got.iter().filter(|&&s| s == b2.port()).count();
    assert!(to_b2 <= 2, "b2 took {to_b2} of 20: {got:?}");
    assert!(got.iter().all(|&s| s != 0), "{got:?}");
    // The first answer's only server came up alone: a single peer does not ramp.
    let first = rf
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains(&format!("127.0.0.1:{} of \"u\" marked up", b1.port())))
        .unwrap_or_default();
    assert!(!first.contains("slow start"), "{first}");
}

/// Without a mandatory check nothing waits: a new address takes requests at once.
#[test]
fn without_mandatory_a_new_address_serves_at_once() {
    let (b1, b2) = (Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1]));
    let p = common::port();
    // Each probe takes 5 s to answer: b2 has no verdict during the requests below.
    let check = "health_check interval=30s uri=/health?sleep=5;";
    let rf = Ringfront::start(&config_with(
        p,
        &dns,
        "backends.test service=http resolve",
        check,
    ));
    assert!(rf.wait_for_stderr(&changed_to(&[&b1]), WAIT), "first set");
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    assert!(rf.wait_for_stderr(&changed_to(&[&b1, &b2]), WAIT), "grown");
    let got = served(p, 4);
    assert!(got.contains(&b2.port()), "{got:?}");
    assert!(got.iter().all(|&s| s != 0), "{got:?}");
    assert_eq!(state_count(&rf, &b2, "marked up"), 0, "no verdict yet");
    // The new address is probed at once; the one that stayed keeps its schedule (its next
    // probe 30 s after its first), not probed again by the change.
    let probes = |b: &Backend| {
        b.requests()
            .iter()
            .filter(|r| r.target.starts_with("/health"))
            .count()
    };
    let deadline = Instant::now() + WAIT;
    while probes(&b2) == 0 {
        assert!(Instant::now() < deadline, "b2 probed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Well past the 100 ms a fresh schedule spreads first probes over: the resolver's next
    // question (TTL 1 s). b1's probe from the first set is still in flight (it answers
    // after 5 s) and counts as its last.
    let asked = dns.queries("_http._tcp.backends.test", SRV);
    assert!(dns.wait_queries("_http._tcp.backends.test", SRV, asked + 1, WAIT));
    assert_eq!(probes(&b1), 1);
}

#[test]
fn no_request_fails_while_addresses_change() {
    let bs = [Backend::start(), Backend::start(), Backend::start()];
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&bs[0], &bs[1]]));
    let (rf, p) = start("backends.test service=http resolve", &dns);
    assert!(
        rf.wait_for_stderr(&changed_to(&[&bs[0], &bs[1]]), WAIT),
        "first set"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let streams: Vec<_> = (0..3)
        .map(|_| {
            let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
            std::thread::spawn(move || {
                let mut c = http::Client::connect(("127.0.0.1", p));
                while !stop.load(Ordering::Relaxed) {
                    match c.try_request("GET", "/", &[], b"") {
                        Ok(r) if r.status == 200 => {
                            ok.fetch_add(1, Ordering::Relaxed);
                            // After `keepalive_requests` the proxy closes: connect again.
                            if r.header("connection") == Some("close") {
                                c = http::Client::connect(("127.0.0.1", p));
                            }
                        }
                        other => {
                            eprintln!("stream: {:?}", other.map(|r| r.status));
                            c = http::Client::connect(("127.0.0.1", p));
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    let sets = [[1, 2], [2, 0], [0, 1], [1, 2], [2, 0]];
    for set in sets {
        let chosen = [&bs[set[0]], &bs[set[1]]];
        dns.set("_http._tcp.backends.test", srv_of(&chosen));
        assert!(rf.wait_for_stderr(&changed_to(&chosen), WAIT), "{set:?}");
        let before = ok.load(Ordering::Relaxed);
        let end = Instant::now() + WAIT;
        while ok.load(Ordering::Relaxed) < before + 50 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for s in streams {
        let _ = s.join();
    }
    assert!(ok.load(Ordering::Relaxed) >= 250, "requests ran");
    assert_eq!(failed.load(Ordering::Relaxed), 0, "failed requests");
}

/// A reload keeps what the template resolved to (nginx 1.27.3's "preresolve"): with the
/// name server silent from then on, the reloaded group still serves both backends.
#[test]
fn a_reload_keeps_the_resolved_servers() {
    let (b1, b2) = (Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    let (rf, p) = start("backends.test service=http resolve", &dns);
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2]), WAIT),
        "first set"
    );
    dns.set("_http._tcp.backends.test", Answer::silent());
    rf.write_config(&config(
        p,
        &dns,
        "backends.test service=http resolve max_fails=3",
    ));
    rf.signal(ringfront_testkit::SIGHUP);
    assert!(
        rf.wait_for_stderr("reconfigured (generation", WAIT),
        "reloaded"
    );
    let got = served(p, 8);
    assert!(!got.contains(&0), "{got:?}");
    assert_eq!(
        got.into_iter().collect::<BTreeSet<u16>>(),
        ports(&[&b1, &b2])
    );
}

/// A reload that brings the first `resolve` line wakes the resolver thread, which sleeps
/// without one (it would otherwise look again only after an hour).
#[test]
fn a_reload_that_adds_a_resolve_line_resolves_it_at_once() {
    let (b0, b1) = (Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1]));
    let (rf, p) = start(&format!("127.0.0.1:{}", b0.port()), &dns);
    assert_eq!(served(p, 2), [b0.port(), b0.port()]);
    rf.write_config(&config(p, &dns, "backends.test service=http resolve"));
    rf.signal(ringfront_testkit::SIGHUP);
    assert!(rf.wait_for_stderr(&changed_to(&[&b1]), WAIT), "resolved");
    assert_eq!(served(p, 2), [b1.port(), b1.port()]);
}

/// Each template is asked on its own: a name that never answers (with a long
/// `resolver_timeout`) does not hold back another template's changes.
#[test]
fn a_silent_name_delays_no_other() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let dns = DnsServer::start();
    dns.set("slow.test", Answer::silent());
    dns.set("t.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    dns.set("_http._tcp.backends.test", srv_of(&[&b1, &b2]));
    let servers = format!(
        "slow.test:{} resolve;\n        resolver_timeout 20s;\n        \
         server backends.test service=http resolve",
        b3.port()
    );
    let (rf, _p) = start(&servers, &dns);
    let soon = Duration::from_secs(6);
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b1, &b2]), soon),
        "first set"
    );
    dns.set("_http._tcp.backends.test", srv_of(&[&b2, &b3]));
    assert!(
        rf.wait_for_stderr(&changed_to(&[&b2, &b3]), soon),
        "second set"
    );
}

/// Until the first answer a template adds no server: a group of only that line answers
/// 502 "no live upstreams", as nginx; then it serves.
#[test]
fn before_the_first_answer_the_group_is_empty() {
    let b = Backend::start();
    let dns = DnsServer::start();
    dns.set("late.test", Answer::silent());
    let server = format!("late.test:{} resolve", b.port());
    let (rf, p) = start(&server, &dns);
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert!(rf.wait_for_stderr("no live upstreams", WAIT), "log line");
    dns.set("late.test", Answer::a(&[Ipv4Addr::LOCALHOST], 60));
    assert!(rf.wait_for_stderr(&changed_to(&[&b]), WAIT), "resolved");
    assert_eq!(served(p, 3), vec![b.port(); 3]);
}

/// nginx 1.27.3's errors for `resolve` servers.
#[test]
fn resolve_config_errors() {
    let host = ringfront_config::MemoryHost::new();
    let path = std::path::Path::new("/c/x.conf");
    let conf = |http: &str, up: &str| {
        format!("events {{}}\nhttp {{\n{http}\nupstream u {{\n{up}\n}}\nserver {{ listen 127.0.0.1:1; location / {{ proxy_pass http://u; }} }}\n}}\n")
    };
    let cases = [
        (
            conf("resolver 127.0.0.1;", "server b.test resolve;"),
            "resolving names at run time requires upstream \"u\" in /c/x.conf:4 to be in shared memory",
        ),
        (
            conf("", "zone u 64k;\nserver b.test resolve;"),
            "no resolver defined to resolve names at run time in upstream \"u\" in /c/x.conf:4",
        ),
        (
            conf("resolver 127.0.0.1;", "zone u 64k;\nserver b.test service=http;"),
            "service upstream \"b.test\" requires \"resolve\" parameter in /c/x.conf:6",
        ),
        (
            conf("resolver 127.0.0.1;", "zone u 64k;\nserver b.test:80 service=http resolve;"),
            "service upstream \"b.test:80\" may not have port in /c/x.conf:6",
        ),
        (
            conf("resolver 127.0.0.1;", "zone u 64k;\nserver 127.0.0.1 service=http resolve;"),
            "service upstream \"127.0.0.1\" requires domain name in /c/x.conf:6",
        ),
        (
            conf("resolver 127.0.0.1;", "zone u 64k;\nserver b.test service= resolve;"),
            "service is empty in /c/x.conf:6",
        ),
    ];
    for (text, want) in cases {
        let e = ringfront_config::parse_str(&text, path, &host).unwrap_err();
        assert_eq!(e.to_string(), want);
    }
    // The upstream's own resolver serves; a literal address with `resolve` is a plain one.
    let ok = conf(
        "",
        "zone u 64k;\nresolver 127.0.0.1 valid=5s;\nresolver_timeout 2s;\nserver b.test resolve;\nserver 127.0.0.1:81 resolve;",
    );
    let cfg = ringfront_config::parse_str(&ok, path, &host).unwrap();
    let up = &cfg.http.upstreams[0];
    assert_eq!(
        up.resolver.as_ref().map(|r| r.timeout),
        Some(Duration::from_secs(2))
    );
    assert!(up.servers[0].resolve.is_some() && up.servers[1].resolve.is_none());
    let _ = SRV;
}
