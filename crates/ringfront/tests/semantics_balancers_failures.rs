//! The other balancers when peers fail, differential against real nginx: `hash` and
//! `ip_hash` re-hashing past failed, `down` and tried peers (and falling back to round robin
//! after 20 re-hashes), `least_conn` around a failing peer, `random` failing a peer out,
//! `max_conns` with `hash`, and which methods nginx refuses to combine with `backup`.

mod common;

use common::{backends, differential, in_parallel, port, proxy_config, servers, Run};
use ringfront_testkit::golden::{hash_keys, ip_hash_sources};
use ringfront_testkit::{Backend, Mode, Nginx, Ringfront};

use Mode::{Close, Ok, Refuse};

/// Fresh backends in `modes` under `method`; replays `run` through both proxies.
fn scenario(what: &str, modes: &[Mode], params: &[&str], method: &str, run: impl Fn(&mut Run)) {
    let bs = backends(modes.len());
    let refs: Vec<&Backend> = bs.iter().collect();
    let srv = servers(&refs, params);
    differential(
        what,
        &refs,
        1.0,
        |p| proxy_config(p, &srv, method, ""),
        |r| {
            r.modes(modes);
            run(r);
        },
    );
}

fn keys(run: &mut Run, n: usize) {
    for k in hash_keys(n) {
        run.get(&k);
    }
    run.counts("end");
}

#[test]
fn hash_and_ip_hash_past_failed_peers_match_nginx() {
    // Three of five peers failing: many keys need several re-hashes, some more than 20
    // (then nginx falls back to round robin). Close mode (not Refuse) so every attempt shows
    // in the counts; max_fails=0 on b3 so it stays selectable and keeps failing.
    let modes = [Close, Ok, Close, Close, Ok];
    let params = ["", "", "weight=2", "max_fails=0", ""];
    in_parallel(vec![
        (
            "hash",
            Box::new(move || {
                scenario(
                    "hash, 3 of 5 failing",
                    &modes,
                    &params,
                    "hash $request_uri;",
                    |r| keys(r, 120),
                )
            }),
        ),
        (
            "hash consistent",
            Box::new(move || {
                let m = "hash $request_uri consistent;";
                scenario("consistent hash, 3 of 5 failing", &modes, &params, m, |r| {
                    keys(r, 120)
                })
            }),
        ),
        (
            "ip_hash",
            Box::new(|| {
                let modes = [Close, Ok, Ok, Close, Ok];
                let params = ["", "down", "weight=2", "max_fails=0", ""];
                scenario(
                    "ip_hash, down + failing",
                    &modes,
                    &params,
                    "ip_hash;",
                    |run| {
                        for src in ip_hash_sources(120).iter().take(120) {
                            run.get_from(*src, "/");
                        }
                        run.counts("end");
                    },
                )
            }),
        ),
        (
            "hash, max_conns=1",
            Box::new(|| {
                // Same key twice at once: the second finds its peer at max_conns and is
                // re-hashed elsewhere.
                let params = ["max_conns=1"; 3];
                scenario(
                    "hash max_conns",
                    &[Ok, Ok, Ok],
                    &params,
                    "hash $request_uri;",
                    |run| {
                        for (i, k) in ["/k/1", "/k/2", "/k/3"].iter().enumerate() {
                            let slow = format!("{k}?sleep=1");
                            let first = run.spawn(&slow);
                            run.wait_total_hits(2 * i + 1);
                            let second = run.spawn(&slow);
                            run.wait_total_hits(2 * i + 2);
                            run.join(first);
                            run.join(second);
                        }
                        run.counts("end");
                    },
                )
            }),
        ),
    ]);
}

#[test]
fn least_conn_and_random_around_failing_peers_match_nginx() {
    in_parallel(vec![
        (
            // b1 closes (max_fails=1: out after one failure), b3 closes with max_fails=0
            // (tried whenever least_conn picks it).
            "least_conn",
            Box::new(|| {
                let params = ["", "", "weight=2", "max_fails=0"];
                scenario(
                    "least_conn, failing",
                    &[Ok, Close, Ok, Close],
                    &params,
                    "least_conn;",
                    |run| {
                        for _ in 0..12 {
                            run.get("/");
                        }
                        run.counts("end");
                    },
                )
            }),
        ),
        (
            // random: order differs by design; compare what is deterministic: every request
            // succeeds, and the closing peer (max_fails=1, fail_timeout=30s) gets exactly one
            // attempt before it is out.
            "random",
            Box::new(|| {
                let bs = backends(3);
                let refs: Vec<&Backend> = bs.iter().collect();
                let srv = servers(&refs, &["", "fail_timeout=30s", ""]);
                let (n, r) = common::replay(
                    &refs,
                    1.0,
                    |p| proxy_config(p, &srv, "random two;", ""),
                    |run| {
                        run.modes(&[Ok, Close, Ok]);
                        let mut ok = 0;
                        for _ in 0..100 {
                            ok += usize::from(run.get("/").is_some_and(|r| r.status == 200));
                        }
                        run.lines.clear();
                        run.note(format!("200s: {ok}, attempts on b1: {}", bs[1].hits()));
                    },
                );
                common::assert_same("random two, a closing peer", &n, &r);
                assert_eq!(n, ["200s: 100, attempts on b1: 1"]);
            }),
        ),
    ]);
}

/// `backup` with hash, ip_hash or random is a configuration error in nginx ("balancing
/// method does not support parameter \"backup\"") when the method comes first; nginx 1.22
/// accepts it when the method follows the `server ... backup` line. least_conn allows backup.
#[test]
fn backup_with_hashing_methods_is_checked_like_nginx() {
    let bs = backends(2);
    let refs: Vec<&Backend> = bs.iter().collect();
    let srv = servers(&refs, &["", "backup"]);
    let methods = [
        "ip_hash;",
        "hash $request_uri;",
        "hash $request_uri consistent;",
        "random;",
    ];
    for method in methods.iter().chain(&["least_conn;", ""]) {
        let after = proxy_config(port(), &srv, method, "");
        let before = after.replacen(
            "upstream backend {\n",
            &format!("upstream backend {{\n{method}\n"),
            1,
        );
        let before = before.replacen(&format!("        {method}\n    }}"), "\n    }", 1);
        for (order, conf) in [("method first", before), ("method last", after)] {
            let (n, nout) = Nginx::run_check(&conf);
            let (r, rout) = Ringfront::run_check(&conf);
            assert_eq!(
                n.success(),
                r.success(),
                "{method:?} {order}: nginx -t {n}, ringfront -t {r}\n{conf}\nnginx: {nout}\nringfront: {rout}"
            );
            if order == "method first" && methods.contains(method) {
                assert!(!n.success(), "{method} first: {nout}");
            }
        }
    }
}

/// What nginx 1.22 does with such a backup (method after the servers): the hashing method
/// never picks it, but once no primary is left the method falls back to round robin after
/// 20 re-hashes, and nginx's round robin moves on to the backup list
/// (`ngx_http_upstream_init_round_robin` builds it whatever the method). For `random` the
/// first two phases' peers are random: only their statuses are compared there.
#[test]
fn backup_after_a_hashing_method_behaves_like_nginx() {
    let methods = [
        "ip_hash;",
        "hash $request_uri;",
        "hash $request_uri consistent;",
        "random;",
    ];
    let variants: Vec<(&str, common::Variant)> = methods
        .iter()
        .map(|m| {
            let f: common::Variant = Box::new(move || {
                scenario(m, &[Ok, Ok, Ok], &["", "", "backup"], m, |run| {
                    keys(run, 6);
                    run.modes(&[Refuse, Ok, Ok]);
                    keys(run, 6);
                    if m.starts_with("random") {
                        let all_ok = run
                            .lines
                            .iter()
                            .all(|l| l.contains(" 200 ") || l.starts_with("counts"));
                        run.lines.clear();
                        run.reset_counts();
                        run.note(format!("primaries, then b0 refusing: all 200: {all_ok}"));
                    }
                    run.modes(&[Refuse, Refuse, Ok]);
                    keys(run, 6);
                });
            });
            (*m, f)
        })
        .collect();
    in_parallel(variants);
}
