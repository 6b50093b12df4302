//! Article 003/004 (round robin), differential against real nginx: smooth weighted round
//! robin orders, `backup` (used only when no primary can be selected), `down`, `max_conns`
//! under concurrent slow requests, and the single-peer case (never failed out, never retried).

mod common;

use std::time::Duration;

use common::{backends, differential, in_parallel, proxy_config, servers, with_upstream_log, Run};
use ringfront_testkit::{Backend, Mode};

/// One upstream over fresh backends with `params` per server; returns nginx's lines.
fn scenario(
    what: &str,
    params: &[&str],
    upstream_extra: &str,
    location_extra: &str,
    run: impl Fn(&mut Run, &[Backend]),
) -> Vec<String> {
    let bs = backends(params.len());
    let refs: Vec<&Backend> = bs.iter().collect();
    let srv = servers(&refs, params);
    differential(
        what,
        &refs,
        1.0,
        |p| with_upstream_log(proxy_config(p, &srv, upstream_extra, location_extra), p),
        |r| run(r, &bs),
    )
}

fn served(lines: &[String]) -> String {
    lines
        .iter()
        .filter(|l| l.starts_with("GET / ->"))
        .map(|l| l.split(' ').nth(4).unwrap_or("?"))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn weighted_round_robin_orders_match_nginx() {
    in_parallel(vec![
        (
            "4,2,1",
            Box::new(|| weights(&[4, 2, 1], "b0,b1,b0,b2,b0,b1,b0")),
        ),
        ("1,1,3", Box::new(|| weights(&[1, 1, 3], "b2,b0,b2,b1,b2"))),
        (
            "5,1,1",
            Box::new(|| weights(&[5, 1, 1], "b0,b0,b1,b0,b2,b0,b0")),
        ),
    ]);
}

/// Two full cycles of the weights; nginx's first cycle must be `cycle` (article 003's table).
fn weights(w: &[u32], cycle: &str) {
    let params: Vec<String> = w.iter().map(|w| format!("weight={w}")).collect();
    let params: Vec<&str> = params.iter().map(String::as_str).collect();
    let total: u32 = w.iter().sum();
    let lines = scenario(&format!("weights {w:?}"), &params, "", "", |run, _| {
        for _ in 0..2 * total {
            run.get("/");
        }
        run.counts("two cycles");
        run.access_log(2 * total as usize);
    });
    assert_eq!(served(&lines), format!("{cycle},{cycle}"), "{lines:?}");
}

#[test]
fn backup_down_max_conns_single_peer_match_nginx() {
    in_parallel(vec![
        (
            // b2 is the backup: untouched while a primary can be selected, used once both
            // are failed out, left again when they are back after fail_timeout (1 s: back
            // 1-2 s after the failure in nginx's whole seconds; the scenario waits 2.5 s on
            // the clock, which is the behaviour under test).
            "backup",
            Box::new(|| {
                scenario(
                    "backup",
                    &["fail_timeout=1s", "fail_timeout=1s", "backup"],
                    "",
                    "",
                    |run, bs| {
                        run.modes(&[Mode::Ok, Mode::Ok, Mode::Ok]);
                        (0..4).for_each(|_| drop(run.get("/")));
                        run.counts("all up");
                        bs[0].set_mode(Mode::Refuse);
                        (0..3).for_each(|_| drop(run.get("/")));
                        bs[1].set_mode(Mode::Refuse);
                        (0..3).for_each(|_| drop(run.get("/")));
                        run.counts("primaries down");
                        bs[2].set_mode(Mode::Refuse);
                        (0..2).for_each(|_| drop(run.get("/")));
                        bs.iter().for_each(|b| b.set_mode(Mode::Ok));
                        std::thread::sleep(Duration::from_millis(2500));
                        (0..4).for_each(|_| drop(run.get("/")));
                        run.counts("primaries back");
                        run.access_log(16);
                    },
                );
            }),
        ),
        (
            // b1 is `down`: never contacted, not even when every other peer fails.
            "down",
            Box::new(|| {
                scenario(
                    "down",
                    &["max_fails=0", "down", "max_fails=0"],
                    "",
                    "",
                    |run, bs| {
                        run.modes(&[Mode::Ok, Mode::Ok, Mode::Ok]);
                        (0..4).for_each(|_| drop(run.get("/")));
                        bs[0].set_mode(Mode::Refuse);
                        bs[2].set_mode(Mode::Refuse);
                        (0..2).for_each(|_| drop(run.get("/")));
                        run.counts("end");
                        run.access_log(6);
                    },
                );
            }),
        ),
        (
            // max_conns=1: two slow requests occupy both peers; a third finds no live
            // upstream (502 at once); the backup variant sends it to the backup instead.
            "max_conns=1",
            Box::new(|| max_conns(&["max_conns=1", "max_conns=1"])),
        ),
        (
            "max_conns=1 with a backup",
            Box::new(|| max_conns(&["max_conns=1", "max_conns=1", "backup"])),
        ),
        (
            // One primary and a backup is not nginx's "single" case (init_round_robin clears
            // `single` when backups exist): the closing primary is failed out, requests go on
            // to the backup, and stay there after the primary is fixed (fail_timeout 10 s).
            "one primary and a backup",
            Box::new(|| {
                scenario(
                    "one primary + backup",
                    &["", "backup"],
                    "",
                    "",
                    |run, bs| {
                        run.modes(&[Mode::Close, Mode::Ok]);
                        (0..3).for_each(|_| drop(run.get("/")));
                        run.counts("primary closing");
                        bs[0].set_mode(Mode::Ok);
                        (0..2).for_each(|_| drop(run.get("/")));
                        run.counts("primary fixed");
                        run.access_log(5);
                    },
                );
            }),
        ),
        (
            // A single peer is never failed out and never retried: each request tries it
            // once (a closing backend: 502 each time, one hit each), and it serves at once
            // when it works again, max_fails=1 notwithstanding.
            "single peer",
            Box::new(|| {
                scenario(
                    "single peer",
                    &["max_fails=1 fail_timeout=30s"],
                    "",
                    "proxy_read_timeout 1;",
                    |run, bs| {
                        run.modes(&[Mode::Close]);
                        (0..3).for_each(|_| drop(run.get("/")));
                        run.counts("closing");
                        bs[0].set_mode(Mode::Hang);
                        (0..2).for_each(|_| drop(run.get("/")));
                        run.counts("hanging");
                        bs[0].set_mode(Mode::Ok);
                        (0..2).for_each(|_| drop(run.get("/")));
                        run.counts("ok");
                        run.access_log(7);
                    },
                );
            }),
        ),
    ]);
}

fn max_conns(params: &[&str]) {
    let n = params.len();
    scenario(
        &format!("max_conns {params:?}"),
        params,
        "",
        "",
        |run, _| {
            run.modes(&vec![Mode::Ok; n]);
            let first = run.spawn("/?sleep=2");
            run.wait_total_hits(1);
            let second = run.spawn("/?sleep=2");
            run.wait_total_hits(2);
            run.get("/");
            run.join(first);
            run.join(second);
            run.get("/");
            run.get("/");
            run.counts("end");
            run.access_log(5);
        },
    );
}
