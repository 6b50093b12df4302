//! `proxy_next_upstream_budget` (ringfront only; Envoy's retry budget): many concurrent
//! requests to a tier whose backends all fail. Without a budget — nginx's behaviour, checked
//! against real nginx — every request tries every peer; with one, the retries stay within
//! the budget and the rest get the failure as it was. Also, differentially: a 429, or a 503
//! with `Retry-After`, ejects no peer unless `proxy_next_upstream` lists it, as in nginx.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{backends, differential, proxy_config, servers, Run};
use ringfront_testkit::{http, Backend, Canned, Nginx, Response, Ringfront};

const N: usize = 40;
/// Each failing answer takes this long, so that the requests' tries overlap.
const FAILING: &str = "/?code=502&sleep=0.3";

fn failing_tier(p: u16, bs: &[Backend], location: &str, workers: u32) -> String {
    let refs: Vec<&Backend> = bs.iter().collect();
    let srv = servers(&refs, &["max_fails=0"; 3]);
    proxy_config(p, &srv, "", location).replacen(
        "worker_processes 1;",
        &format!("worker_processes {workers};"),
        1,
    )
}

/// `N` requests at once (released together); their responses.
fn burst(p: u16) -> Vec<Response> {
    let addr = SocketAddr::from(([127, 0, 0, 1], p));
    let start = std::sync::Arc::new(std::sync::Barrier::new(N));
    let threads: Vec<_> = (0..N)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                http::get(addr, FAILING)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn hits(bs: &[Backend]) -> usize {
    bs.iter().map(Backend::hits).sum()
}

const NEXT: &str = "proxy_next_upstream error timeout http_502;";

#[test]
fn without_a_budget_every_request_tries_every_peer_as_in_nginx() {
    let bs = backends(3);
    for proxy in ["nginx", "ringfront"] {
        let p = common::port();
        let conf = failing_tier(p, &bs, NEXT, 1);
        let guard: Box<dyn std::any::Any> = match proxy {
            "nginx" => Box::new(Nginx::start(&conf, p)),
            _ => Box::new(Ringfront::start(&conf)),
        };
        bs.iter().for_each(Backend::reset_hits);
        let rs = burst(p);
        assert!(rs.iter().all(|r| r.status == 502), "{proxy}");
        assert_eq!(hits(&bs), N * 3, "{proxy}: each request tried each peer");
        drop(guard);
    }
}

#[test]
fn with_a_budget_retries_stay_within_the_share() {
    let bs = backends(3);
    let p = common::port();
    let budget = "proxy_next_upstream_budget percent=20 min=3;";
    let rf = Ringfront::start(&failing_tier(p, &bs, &format!("{NEXT} {budget}"), 2));
    bs.iter().for_each(Backend::reset_hits);
    let rs = burst(p);
    // Every answer is a backend's own 502, relayed as it came (with its X-Backend).
    assert!(rs
        .iter()
        .all(|r| r.status == 502 && r.header("x-backend").is_some()));
    let total = hits(&bs);
    let share = N * 20 / 100;
    println!("hits with the budget: {total} for {N} requests");
    assert!(total > N, "the budget lets some retries through: {total}");
    // With the burst's requests all in flight together this is N + 20% + min (51); the
    // bound leaves room for a loaded machine that spreads them out, and is still far below
    // the 3 x N of no budget.
    assert!(
        total <= N + N / 2,
        "hits {total} for {N} requests (20% share: {share}, min 3)"
    );
    // One error-log line for the interval, whatever the number of refusals.
    let needle = "retry budget of upstream \"backend\" spent";
    assert!(rf.wait_for_stderr(needle, Duration::from_secs(5)));
    let lines = rf.stderr_lines();
    assert_eq!(lines.iter().filter(|l| l.contains(needle)).count(), 1);
}

#[test]
fn a_budget_of_zero_never_retries_and_off_turns_it_off() {
    let bs = backends(3);
    let p = common::port();
    let conf = failing_tier(
        p,
        &bs,
        &format!(
            "{NEXT} location /x {{ proxy_pass http://backend; proxy_next_upstream_budget off; }}"
        ),
        1,
    )
    .replacen(
        "http {\n",
        "http {\n    proxy_next_upstream_budget percent=0 min=0;\n",
        1,
    );
    let _rf = Ringfront::start(&conf);
    bs.iter().for_each(Backend::reset_hits);
    let r = http::get(("127.0.0.1", p), FAILING);
    assert_eq!(r.status, 502);
    assert_eq!(hits(&bs), 1, "inherited from http: no retry");
    bs.iter().for_each(Backend::reset_hits);
    let r = http::get(("127.0.0.1", p), "/x?code=502");
    assert_eq!(r.status, 502);
    assert_eq!(hits(&bs), 3, "off in the location: nginx's tries");
}

/// b0 answers `/busy` with 429 and `/later` with 503 + `Retry-After`; b1 with 200.
fn overload_scenario(next: &str) -> Vec<String> {
    let bs = backends(2);
    bs[0].set_route("/busy", Canned::status(429, "busy"));
    bs[0].set_route(
        "/later",
        Canned::status(503, "later").header("Retry-After", "1"),
    );
    let refs: Vec<&Backend> = bs.iter().collect();
    let srv = servers(&refs, &["max_fails=1 fail_timeout=30s"; 2]);
    differential(
        &format!("overload with {next:?}"),
        &refs,
        1.0,
        |p| proxy_config(p, &srv, "", next),
        |run: &mut Run| {
            for path in ["/busy", "/later"] {
                for _ in 0..6 {
                    run.get(path);
                }
            }
            run.counts("after");
        },
    )
}

#[test]
fn overload_answers_eject_nothing_unless_listed_as_in_nginx() {
    let lines = overload_scenario("");
    // Round robin kept sending to b0: its 429s and 503s were relayed, it was never out.
    assert_eq!(lines.iter().filter(|l| l.contains("-> 429 b0")).count(), 3);
    assert_eq!(lines.iter().filter(|l| l.contains("-> 503 b0")).count(), 3);
    let listed = overload_scenario("proxy_next_upstream error timeout http_429 http_503;");
    // Listed: the first 429 counts against b0 (max_fails=1) and moves on; b0 is out.
    assert!(listed.iter().all(|l| !l.contains(" b0 ")), "{listed:?}");
    assert!(
        listed
            .iter()
            .any(|l| l.contains("counts after: b0=1 b1=12")),
        "{listed:?}"
    );
}

#[test]
fn config_errors() {
    let cases = [
        (
            "proxy_next_upstream_budget percent=101;",
            "invalid parameter \"percent=101\"",
        ),
        (
            "proxy_next_upstream_budget percent=x;",
            "invalid parameter \"percent=x\"",
        ),
        (
            "proxy_next_upstream_budget min=3;",
            "\"proxy_next_upstream_budget\" directive needs \"percent=\"",
        ),
        (
            "proxy_next_upstream_budget percent=5 percent=6;",
            "invalid parameter \"percent=6\"",
        ),
        (
            "proxy_next_upstream_budget half;",
            "invalid parameter \"half\"",
        ),
        (
            "proxy_next_upstream_budget percent=5; proxy_next_upstream_budget off;",
            "\"proxy_next_upstream_budget\" directive is duplicate",
        ),
        (
            "proxy_next_upstream_budget percent=5 min=1 x=1;",
            "invalid number of arguments in \"proxy_next_upstream_budget\" directive",
        ),
    ];
    for (line, want) in cases {
        let conf = proxy_config(1, &["127.0.0.1:1".into()], "", line);
        let (status, out) = Ringfront::run_check(&conf);
        assert!(!status.success(), "{line}");
        assert!(
            out.contains(want) && out.contains("ringfront.conf:"),
            "{line}: {out}"
        );
    }
    let ok = proxy_config(
        1,
        &["127.0.0.1:1".into()],
        "",
        "proxy_next_upstream_budget percent=20;",
    );
    assert!(Ringfront::run_check(&ok).0.success());
}
