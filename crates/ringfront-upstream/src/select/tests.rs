//! The `revive` policy and what `select`/`free` share across balancers.

use crate::testutil::{peer, Bench, NO_KEY};
use crate::*;
use std::sync::atomic::Ordering;

fn all() -> [Balancer; 8] {
    [
        Balancer::RoundRobin,
        Balancer::IpHash,
        Balancer::Hash { consistent: false },
        Balancer::Hash { consistent: true },
        Balancer::LeastConn,
        Balancer::Random {
            two: false,
            least_conn: false,
        },
        Balancer::Random {
            two: true,
            least_conn: true,
        },
        Balancer::LeastTime {
            last_byte: false,
            inflight: true,
        },
    ]
}

fn group(balancer: Balancer, revive: bool, primaries: u16, backups: u16) -> Bench {
    Bench::new(Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: (0..primaries).map(|i| peer(9001 + i, 1)).collect(),
        backup: (0..backups).map(|i| peer(9101 + i, 1)).collect(),
        balancer,
        revive,
    }]))
}

const KEY: RequestKey<'static> = RequestKey {
    client: Some(std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 1, 2, 3))),
    hash: b"/index.html",
};

#[test]
fn without_revive_all_failed_is_no_live() {
    for bal in all() {
        let mut g = group(bal, false, 3, 0);
        for id in 0..3 {
            g.fail(id, 0);
        }
        assert_eq!(g.pick(&KEY, 5), None, "{bal:?}");
    }
}

#[test]
fn revive_forgets_failures_once_per_request() {
    for bal in all() {
        let mut g = group(bal, true, 3, 1);
        for id in 0..4 {
            g.fail(id, 0);
        }
        let mut at = g.attempt();
        let Selection::Peer(id) = g.select(&mut at, &KEY, 5) else {
            panic!("{bal:?}: revive found nothing");
        };
        assert!(at.revived);
        // Primaries and backups alike lost their failures.
        assert!((0..4).all(|i| g.b.get(i).unwrap().fails() == 0), "{bal:?}");
        // Fail everything again: this request already revived once.
        g.free(&mut at, true, 5);
        for i in 0..4 {
            if i != id {
                g.fail(i, 5);
            }
        }
        assert_eq!(g.select(&mut at, &KEY, 5), Selection::NoLive, "{bal:?}");
    }
}

#[test]
fn conns_follow_select_and_free_for_every_balancer() {
    for bal in all() {
        let mut g = group(bal, false, 4, 0);
        let mut open = vec![];
        for _ in 0..3 {
            let mut at = g.attempt();
            let Selection::Peer(id) = g.select(&mut at, &KEY, 0) else {
                panic!("{bal:?}")
            };
            assert_eq!(at.current(), Some(id));
            open.push(at);
        }
        assert_eq!((0..4).map(|i| g.b.conns(i)).sum::<u32>(), 3, "{bal:?}");
        for at in &mut open {
            g.free(at, false, 0);
            // A second free of the same try does nothing.
            assert_eq!(g.free(at, true, 0), FreeOutcome::default());
        }
        assert_eq!((0..4).map(|i| g.b.conns(i)).sum::<u32>(), 0, "{bal:?}");
        assert!((0..4).all(|i| g.b.get(i).unwrap().fails() == 0));
    }
}

#[test]
fn max_conns_respected_by_every_balancer() {
    for bal in all() {
        let mut g = group(bal, false, 3, 0);
        let mut ps: Vec<_> = (0..3).map(|i| peer(9001 + i, 1)).collect();
        for p in &mut ps {
            p.max_conns = 1;
        }
        g.t = Topology::new(vec![UpstreamSpec {
            name: "b".into(),
            primary: ps,
            backup: vec![],
            balancer: bal,
            revive: false,
        }]);
        let mut open = vec![];
        for _ in 0..3 {
            let mut at = g.attempt();
            assert!(
                matches!(g.select(&mut at, &NO_KEY, 0), Selection::Peer(_)),
                "{bal:?}"
            );
            open.push(at);
        }
        let mut at = g.attempt();
        assert_eq!(g.select(&mut at, &KEY, 0), Selection::NoLive, "{bal:?}");
    }
}

#[test]
fn attempt_reset_reuses_and_starts_over() {
    let g = group(Balancer::IpHash, false, 100, 0);
    let mut at = g.attempt();
    at.tried.insert(70);
    at.bal.tries = 5;
    at.reset(&g.t, 0, 2);
    assert!(!at.tried.contains(70));
    assert_eq!(at.bal.tries, 0);
    assert_eq!(at.bal.hash, 89);
    assert_eq!(at.tries, 2);
}

#[test]
fn zero_weight_is_one() {
    let t = Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: vec![peer(1, 0), peer(2, 0)],
        balancer: Balancer::Hash { consistent: false },
        ..UpstreamSpec::default()
    }]);
    assert_eq!(t.upstreams[0].primary.total_weight, 2);
    let mut g = Bench::new(t);
    assert!(g.pick(&KEY, 0).is_some());
}

/// Picks `n` requests (each freed as a success) and counts them per peer id.
fn spread(b: &mut Bench, n: usize) -> Vec<usize> {
    let mut counts = vec![0; b.t.peer_count];
    for _ in 0..n {
        let mut at = b.attempt();
        if let Selection::Peer(id) = b.select(&mut at, &KEY, 100) {
            counts[id] += 1;
        }
        b.free(&mut at, false, 100);
    }
    counts
}

#[test]
fn a_peer_not_up_is_never_selected_by_any_balancer() {
    for bal in all() {
        for state in [DOWN, CHECKING] {
            let mut b = group(bal, false, 3, 0);
            b.b.get(1).unwrap().state.store(state, Ordering::Relaxed);
            let counts = spread(&mut b, 300);
            assert_eq!(counts[1], 0, "{bal:?} state {state}: {counts:?}");
            assert_eq!(counts.iter().sum::<usize>(), 300, "{bal:?}");
        }
    }
}

#[test]
fn a_single_peer_that_is_down_for_the_checker_is_not_selected() {
    let mut b = group(Balancer::RoundRobin, false, 1, 0);
    b.b.get(0).unwrap().state.store(DOWN, Ordering::Relaxed);
    let mut at = b.attempt();
    assert_eq!(b.select(&mut at, &KEY, 100), Selection::NoLive);
}

fn slow_group(balancer: Balancer, weights: &[u32], slow: &[u64]) -> Bench {
    Bench::new(Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: weights
            .iter()
            .zip(slow)
            .enumerate()
            .map(|(i, (&w, &s))| PeerSpec {
                slow_start_ms: s,
                ..peer(9001 + i as u16, w)
            })
            .collect(),
        backup: vec![],
        balancer,
        revive: false,
    }]))
}

#[test]
fn scaling_for_slow_start_keeps_nginx_sequence() {
    // Article 003's 5:1:1 order must not change when the group uses fixed-point weights.
    let order = |b: &mut Bench| -> Vec<usize> {
        (0..14)
            .map(|_| {
                let mut at = b.attempt();
                let Selection::Peer(id) = b.select(&mut at, &KEY, 100) else {
                    panic!("no peer")
                };
                b.free(&mut at, false, 100);
                id
            })
            .collect()
    };
    let mut plain = slow_group(Balancer::RoundRobin, &[5, 1, 1], &[0, 0, 0]);
    let mut scaled = slow_group(Balancer::RoundRobin, &[5, 1, 1], &[0, 0, 30_000]);
    assert_eq!(scaled.t.upstreams[0].primary.scale, SLOW_START_SCALE);
    assert_eq!(order(&mut plain), order(&mut scaled));
    assert_eq!(order(&mut plain)[..7], [0, 0, 1, 0, 2, 0, 0]);
}

#[test]
fn a_ramping_peer_gets_its_share_of_the_weight() {
    for bal in [Balancer::RoundRobin, Balancer::LeastConn] {
        let mut b = slow_group(bal, &[1, 1], &[10_000, 10_000]);
        // Peer 1 is at 10 % of its weight: 1 pick in 11.
        b.b.get(1).unwrap().ramp.store(100, Ordering::Relaxed);
        let counts = spread(&mut b, 1100);
        assert_eq!(counts, vec![1000, 100], "{bal:?}");
        // Full weight again: even shares.
        b.b.get(1).unwrap().ramp.store(1000, Ordering::Relaxed);
        let counts = spread(&mut b, 1000);
        assert!(counts[0].abs_diff(counts[1]) <= 2, "{bal:?} {counts:?}");
    }
}

#[test]
fn a_ramp_at_zero_still_leaves_the_peer_a_sliver() {
    let mut b = slow_group(Balancer::RoundRobin, &[1, 1], &[10_000, 10_000]);
    b.b.get(1).unwrap().ramp.store(0, Ordering::Relaxed);
    let counts = spread(&mut b, 2002);
    assert_eq!(counts, vec![2000, 2]);
}

#[test]
fn free_reports_the_end_of_a_failed_out_period() {
    let mut b = group(Balancer::RoundRobin, false, 2, 0);
    let mut at = b.attempt();
    let Selection::Peer(id) = b.select(&mut at, &KEY, 100) else {
        panic!("no peer")
    };
    assert!(b.free(&mut at, true, 100).disabled);
    // After fail_timeout (10 s) the peer is probed again and answers.
    loop {
        let mut at = b.attempt();
        let Selection::Peer(got) = b.select(&mut at, &KEY, 111) else {
            panic!("no peer")
        };
        let out = b.free(&mut at, false, 111);
        if got == id {
            assert!(out.recovered);
            break;
        }
        assert!(!out.recovered);
    }
    assert_eq!(b.b.get(id).unwrap().fails(), 0);
}

/// Only groups whose balancer or `max_conns` reads the shared count write it; every group
/// counts its active requests in the per-worker blocks that status pages read.
#[test]
fn the_shared_count_moves_only_where_something_reads_it() {
    let reads = |b: Balancer| {
        matches!(
            b,
            Balancer::LeastConn | Balancer::LeastTime { .. } | Balancer::Random { two: true, .. }
        )
    };
    for bal in all() {
        for max_conns in [0, 100] {
            let spec = UpstreamSpec {
                name: "b".into(),
                primary: (0..4)
                    .map(|i| PeerSpec {
                        max_conns,
                        ..peer(9001 + i, 1)
                    })
                    .collect(),
                backup: vec![],
                balancer: bal,
                revive: false,
            };
            let mut g = Bench::new(Topology::new(vec![spec]));
            let counted = reads(bal) || max_conns != 0;
            assert_eq!(
                g.t.upstreams[0].counts_conns, counted,
                "{bal:?} {max_conns}"
            );
            let mut open = vec![];
            for _ in 0..3 {
                let mut at = g.attempt();
                assert!(matches!(g.select(&mut at, &KEY, 0), Selection::Peer(_)));
                open.push(at);
            }
            let shared: u32 = (0..4).map(|i| g.b.balance_conns(i)).sum();
            let active: u32 = (0..4).map(|i| g.b.conns(i)).sum();
            assert_eq!(
                (shared, active),
                (if counted { 3 } else { 0 }, 3),
                "{bal:?}"
            );
            for at in &mut open {
                g.free(at, false, 0);
            }
            let shared: u32 = (0..4).map(|i| g.b.balance_conns(i)).sum();
            let active: u32 = (0..4).map(|i| g.b.conns(i)).sum();
            assert_eq!((shared, active), (0, 0), "{bal:?}");
        }
    }
}

/// Each worker thread writes its own block of a peer's counters; readers see the sum.
#[test]
fn counters_of_many_threads_add_up() {
    set_shards(4);
    let h = std::sync::Arc::new(PeerHealth::default());
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let h = h.clone();
            std::thread::spawn(move || {
                set_shard(i);
                for n in 0..1000u64 {
                    h.pick(false);
                    h.note_response(if n % 10 == 0 { 502 } else { 200 }, 7_000);
                    // Each thread leaves one request open.
                    if n != 0 {
                        h.unpick(false);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(h.requests(), 4000);
    assert_eq!(h.conns(), 4);
    assert_eq!(
        (h.responses(2), h.responses(5), h.responses(0)),
        (3600, 400, 0)
    );
    // 7 ms falls in the second bucket (5 ms < t <= 10 ms).
    assert_eq!(
        (h.rt_bucket(0), h.rt_bucket(1), h.rt_bucket(99)),
        (0, 4000, 0)
    );
    assert_eq!(h.rt_sum_us(), 4000 * 7_000);
    assert_eq!(h.balance_conns(), 0);
}
