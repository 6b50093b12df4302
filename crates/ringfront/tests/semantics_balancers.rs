//! The other balancers, differential against real nginx: `ip_hash` from many client
//! networks (client sockets bound to 127.a.b.c), `hash $request_uri [consistent]` over 1,000
//! keys (exact mapping; removing a server moves only its keys under `consistent`), failed
//! peers re-hashed, `least_conn` with requests in flight, and `random [two]` (invariants only:
//! never a down peer, shares roughly by weight).

mod common;

use std::collections::BTreeMap;

use common::{backends, differential, in_parallel, proxy_config, replay, servers, Run};
use ringfront_testkit::golden::{hash_keys, ip_hash_sources};
use ringfront_testkit::{Backend, Mode};

const FIVE: [&str; 5] = ["", "", "weight=2", "", ""];

fn config(bs: &[&Backend], params: &[&str], method: &str, loc: &str) -> impl Fn(u16) -> String {
    let srv = servers(bs, params);
    let method = method.to_string();
    let loc = loc.to_string();
    move |p| proxy_config(p, &srv, &method, &loc)
}

/// key -> serving backend, from `GET /k/N -> 200 bX` lines.
fn mapping(lines: &[String]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let (_, key, _, status, who) = (w.next()?, w.next()?, w.next()?, w.next()?, w.next()?);
            (status == "200").then(|| (key.to_string(), who.to_string()))
        })
        .collect()
}

#[test]
fn ip_hash_matches_nginx() {
    let bs = backends(4);
    let refs: Vec<&Backend> = bs.iter().collect();
    let sources = ip_hash_sources(300);
    assert!(sources.len() >= 300);
    let lines = differential(
        "ip_hash",
        &refs,
        1.0,
        config(&refs, &["", "", "weight=2", ""], "ip_hash;", ""),
        |run| {
            run.modes(&[Mode::Ok; 4]);
            for src in &sources {
                run.get_from(*src, "/");
            }
            run.counts("all up");
            // b1 refuses: its first client fails over (b1 out, max_fails=1), then every
            // client of b1 is re-hashed onto the others, the rest stay where they were.
            bs[1].set_mode(Mode::Refuse);
            for src in sources.iter().take(80) {
                run.get_from(*src, "/");
            }
            run.counts("b1 refusing");
        },
    );
    let used: std::collections::BTreeSet<_> = lines[..sources.len()]
        .iter()
        .map(|l| l.rsplit(' ').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(used.len(), 4, "every server gets some networks: {used:?}");
}

/// Runs the keys through `params`; returns (nginx, ringfront) lines.
fn keys(bs: &[&Backend], params: &[&str], method: &str, n: usize) -> (Vec<String>, Vec<String>) {
    let servers_of: Vec<&Backend> = bs
        .iter()
        .zip(params)
        .filter(|(_, p)| **p != "absent")
        .map(|(b, _)| *b)
        .collect();
    let params: Vec<&str> = params.iter().copied().filter(|p| *p != "absent").collect();
    replay(bs, 1.0, config(&servers_of, &params, method, ""), |run| {
        for k in hash_keys(n) {
            run.get(&k);
        }
        run.counts("end");
    })
}

#[test]
fn consistent_hash_matches_nginx_and_removing_a_server_moves_only_its_keys() {
    let bs = backends(5);
    let refs: Vec<&Backend> = bs.iter().collect();
    let method = "hash $request_uri consistent;";
    let (n5, r5) = keys(&refs, &FIVE, method, 1000);
    let (n4, r4) = keys(&refs, &["", "absent", "weight=2", "", ""], method, 1000);
    for (who, all, fewer) in [("nginx", &n5, &n4), ("ringfront", &r5, &r4)] {
        let (all, fewer) = (mapping(all), mapping(fewer));
        assert_eq!((all.len(), fewer.len()), (1000, 1000), "{who}");
        for (k, was) in &all {
            let now = &fewer[k];
            assert!(
                (was == "b1") == (was != now) && now != "b1",
                "{who}: key {k} moved {was} -> {now} when b1 was removed"
            );
        }
    }
    common::assert_same("hash consistent, 5 servers", &n5, &r5);
    common::assert_same("hash consistent, b1 removed", &n4, &r4);
}

#[test]
fn hash_and_rehash_match_nginx() {
    in_parallel(vec![
        (
            "hash $request_uri",
            Box::new(|| {
                let bs = backends(5);
                let refs: Vec<&Backend> = bs.iter().collect();
                let (n, r) = keys(&refs, &FIVE, "hash $request_uri;", 1000);
                common::assert_same("hash $request_uri", &n, &r);
            }),
        ),
        (
            // A refusing server: its keys fail over (re-hash with the attempt number mixed
            // into crc32, then round robin after 20), the others' keys stay.
            "hash with a refusing server",
            Box::new(|| rehash("hash $request_uri;")),
        ),
        (
            "consistent hash with a refusing server",
            Box::new(|| rehash("hash $request_uri consistent;")),
        ),
    ]);
}

fn rehash(method: &str) {
    let bs = backends(5);
    let refs: Vec<&Backend> = bs.iter().collect();
    differential(
        method,
        &refs,
        1.0,
        config(&refs, &FIVE, method, ""),
        |run| {
            run.modes(&[Mode::Ok, Mode::Refuse, Mode::Ok, Mode::Ok, Mode::Ok]);
            for k in hash_keys(150) {
                run.get(&k);
            }
            run.counts("b1 refusing");
        },
    );
}

#[test]
fn least_conn_matches_nginx() {
    let bs = backends(3);
    let refs: Vec<&Backend> = bs.iter().collect();
    differential(
        "least_conn",
        &refs,
        1.0,
        config(&refs, &["", "", "weight=2"], "least_conn;", ""),
        |run| {
            run.modes(&[Mode::Ok; 3]);
            for _ in 0..4 {
                run.get("/");
            }
            // Two slow requests in flight (each one's peer known before the next starts), then
            // quick ones pick by conns/weight around them.
            let a = run.spawn("/?sleep=2");
            run.wait_total_hits(5);
            let b = run.spawn("/?sleep=2");
            run.wait_total_hits(6);
            let c = run.spawn("/?sleep=2");
            run.wait_total_hits(7);
            for _ in 0..5 {
                run.get("/");
            }
            run.counts("three in flight");
            for p in [a, b, c] {
                run.join(p);
            }
            for _ in 0..4 {
                run.get("/");
            }
            run.counts("end");
        },
    );
}

#[test]
fn random_keeps_nginx_invariants() {
    in_parallel(vec![
        ("random", Box::new(|| random("random;"))),
        ("random two", Box::new(|| random("random two;"))),
        (
            "random two least_conn",
            Box::new(|| random("random two least_conn;")),
        ),
    ]);
}

/// b2 is `down`; weights 1,3,-,1. Neither proxy may send anything to b2, and each peer's
/// share of 400 sequential requests must be within 4 standard deviations of nginx's
/// distribution: weight/total for `random`; for `two`, nginx draws two different peers by
/// weight and, connection counts being equal (all 0 between sequential requests), keeps the
/// second, so P(y) = sum over x != y of w_x/W * w_y/(W - w_x).
fn random(method: &str) {
    let bs = backends(4);
    let refs: Vec<&Backend> = bs.iter().collect();
    let (n, r) = replay(
        &refs,
        1.0,
        config(&refs, &["", "weight=3", "down", ""], method, ""),
        |run: &mut Run| {
            for _ in 0..400 {
                run.get("/");
            }
            run.counts("end");
        },
    );
    let w = [(0, 1.0), (1, 3.0), (3, 1.0)];
    let total: f64 = w.iter().map(|(_, w)| w).sum();
    let share = |y: usize| -> f64 {
        let wy = w.iter().find(|(i, _)| *i == y).unwrap().1;
        if !method.contains("two") {
            return wy / total;
        }
        w.iter()
            .filter(|(x, _)| *x != y)
            .map(|(_, wx)| wx / total * wy / (total - wx))
            .sum()
    };
    for (who, lines) in [("nginx", n), ("ringfront", r)] {
        let count = |b: &str| {
            lines
                .iter()
                .filter(|l| l.ends_with(&format!(" 200 {b} ~0s")))
                .count()
        };
        let got = [count("b0"), count("b1"), count("b2"), count("b3")];
        assert_eq!(got.iter().sum::<usize>(), 400, "{who} {method}: {got:?}");
        assert_eq!(got[2], 0, "{who} {method}: the down peer was used");
        for i in [0, 1, 3] {
            let p = share(i);
            let sd = (400.0 * p * (1.0 - p)).sqrt();
            let dev = (got[i] as f64 - 400.0 * p).abs();
            assert!(
                dev <= 4.0 * sd,
                "{who} {method}: b{i} got {} of 400, expected {:.0} ({got:?})",
                got[i],
                400.0 * p
            );
        }
    }
}

/// The golden traces of `crates/ringfront-upstream/tests/golden/` (recorded from nginx on
/// fixed ports 19801-19805, whose addresses are part of the hash) replayed live: nginx still
/// produces them, and ringfront reproduces them exactly.
#[test]
fn ringfront_reproduces_the_golden_traces() {
    use ringfront_testkit::{golden, Nginx, Ringfront};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ringfront-upstream/tests/golden");
    let _bs = golden::golden_backends(&[19801, 19802, 19803, 19804, 19805]);
    let mut failures = Vec::new();
    for name in [
        "ip_hash.txt",
        "hash.txt",
        "hash_consistent.txt",
        "hash_consistent_minus_one.txt",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let trace = golden::parse_trace(&text);
        let requests = golden::requests_of(&trace);
        let want: Vec<&str> = trace.pairs.iter().map(|(_, s)| s.as_str()).collect();
        for proxy in ["nginx", "ringfront"] {
            let p = common::port();
            let conf = golden::config(&trace.upstream, p);
            let got = if proxy == "nginx" {
                let _n = Nginx::start(&conf, p);
                golden::ask(([127, 0, 0, 1], p).into(), &requests)
            } else {
                let _r = Ringfront::start(&conf);
                golden::ask(([127, 0, 0, 1], p).into(), &requests)
            };
            let wrong: Vec<String> = (0..want.len())
                .filter(|i| got[*i] != want[*i])
                .map(|i| format!("{} -> {} (golden {})", trace.pairs[i].0, got[i], want[i]))
                .collect();
            if !wrong.is_empty() {
                failures.push(format!(
                    "{proxy} {name}: {} of {} differ, e.g. {:?}",
                    wrong.len(),
                    want.len(),
                    &wrong[..wrong.len().min(5)]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
