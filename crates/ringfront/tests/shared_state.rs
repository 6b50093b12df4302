//! Health and connection counts are shared by every worker (what nginx needs `zone` for):
//! one worker's failures take a peer out for all, and `max_conns` holds across workers.

mod common;

use std::time::Duration;

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{http, Backend, Mode, Ringfront};

#[test]
fn one_failure_takes_the_peer_out_for_every_worker() {
    // A backend that accepts and closes: each try is a failure ringfront can count.
    let (bad, good) = (Backend::start(), Backend::start());
    bad.set_mode(Mode::Close);
    let p = port();
    let cfg = proxy_config(
        p,
        &[
            format!("{} max_fails=1 fail_timeout=60s", addr(&bad)),
            addr(&good),
        ],
        "",
        "",
    )
    .replace("worker_processes 1;", "worker_processes 2;");
    let _rf = Ringfront::start(&cfg);
    // New connections spread over both workers (SO_REUSEPORT hashes the client port; all
    // 40 landing on one worker has probability 2^-39).
    for _ in 0..40 {
        let r = http::get(("127.0.0.1", p), "/");
        assert_eq!((r.status, served_by(&r)), (200, good.port()));
    }
    // nginx without `zone` would let each worker try the bad peer once: 2 attempts.
    assert_eq!(bad.accepted(), 1);
}

#[test]
fn max_conns_holds_across_workers() {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let cfg = proxy_config(
        p,
        &[
            format!("{} max_conns=1", addr(&a)),
            format!("{} max_conns=1", addr(&b)),
        ],
        "",
        "",
    )
    .replace("worker_processes 1;", "worker_processes 2;");
    let _rf = Ringfront::start(&cfg);
    // Two slow requests occupy both slots (whichever workers they land on); a third finds
    // no peer and gets 502 at once.
    let total = |n: usize| {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while a.hits() + b.hits() < n && std::time::Instant::now() < deadline {
            let _ = a.wait_hits(a.hits() + 1, Duration::from_millis(20));
        }
        a.hits() + b.hits() >= n
    };
    let first = std::thread::spawn(move || http::get(("127.0.0.1", p), "/?sleep=1").status);
    assert!(total(1));
    let second = std::thread::spawn(move || http::get(("127.0.0.1", p), "/?sleep=1").status);
    assert!(total(2));
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert_eq!((first.join().unwrap(), second.join().unwrap()), (200, 200));
    assert_eq!(a.hits(), 1);
    assert_eq!(b.hits(), 1);
    // Slots are free again once the responses are done.
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
}
