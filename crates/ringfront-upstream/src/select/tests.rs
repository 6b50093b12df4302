//! The `revive` policy and what `select`/`free` share across balancers.

use crate::testutil::{peer, Bench, NO_KEY};
use crate::*;

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
