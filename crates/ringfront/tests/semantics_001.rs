//! Article 001 (health check in depth), differential against real nginx: two backends whose
//! port is open but which do not answer while they warm their caches (Mode::Hang),
//! `max_fails=1 fail_timeout=3s`, `proxy_connect_timeout 1; proxy_read_timeout 1;`.
//! The first request tries both and gets 504; the next gets 502 "no live upstreams" (and
//! `$upstream_addr` is the group name); after fail_timeout real traffic goes to the peer
//! again, recovered or not ("delayed blocking"); one server recovers before the other.
//!
//! These scenarios wait on the clock: sleeping out fail_timeout *is* the behaviour under
//! test, not synchronisation. nginx keeps `checked` in whole seconds and lets a peer back when
//! `now - checked > fail_timeout`, i.e. 3-4 s after its failure for fail_timeout=3s, so the
//! scenarios wait 4.5 s: well outside that window on both proxies.

mod common;

use std::time::Duration;

use common::{backends, differential, in_parallel, proxy_config, servers, with_upstream_log, Run};
use ringfront_testkit::{Backend, Mode};

const QUIET: Duration = Duration::from_millis(4500);

fn article_001(what: &str, scenario: impl Fn(&mut Run, &[Backend])) {
    let bs = backends(2);
    let refs: Vec<&Backend> = bs.iter().collect();
    let srv = servers(&refs, &["max_fails=1 fail_timeout=3s"; 2]);
    let loc = "proxy_connect_timeout 1; proxy_read_timeout 1;";
    let lines = differential(
        what,
        &refs,
        1.0,
        |p| with_upstream_log(proxy_config(p, &srv, "", loc), p),
        |run| {
            run.modes(&[Mode::Hang, Mode::Hang]);
            scenario(run, &bs);
        },
    );
    // The article's observation itself, on nginx: 504 first, then no live upstreams.
    assert!(lines[0].starts_with("GET / -> 504 - ~2s"), "{lines:?}");
    assert!(lines[1].starts_with("GET / -> 502 - ~0s"), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("log: \"GET ") && l.ends_with(r#" 502 "backend" "502""#)),
        "{lines:?}"
    );
}

#[test]
fn article_001_warming_servers_match_nginx() {
    in_parallel(vec![
        (
            // Neither recovers: after the quiet period a real request tries both again
            // (504 after two 1 s timeouts), and the group is out again.
            "delayed blocking",
            Box::new(|| {
                article_001("warming servers that never recover", |run, _| {
                    run.get("/");
                    run.get("/");
                    run.counts("warming");
                    std::thread::sleep(QUIET);
                    run.get("/");
                    run.get("/");
                    run.counts("after the quiet period");
                    run.access_log(4);
                })
            }),
        ),
        (
            // b0 recovers first: after the quiet period it serves; hung b1 is probed by a real
            // request each time its quiet period ends (1 s extra for that request), until it
            // recovers too and both share the load again.
            "one recovers before the other",
            Box::new(|| {
                article_001("b0 recovers before b1", |run, bs| {
                    run.get("/");
                    run.get("/");
                    run.counts("warming");
                    bs[0].set_mode(Mode::Ok);
                    std::thread::sleep(QUIET);
                    for _ in 0..3 {
                        run.get("/");
                    }
                    run.counts("b0 recovered");
                    std::thread::sleep(QUIET);
                    for _ in 0..3 {
                        run.get("/");
                    }
                    run.counts("b1 probed again");
                    bs[1].set_mode(Mode::Ok);
                    std::thread::sleep(QUIET);
                    for _ in 0..4 {
                        run.get("/");
                    }
                    run.counts("both recovered");
                    run.access_log(12);
                })
            }),
        ),
    ]);
}
