//! `random` and `random two`.

use super::*;
use crate::testutil::{peer, topo_with, Bench, NO_KEY};
use crate::*;

fn group(two: bool, weights: &[u32]) -> Bench {
    let peers = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| peer(9001 + i as u16, w))
        .collect();
    Bench::new(topo_with(
        Balancer::Random {
            two,
            least_conn: false,
        },
        peers,
        vec![],
    ))
}

#[test]
fn weighted_draws() {
    let mut g = group(false, &[1, 3]);
    let mut n = [0u32; 2];
    for _ in 0..8000 {
        n[g.pick(&NO_KEY, 0).unwrap()] += 1;
    }
    // Expect 2000 / 6000.
    assert!((1700..2300).contains(&n[0]), "{n:?}");
}

#[test]
fn same_seed_same_sequence() {
    let mut a = group(false, &[1, 1, 1, 1]);
    let mut b = group(false, &[1, 1, 1, 1]);
    let sa: Vec<_> = (0..50).map(|_| a.pick(&NO_KEY, 0)).collect();
    let sb: Vec<_> = (0..50).map(|_| b.pick(&NO_KEY, 0)).collect();
    assert_eq!(sa, sb);
    b.ws = WorkerPeers::new(&b.t, 99);
    let sc: Vec<_> = (0..50).map(|_| b.pick(&NO_KEY, 0)).collect();
    assert_ne!(sa, sc);
}

#[test]
fn skips_unusable_and_falls_back_to_round_robin() {
    let mut g = group(false, &[1, 1, 1]);
    g.fail(0, 0);
    g.fail(1, 0);
    for _ in 0..50 {
        assert_eq!(g.pick(&NO_KEY, 0), Some(2));
    }
    g.fail(2, 0);
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::NoLive);
    assert_eq!(at.bal.tries, 21);
}

#[test]
fn two_keeps_the_less_busy() {
    let mut g = group(true, &[1, 1]);
    for _ in 0..3 {
        g.b.get(0).unwrap().acquire();
    }
    // With two peers both always get drawn: the idle one wins every time.
    for _ in 0..50 {
        assert_eq!(g.pick(&NO_KEY, 0), Some(1));
    }
    // A tie goes to the second draw; both peers get picked.
    let mut g = group(true, &[1, 1]);
    let seen: Vec<_> = (0..50).map(|_| g.pick(&NO_KEY, 0).unwrap()).collect();
    assert!(seen.contains(&0) && seen.contains(&1));
}

#[test]
fn two_with_one_usable_peer_spends_its_draws_then_round_robin() {
    let mut g = group(true, &[1, 1, 1]);
    g.fail(0, 0);
    g.fail(1, 0);
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::Peer(2));
    assert_eq!(at.bal.tries, 21);
}

#[test]
fn retry_never_repeats_a_peer() {
    let mut g = group(true, &[1, 1, 1]);
    let mut at = g.attempt();
    let mut seen = vec![];
    while let Selection::Peer(id) = g.select(&mut at, &NO_KEY, 0) {
        assert!(!seen.contains(&id));
        seen.push(id);
        g.free(&mut at, true, 0);
        if at.tries == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 3);
}
