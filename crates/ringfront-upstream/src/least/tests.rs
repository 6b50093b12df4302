//! `least_conn` and `least_time` against nginx's rules.

use std::time::Duration;

use super::*;
use crate::testutil::{peer, topo_with, Bench, NO_KEY};
use crate::*;

fn group(balancer: Balancer, weights: &[u32], backups: usize) -> Bench {
    let peers = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| peer(9001 + i as u16, w))
        .collect();
    let backup = (0..backups).map(|i| peer(9101 + i as u16, 1)).collect();
    Bench::new(topo_with(balancer, peers, backup))
}

/// Open a request on the peer the balancer picks and keep it open.
fn hold(g: &mut Bench, now: u64) -> (Attempt, PeerId) {
    let mut at = g.attempt();
    match g.select(&mut at, &NO_KEY, now) {
        Selection::Peer(id) => (at, id),
        Selection::NoLive => panic!("no live upstreams"),
    }
}

#[test]
fn least_conn_prefers_fewest_per_weight() {
    let mut g = group(Balancer::LeastConn, &[1, 1, 1], 0);
    // All idle: the tie goes round robin, 0, 1, 2 while each stays open.
    let held: Vec<_> = (0..3).map(|_| hold(&mut g, 0)).collect();
    assert_eq!(held.iter().map(|h| h.1).collect::<Vec<_>>(), [0, 1, 2]);
    // Finish the request on peer 1: it is now the least loaded.
    let (mut at, _) = held.into_iter().nth(1).unwrap();
    g.free(&mut at, false, 0);
    assert_eq!(hold(&mut g, 0).1, 1);
}

#[test]
fn least_conn_weights_scale_the_count() {
    // Peer 1 has weight 3: with 2 active requests (2/3) it still beats 1 on peer 0 (1/1).
    let mut g = group(Balancer::LeastConn, &[1, 3], 0);
    g.b.get(0).unwrap().acquire();
    g.b.get(1).unwrap().acquire();
    g.b.get(1).unwrap().acquire();
    assert_eq!(hold(&mut g, 0).1, 1);
    // 3/3 == 1/1: a tie, broken by smooth weighted round robin (weight 3 wins first).
    assert_eq!(hold(&mut g, 0).1, 1);
}

#[test]
fn least_conn_tie_is_smooth_weighted_round_robin() {
    let mut g = group(Balancer::LeastConn, &[4, 2, 1], 0);
    // Each request finishes at once, so every pick is a full tie.
    let seq: Vec<_> = (0..7).map(|_| g.pick(&NO_KEY, 0).unwrap()).collect();
    assert_eq!(seq, [0, 1, 0, 2, 0, 1, 0]);
}

#[test]
fn least_conn_skips_tried_failed_down_full_then_backups() {
    let mut g = group(Balancer::LeastConn, &[1, 1], 1);
    let mut at = g.attempt();
    assert_eq!(at.tries, 3);
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::Peer(0));
    g.free(&mut at, true, 0);
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::Peer(1));
    g.free(&mut at, true, 0);
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::Peer(2));
    assert!(at.in_backup());
    g.free(&mut at, true, 0);
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::NoLive);
}

#[test]
fn least_conn_single_peer_is_round_robin() {
    let mut g = group(Balancer::LeastConn, &[1], 0);
    g.fail(0, 0);
    assert_eq!(g.pick(&NO_KEY, 0), Some(0));
}

#[test]
fn eta_buckets_and_cap() {
    let spec = peer(1, 1);
    let h = PeerHealth::default();
    // No sample: 0 ms -> first bucket, 20.
    assert_eq!(eta(&spec, &h, 0, false), 20);
    h.record_response_time(19_999);
    assert_eq!(eta(&spec, &h, 0, false), 20);
    let h = PeerHealth::default();
    h.record_response_time(20_000);
    assert_eq!(eta(&spec, &h, 0, false), 40);
    h.acquire();
    h.acquire();
    assert_eq!(eta(&spec, &h, 0, false), 120);
    let h = PeerHealth::default();
    h.record_response_time(9_000_000);
    assert_eq!(eta(&spec, &h, 0, false), 5000);
    // Idle for more than fail_timeout (10 s): 9000 ms >> (21 / 11 = 1) = 4500 -> 4520.
    assert_eq!(eta(&spec, &h, 21, false), 4520);
    // Idle long enough that the shift passes the word width: 0 -> 20.
    assert_eq!(eta(&spec, &h, u64::MAX, false), 20);
}

#[test]
fn ema_is_five_percent() {
    let h = PeerHealth::default();
    h.record_response_time(1000);
    assert_eq!(h.response_time_us(), 1000);
    h.record_response_time(3000);
    assert_eq!(h.response_time_us(), 1100);
    h.record_response_time(u64::MAX);
    assert!(h.response_time_us() > 1100);
}

#[test]
fn least_time_prefers_the_faster_peer() {
    let mut g = group(
        Balancer::LeastTime {
            last_byte: false,
            inflight: false,
        },
        &[1, 1],
        0,
    );
    // Teach it: peer 0 answers in 300 ms, peer 1 in 50 ms.
    for (id, ms) in [(0, 300), (1, 50)] {
        loop {
            let mut at = g.attempt();
            let Selection::Peer(got) = g.select(&mut at, &NO_KEY, 0) else {
                panic!("no peer")
            };
            let rt = (got == id).then(|| Duration::from_millis(ms));
            free(&g.t, &mut g.ws, &g.b, &mut at, false, rt, 0);
            if got == id {
                break;
            }
        }
    }
    assert_eq!(g.pick(&NO_KEY, 0), Some(1));
    // 60 ms * (1 + 5 active) = 360 > 320 * 1: peer 0 wins while peer 1 is that busy.
    for _ in 0..5 {
        g.b.get(1).unwrap().acquire();
    }
    assert_eq!(g.pick(&NO_KEY, 0), Some(0));
}

#[test]
fn least_time_failures_are_not_averaged() {
    let mut g = group(
        Balancer::LeastTime {
            last_byte: true,
            inflight: false,
        },
        &[1, 1],
        0,
    );
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &NO_KEY, 0), Selection::Peer(0));
    free(
        &g.t,
        &mut g.ws,
        &g.b,
        &mut at,
        true,
        Some(Duration::from_millis(5)),
        0,
    );
    assert_eq!(g.b.get(0).unwrap().response_time_us(), 0);
}

#[test]
fn least_time_inflight_counts_open_requests_age() {
    let lt = Balancer::LeastTime {
        last_byte: false,
        inflight: true,
    };
    let mut g = group(lt, &[1, 1], 0);
    // Both answered in 100 ms once.
    for id in 0..2 {
        g.b.get(id).unwrap().record_response_time(100_000);
    }
    // A request to peer 0 has been open since t=0; at t=3 it is 3 s old.
    let (mut stuck, id) = hold(&mut g, 0);
    assert_eq!(id, 0);
    assert_eq!(g.b.get(0).unwrap().inflight_age(3), Some(3));
    assert_eq!(
        eta(
            &g.t.upstreams[0].primary.peers[0],
            g.b.get(0).unwrap(),
            3,
            true
        ),
        6040
    );
    assert_eq!(g.pick(&NO_KEY, 3), Some(1));
    g.free(&mut stuck, false, 3);
    assert_eq!(g.b.get(0).unwrap().inflight_age(3), None);
}
