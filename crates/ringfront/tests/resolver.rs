//! `resolver` for `proxy_pass` with variables, against real nginx 1.22 on the same
//! configuration, both asking the test kit's DNS server: names with A records, a CNAME
//! chain, a truncated answer asked again over TCP, NXDOMAIN, SERVFAIL and silence
//! (`resolver_timeout`), with nginx's 502 and error-log lines; the cache by TTL (counted at
//! the DNS server); `$upstream_addr` of a resolved name; several name servers taken in turn; a server that stays silent is left
//! for the next one after nginx's 5 s resend interval.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::dns::{Answer, A, AAAA};
use ringfront_testkit::{Backend, Client, DnsServer};

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;

fn config(p: u16, resolver: &str, extra: &str) -> String {
    fill(
        r#"worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    resolver {RESOLVER};
    {EXTRA}
    server {
        listen 127.0.0.1:{PORT};
        location /v/ {
            proxy_pass http://$arg_h:$arg_p;
            add_header X-Addr $upstream_addr;
        }
        location /short/ {
            resolver_timeout 1s;
            proxy_pass http://$arg_h:$arg_p;
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("RESOLVER", resolver.to_string()),
            ("EXTRA", extra.to_string()),
        ],
    )
}

/// Status, and the target and `Host` the backend received (`-` when it got nothing).
fn answers(p: u16, b: &Backend, requests: &[String]) -> Vec<String> {
    requests
        .iter()
        .map(|path| {
            let mut c = Client::connect(("127.0.0.1", p));
            let before = b.requests().len();
            let r = c.request("GET", path, &[("Host", "localhost")], b"");
            match b.requests().get(before..) {
                Some([one]) => format!(
                    "{} {} host={} addr={}",
                    r.status,
                    one.target,
                    one.header("Host").unwrap_or("-"),
                    r.header("X-Addr").unwrap_or("-")
                ),
                _ => format!("{} -", r.status),
            }
        })
        .collect()
}

fn logged(n: &ringfront_testkit::Nginx, line: &str) -> bool {
    n.error_log_contents().contains(line) || n.stderr_lines().iter().any(|l| l.contains(line))
}

#[test]
fn names_resolve_and_fail_as_nginx() {
    let b = Backend::start();
    let dns = DnsServer::start();
    dns.set("a.test", Answer::a(&[LOCAL], 60));
    dns.set("alias.test", Answer::cname("mid.test", 60));
    dns.set("mid.test", Answer::cname("a.test", 60));
    dns.set("big.test", Answer::a(&[LOCAL], 60).truncated());
    dns.set("nx.test", Answer::nxdomain());
    dns.set("fail.test", Answer::rcode(2));
    dns.set("refused.test", Answer::rcode(5));
    dns.set("slow.test", Answer::silent());
    let bp = b.port();
    let requests: Vec<String> = [
        format!("/v/x?h=a.test&p={bp}"),
        format!("/v/x?h=A.TEST&p={bp}"),
        format!("/v/y?h=alias.test&p={bp}"),
        format!("/v/z?h=big.test&p={bp}"),
        format!("/v/?h=nx.test&p={bp}"),
        format!("/v/?h=fail.test&p={bp}"),
        format!("/v/?h=refused.test&p={bp}"),
        format!("/short/?h=slow.test&p={bp}"),
        format!("/v/?h=a.test&p={}", common::port()),
    ]
    .into();
    let (nginx, rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &dns.addr(), ""));
    let tcp_before = dns.tcp_queries("big.test");
    let n = answers(np, &b, &requests);
    // nginx asked the truncated name again over TCP.
    assert!(
        dns.tcp_queries("big.test") > tcp_before,
        "nginx used no TCP"
    );
    let tcp_before = dns.tcp_queries("big.test");
    let r = answers(rp, &b, &requests);
    assert!(
        dns.tcp_queries("big.test") > tcp_before,
        "ringfront used no TCP"
    );
    common::assert_same("resolver", &n, &r);
    for want in [
        format!("200 /v/x?h=a.test&p={bp} host=a.test:{bp} addr=127.0.0.1:{bp}"),
        format!("200 /v/y?h=alias.test&p={bp} host=alias.test:{bp} addr=127.0.0.1:{bp}"),
        format!("200 /v/z?h=big.test&p={bp} host=big.test:{bp} addr=127.0.0.1:{bp}"),
        "502 -".to_string(),
    ] {
        assert!(n.contains(&want), "{want}: {n:?}");
    }
    let wait = Duration::from_secs(5);
    for line in [
        "nx.test could not be resolved (3: Host not found)",
        "fail.test could not be resolved (2: Server failure)",
        "refused.test could not be resolved (5: Operation refused)",
        "slow.test could not be resolved (110: Operation timed out)",
    ] {
        assert!(rf.wait_for_stderr(line, wait), "ringfront: {line}");
        assert!(logged(&nginx, line), "nginx: {line}");
    }
}

/// What one proxy does with a name of TTL 1: asks on the first request, answers the second
/// from its cache, asks again once the TTL has run out.
fn ttl_story(p: u16, b: &Backend, dns: &DnsServer) -> Vec<String> {
    let path = format!("/v/?h=ttl.test&p={}", b.port());
    let get = |path: &str| {
        let mut c = Client::connect(("127.0.0.1", p));
        c.request("GET", path, &[("Host", "localhost")], b"").status
    };
    let start = dns.queries("ttl.test", A);
    let mut story = vec![format!("first {}", get(&path))];
    story.push(format!("asked {}", dns.queries("ttl.test", A) - start));
    story.push(format!("second {}", get(&path)));
    story.push(format!("asked {}", dns.queries("ttl.test", A) - start));
    // Once the TTL has passed a request asks again: poll with requests, bounded.
    let end = Instant::now() + Duration::from_secs(6);
    while dns.queries("ttl.test", A) - start < 2 && Instant::now() < end {
        get(&path);
        std::thread::sleep(Duration::from_millis(100));
    }
    story.push(format!(
        "asked again {}",
        dns.queries("ttl.test", A) - start >= 2
    ));
    story
}

#[test]
fn answers_are_cached_for_their_ttl_as_nginx() {
    let b = Backend::start();
    let dns = DnsServer::start();
    dns.set("ttl.test", Answer::a(&[LOCAL], 1));
    let (_nginx, _rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &dns.addr(), ""));
    let n = ttl_story(np, &b, &dns);
    let r = ttl_story(rp, &b, &dns);
    common::assert_same("ttl", &n, &r);
    assert_eq!(
        n,
        [
            "first 200",
            "asked 1",
            "second 200",
            "asked 1",
            "asked again true"
        ]
    );
}

/// Requests that come for a name while it is being asked wait for that one answer.
#[test]
fn concurrent_requests_share_one_lookup_as_nginx() {
    let b = Backend::start();
    let dns = DnsServer::start();
    dns.set(
        "busy.test",
        Answer::a(&[LOCAL], 60).delayed(Duration::from_millis(400)),
    );
    let (_nginx, _rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &dns.addr(), ""));
    let story = |p: u16| {
        let before = dns.queries("busy.test", A);
        let path = format!("/v/?h=busy.test&p={}", b.port());
        let runs: Vec<_> = (0..5)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut c = Client::connect(("127.0.0.1", p));
                    c.request("GET", &path, &[("Host", "localhost")], b"")
                        .status
                })
            })
            .collect();
        let statuses: Vec<u16> = runs.into_iter().map(|t| t.join().unwrap_or(0)).collect();
        format!(
            "{statuses:?} asked {}",
            dns.queries("busy.test", A) - before
        )
    };
    let n = story(np);
    let r = story(rp);
    common::assert_same("coalesced", std::slice::from_ref(&n), &[r]);
    assert_eq!(n, "[200, 200, 200, 200, 200] asked 1");
}

/// Which of two name servers each of four new names was asked at.
fn turns(p: u16, b: &Backend, s1: &DnsServer, s2: &DnsServer, tag: &str) -> Vec<String> {
    (0..4)
        .map(|i| {
            let name = format!("{tag}{i}.test");
            let mut c = Client::connect(("127.0.0.1", p));
            let path = format!("/v/?h={name}&p={}", b.port());
            let st = c
                .request("GET", &path, &[("Host", "localhost")], b"")
                .status;
            let (q1, q2) = (s1.queries(&name, A), s2.queries(&name, A));
            let (a1, a2) = (s1.queries(&name, AAAA), s2.queries(&name, AAAA));
            format!("{st} A {q1}/{q2} AAAA {a1}/{a2}")
        })
        .collect()
}

#[test]
fn name_servers_are_taken_in_turn_as_nginx() {
    let b = Backend::start();
    let (s1, s2) = (DnsServer::start(), DnsServer::start());
    for s in [&s1, &s2] {
        for tag in ["n", "r"] {
            for i in 0..4 {
                s.set(&format!("{tag}{i}.test"), Answer::a(&[LOCAL], 60));
            }
        }
    }
    let both = format!("{} {}", s1.addr(), s2.addr());
    let (_nginx, _rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &both, ""));
    let n = turns(np, &b, &s1, &s2, "n");
    let r = turns(rp, &b, &s1, &s2, "r");
    common::assert_same("turns", &n, &r);
    assert_eq!(n[0], "200 A 1/0 AAAA 1/0");
    assert_eq!(n[1], "200 A 0/1 AAAA 0/1");
}

/// The first name server never answers: after nginx's 5 s the queries go to the second.
#[test]
fn a_silent_server_is_left_for_the_next_after_five_seconds() {
    let b = Backend::start();
    let (s1, s2) = (DnsServer::start(), DnsServer::start());
    s1.set("late.test", Answer::silent());
    s2.set("late.test", Answer::a(&[LOCAL], 60));
    let both = format!("{} {}", s1.addr(), s2.addr());
    let (_nginx, _rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &both, ""));
    let story = |p: u16| {
        let t = Instant::now();
        let path = format!("/v/?h=late.test&p={}", b.port());
        let mut c = Client::connect(("127.0.0.1", p));
        let st = c
            .request("GET", &path, &[("Host", "localhost")], b"")
            .status;
        let secs = t.elapsed().as_secs_f64();
        format!("{st} after 5s: {}", (4.5..7.0).contains(&secs))
    };
    let n = story(np);
    let r = story(rp);
    common::assert_same("resend", std::slice::from_ref(&n), &[r]);
    assert_eq!(n, "200 after 5s: true");
    assert_eq!(s1.queries("late.test", A), 2);
    assert_eq!(s2.queries("late.test", A), 2);
}

/// Each `resolver` line takes its servers in turn on its own, as nginx's resolvers do.
#[test]
fn each_resolver_line_has_its_own_turns() {
    let b = Backend::start();
    let (s1, s2) = (DnsServer::start(), DnsServer::start());
    for s in [&s1, &s2] {
        for i in 0..6 {
            s.set(&format!("k{i}.test"), Answer::a(&[LOCAL], 60));
        }
    }
    let both = format!("{} {}", s1.addr(), s2.addr());
    let conf = |p: u16| {
        fill(
            r#"worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location /a/ {
            resolver {BOTH};
            proxy_pass http://$arg_h:$arg_p;
        }
        location /b/ {
            resolver {BOTH};
            proxy_pass http://$arg_h:$arg_p;
        }
    }
}
"#,
            &[("PORT", p.to_string()), ("BOTH", both.clone())],
        )
    };
    let (_nginx, _rf, np, rp) = common::nginx_and_ringfront(conf);
    let story = |p: u16, first: usize| {
        [("a", 0), ("b", 1), ("a", 2)]
            .iter()
            .map(|(loc, i)| {
                let name = format!("k{}.test", first + i);
                let path = format!("/{loc}/?h={name}&p={}", b.port());
                let mut c = Client::connect(("127.0.0.1", p));
                let st = c
                    .request("GET", &path, &[("Host", "localhost")], b"")
                    .status;
                format!(
                    "{st} {loc} at {}/{}",
                    s1.queries(&name, A),
                    s2.queries(&name, A)
                )
            })
            .collect::<Vec<_>>()
    };
    let n = story(np, 0);
    let r = story(rp, 3);
    common::assert_same("own turns", &n, &r);
    assert_eq!(n, ["200 a at 1/0", "200 b at 1/0", "200 a at 0/1"]);
}

/// The first name server answers after 6 s, when the queries have gone on to the second
/// (which never answers): its answer still counts, as nginx's.
#[test]
fn a_late_answer_from_an_earlier_server_counts() {
    let b = Backend::start();
    let (s1, s2) = (DnsServer::start(), DnsServer::start());
    s1.set(
        "late.test",
        Answer::a(&[LOCAL], 60).delayed(Duration::from_secs(6)),
    );
    s2.set("late.test", Answer::silent());
    let both = format!("{} {}", s1.addr(), s2.addr());
    let (_nginx, _rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &both, ""));
    let story = |p: u16| {
        let t = Instant::now();
        let path = format!("/v/?h=late.test&p={}", b.port());
        let mut c = Client::connect(("127.0.0.1", p));
        let st = c
            .request("GET", &path, &[("Host", "localhost")], b"")
            .status;
        let secs = t.elapsed().as_secs_f64();
        format!("{st} after 6s: {}", (5.5..8.0).contains(&secs))
    };
    let n = story(np);
    let r = story(rp);
    common::assert_same("late", std::slice::from_ref(&n), &[r]);
    assert_eq!(n, "200 after 6s: true");
}

/// `resolver` and `resolver_timeout` errors, as `nginx -t` words them.
#[test]
fn resolver_config_errors_match_nginx() {
    let cases = [
        "resolver;",
        "resolver valid=5x 127.0.0.1;",
        "resolver 127.0.0.1 ipv6=maybe;",
        "resolver 127.0.0.1:99999;",
        "resolver valid=5s;",
        "resolver 127.0.0.1; resolver 127.0.0.1;",
        "resolver_timeout 5x;",
        "resolver_timeout 1s; resolver_timeout 2s;",
    ];
    for case in cases {
        let conf = format!(
            "events {{}}\nhttp {{\n    {case}\n    server {{ listen 127.0.0.1:{}; }}\n}}\n",
            common::port()
        );
        let (status, out) = ringfront_testkit::Nginx::run_check(&conf);
        assert!(!status.success(), "{case}: nginx accepted it");
        let line = out
            .lines()
            .find_map(|l| l.split("[emerg] ").nth(1))
            .and_then(|l| l.split_once(": "))
            .map(|(_pid, msg)| msg)
            .unwrap_or_else(|| panic!("{case}: {out}"));
        let (msg, at) = line.rsplit_once(" in ").expect("nginx names the file");
        let line_no = at.rsplit(':').next().unwrap_or("");
        let host = ringfront_config::MemoryHost::new();
        let path = std::path::Path::new("/c/x.conf");
        let err = ringfront_config::parse_str(&conf, path, &host).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{msg} in /c/x.conf:{line_no}"),
            "{case}"
        );
    }
}
