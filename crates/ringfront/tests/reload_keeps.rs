//! A reload keeps what belongs to peers that survive it: their idle keepalive connections
//! and their passive failure state (the same board entry), while new peers start fresh.

mod common;

use std::time::Duration;

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{http, Backend, Mode, Ringfront, SIGHUP};

const WAIT: Duration = Duration::from_secs(10);

fn reload(rf: &Ringfront, cfg: &str, generation: u64) {
    rf.write_config(cfg);
    rf.signal(SIGHUP);
    let line = format!("reconfigured (generation {generation})");
    assert!(rf.wait_for_stderr(&line, WAIT), "{:?}", rf.stderr_lines());
}

#[test]
fn keepalive_connections_to_surviving_peers_are_reused_after_reload() {
    let b = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&b)], "keepalive 8;", common::REUSE);
    let rf = Ringfront::start(&cfg);
    let mut c = http::Client::connect(("127.0.0.1", p));
    assert_eq!(c.request("GET", "/", &[], b"").status, 200);
    assert_eq!(b.accepted(), 1);
    // Same peers, one more location: the new generation is visibly in use afterwards.
    let cfg2 = cfg.replace(
        "        location / {",
        "        location = /gen { return 200 \"two\"; }\n        location / {",
    );
    reload(&rf, &cfg2, 2);
    drop(c);
    // A new client connection runs on the new generation (an open one keeps the old, as
    // an nginx connection stays with its old worker).
    let mut c = http::Client::connect(("127.0.0.1", p));
    let r = c.request("GET", "/gen", &[], b"");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"two"[..]));
    for _ in 0..3 {
        assert_eq!(c.request("GET", "/", &[], b"").status, 200);
    }
    assert_eq!(b.hits(), 4);
    assert_eq!(
        b.accepted(),
        1,
        "the pooled upstream connection was dropped by the reload"
    );
}

#[test]
fn failure_state_survives_reload_and_new_peers_start_fresh() {
    let (bad, good, added) = (Backend::start(), Backend::start(), Backend::start());
    bad.set_mode(Mode::Close);
    let p = port();
    let servers = [
        format!("{} max_fails=1 fail_timeout=60s", addr(&bad)),
        addr(&good),
    ];
    let cfg = proxy_config(p, &servers, "", "");
    let rf = Ringfront::start(&cfg);
    // One failure takes the bad peer out for 60 s.
    for _ in 0..4 {
        assert_eq!(served_by(&http::get(("127.0.0.1", p), "/")), good.port());
    }
    assert_eq!(bad.accepted(), 1);
    let mut more = servers.to_vec();
    more.push(addr(&added));
    reload(&rf, &proxy_config(p, &more, "", ""), 2);
    // Still out after the reload (nginx would forget it); the new peer takes traffic.
    let mut by = std::collections::HashMap::new();
    for _ in 0..10 {
        *by.entry(served_by(&http::get(("127.0.0.1", p), "/")))
            .or_insert(0) += 1;
    }
    assert_eq!(bad.accepted(), 1, "a reload must not forget the failure");
    assert_eq!(by.get(&good.port()), Some(&5), "{by:?}");
    assert_eq!(by.get(&added.port()), Some(&5), "{by:?}");
}
