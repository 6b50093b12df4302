//! `all_failed reject | revive`: what happens when every peer of a group is failed out.

mod common;

use common::{addr, port, proxy_config};
use ringfront_testkit::{http, Backend, Mode, Ringfront};

fn run(policy: &str) -> (u16, u16, Ringfront) {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Close);
    b.set_mode(Mode::Close);
    let p = port();
    let rf = Ringfront::start(&proxy_config(
        p,
        &[
            format!("{} max_fails=1 fail_timeout=60s", addr(&a)),
            format!("{} max_fails=1 fail_timeout=60s", addr(&b)),
        ],
        &format!("all_failed {policy};"),
        "",
    ));
    // Both peers fail on the first request and are out for a minute.
    let first = http::get(("127.0.0.1", p), "/").status;
    a.set_mode(Mode::Ok);
    b.set_mode(Mode::Ok);
    let second = http::get(("127.0.0.1", p), "/").status;
    (first, second, rf)
}

#[test]
fn reject_is_nginx_no_live_upstreams() {
    let (first, second, rf) = run("reject");
    assert_eq!((first, second), (502, 502));
    assert!(rf.wait_for_stderr(
        "no live upstreams while connecting to upstream",
        std::time::Duration::from_secs(5)
    ));
}

#[test]
fn revive_resets_every_peer_and_tries_again() {
    let (first, second, rf) = run("revive");
    assert_eq!((first, second), (502, 200));
    assert!(!rf
        .stderr_lines()
        .iter()
        .any(|l| l.contains("no live upstreams")));
}
