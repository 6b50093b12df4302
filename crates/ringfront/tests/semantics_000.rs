//! Article 000 (health check and load balancing analysis), differential against real nginx:
//! four backends, two alive and two refusing, `proxy_read_timeout 2`, `?sleep=3` requests
//! (each slow request costs one 2 s timeout per live peer it reaches), under each
//! `proxy_next_upstream` setting of the article; then `max_fails=1` on one alive server, which
//! a slow *business* request takes out of rotation (the article's complaint).
//!
//! Compared per request: status, answering backend, elapsed time in whole seconds (which
//! timeouts it went through); per backend: requests received.

mod common;

use common::{backends, differential, in_parallel, proxy_config, servers, Run};
use ringfront_testkit::{Backend, Mode};

/// b0, b2 alive; b1, b3 refusing (article 000's 2 alive / 2 dead).
const MODES: [Mode; 4] = [Mode::Ok, Mode::Refuse, Mode::Ok, Mode::Refuse];

fn article_000(next: &str, params: [&str; 4], scenario: impl Fn(&mut Run)) {
    let bs = backends(4);
    let refs: Vec<&Backend> = bs.iter().collect();
    let loc = format!("proxy_next_upstream {next}; proxy_read_timeout 2;");
    let srv = servers(&refs, &params);
    differential(
        &format!("proxy_next_upstream {next}, servers {params:?}"),
        &refs,
        1.0,
        |p| proxy_config(p, &srv, "", &loc),
        |run| {
            run.modes(&MODES);
            scenario(run);
        },
    );
}

const NO_FAILS: [&str; 4] = ["max_fails=0"; 4];

#[test]
fn article_000_proxy_next_upstream_variants_match_nginx() {
    in_parallel(vec![
        (
            // A 3 s request costs two 2 s timeouts (b0, b2) and two refusals: ~4 s, then 502.
            "error timeout",
            Box::new(|| {
                article_000("error timeout", NO_FAILS, |run| {
                    for _ in 0..4 {
                        run.get("/?sleep=3");
                    }
                    run.counts("after 4 slow requests");
                })
            }),
        ),
        (
            // timeout not listed: the first timeout is final (504, ~2 s); refusals move on.
            "error",
            Box::new(|| {
                article_000("error", NO_FAILS, |run| {
                    for _ in 0..4 {
                        run.get("/?sleep=3");
                    }
                    run.get("/");
                    run.get("/");
                    run.counts("end");
                })
            }),
        ),
        (
            // A backend 504 is passed on; the last try is a refusal, so the client gets 502.
            "error http_504",
            Box::new(|| {
                article_000("error http_504", NO_FAILS, |run| {
                    for _ in 0..4 {
                        run.get("/?code=504");
                    }
                    run.get("/");
                    run.get("/?code=500");
                    run.counts("end");
                })
            }),
        ),
        (
            // No moving on at all: 504 / 502 / 504 / 502 as the round robin walks the peers.
            "off",
            Box::new(|| {
                article_000("off", NO_FAILS, |run| {
                    for _ in 0..4 {
                        run.get("/?sleep=3");
                    }
                    for _ in 0..4 {
                        run.get("/");
                    }
                    run.counts("end");
                })
            }),
        ),
        (
            // max_fails=1 on alive b0: one slow request (a timeout) takes the healthy b0 out
            // for fail_timeout (10 s); the second round never reaches it. max_fails=1 on
            // refusing b1 takes it out too; b3 (max_fails=0) is tried every time.
            "max_fails=1, two rounds",
            Box::new(|| {
                let params = ["max_fails=1", "max_fails=1", "max_fails=0", "max_fails=0"];
                article_000("error timeout", params, |run| {
                    run.get("/?sleep=3");
                    for _ in 0..3 {
                        run.get("/");
                    }
                    run.counts("round 1");
                    for _ in 0..4 {
                        run.get("/");
                    }
                    run.counts("round 2");
                })
            }),
        ),
        (
            // The same with the slow request last in round 1: round 2 skips b0 again.
            "max_fails=1 on alive b0, slow request last",
            Box::new(|| {
                let params = ["max_fails=1", "max_fails=0", "max_fails=0", "max_fails=0"];
                article_000("error timeout", params, |run| {
                    for _ in 0..3 {
                        run.get("/");
                    }
                    run.get("/?sleep=3");
                    run.counts("round 1");
                    for _ in 0..4 {
                        run.get("/");
                    }
                    run.counts("round 2");
                })
            }),
        ),
    ]);
}
