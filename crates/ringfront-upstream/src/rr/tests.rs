//! Selection and feedback checked against nginx's documented sequences.

use crate::testutil::{peer, topo, NO_KEY};
use crate::*;

fn pick(t: &Topology, ws: &mut WorkerPeers, b: &Board, now: u64) -> Option<PeerId> {
    let mut at = Attempt::new(t, 0, 0);
    match select(t, ws, b, &mut at, &NO_KEY, now) {
        Selection::Peer(id) => {
            free(t, ws, b, &mut at, false, None, now);
            Some(id)
        }
        Selection::NoLive => None,
    }
}

#[test]
fn smooth_weighted_4_2_1() {
    let t = topo(vec![peer(1, 4), peer(2, 2), peer(3, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let seq: Vec<_> = (0..14).map(|_| pick(&t, &mut ws, &b, 0).unwrap()).collect();
    assert_eq!(seq, [0, 1, 0, 2, 0, 1, 0, 0, 1, 0, 2, 0, 1, 0]);
}

#[test]
fn failure_takes_peer_out_until_quiet_period_then_one_probe() {
    let t = topo(vec![peer(1, 1), peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(at.tries, 2);
    assert_eq!(
        select(&t, &mut ws, &b, &mut at, &NO_KEY, 100),
        Selection::Peer(0)
    );
    assert!(free(&t, &mut ws, &b, &mut at, true, None, 100).disabled);
    // Next try of the same request goes to the other peer.
    assert_eq!(
        select(&t, &mut ws, &b, &mut at, &NO_KEY, 100),
        Selection::Peer(1)
    );
    free(&t, &mut ws, &b, &mut at, false, None, 100);
    assert_eq!(at.tries, 0);
    // Within fail_timeout (10 s, inclusive) peer 0 is skipped.
    for now in [100, 105, 110] {
        assert_eq!(pick(&t, &mut ws, &b, now), Some(1));
    }
    // After it, exactly one request probes peer 0; while it is in flight others skip it.
    let mut probe = None;
    for _ in 0..4 {
        let mut at = Attempt::new(&t, 0, 0);
        match select(&t, &mut ws, &b, &mut at, &NO_KEY, 111) {
            Selection::Peer(0) => {
                probe = Some(at);
                break;
            }
            _ => {
                free(&t, &mut ws, &b, &mut at, false, None, 111);
            }
        }
    }
    let mut probe = probe.expect("peer 0 probed after its quiet period");
    for _ in 0..4 {
        assert_eq!(pick(&t, &mut ws, &b, 112), Some(1));
    }
    // The probe succeeds: failures are forgiven (accessed < checked).
    free(&t, &mut ws, &b, &mut probe, false, None, 112);
    assert_eq!(b.get(0).unwrap().fails(), 0);
}

#[test]
fn success_within_quiet_period_does_not_reset_fails() {
    let mut p = peer(1, 1);
    p.max_fails = 3;
    let t = topo(vec![p, peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let mut at = Attempt::new(&t, 0, 0);
    select(&t, &mut ws, &b, &mut at, &NO_KEY, 50);
    free(&t, &mut ws, &b, &mut at, true, None, 50);
    assert_eq!(b.get(0).unwrap().fails(), 1);
    // A success on peer 0 at the same second: accessed == checked, not forgiven.
    let mut at = Attempt::new(&t, 0, 0);
    loop {
        if select(&t, &mut ws, &b, &mut at, &NO_KEY, 50) == Selection::Peer(0) {
            break;
        }
        free(&t, &mut ws, &b, &mut at, false, None, 50);
        at = Attempt::new(&t, 0, 0);
    }
    free(&t, &mut ws, &b, &mut at, false, None, 50);
    assert_eq!(b.get(0).unwrap().fails(), 1);
}

#[test]
fn effective_weight_penalty_and_recovery() {
    let mut a = peer(1, 4);
    a.max_fails = 2;
    let t = topo(vec![a, peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(
        select(&t, &mut ws, &b, &mut at, &NO_KEY, 0),
        Selection::Peer(0)
    );
    free(&t, &mut ws, &b, &mut at, true, None, 0);
    // 4 - 4/2 = 2, then +1 on each selection pass that sees it.
    assert_eq!(ws.effective_weight(0), 2);
    pick(&t, &mut ws, &b, 0);
    assert_eq!(ws.effective_weight(0), 3);
    pick(&t, &mut ws, &b, 0);
    pick(&t, &mut ws, &b, 0);
    assert_eq!(ws.effective_weight(0), 4);
}

#[test]
fn max_fails_zero_never_fails_out() {
    let mut a = peer(1, 1);
    a.max_fails = 0;
    let t = topo(vec![a, peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    for _ in 0..5 {
        let mut at = Attempt::new(&t, 0, 0);
        while select(&t, &mut ws, &b, &mut at, &NO_KEY, 0) != Selection::Peer(0) {
            free(&t, &mut ws, &b, &mut at, false, None, 0);
            at = Attempt::new(&t, 0, 0);
        }
        free(&t, &mut ws, &b, &mut at, true, None, 0);
    }
    assert_eq!(b.get(0).unwrap().fails(), 5);
    let seen: Vec<_> = (0..4).filter_map(|_| pick(&t, &mut ws, &b, 0)).collect();
    assert!(seen.contains(&0));
}

#[test]
fn single_peer_never_failed_out_and_never_retried() {
    let t = topo(vec![peer(1, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    for _ in 0..3 {
        let mut at = Attempt::new(&t, 0, 0);
        assert_eq!(
            select(&t, &mut ws, &b, &mut at, &NO_KEY, 0),
            Selection::Peer(0)
        );
        free(&t, &mut ws, &b, &mut at, true, None, 0);
        assert_eq!(at.tries, 0);
    }
    assert_eq!(b.get(0).unwrap().fails(), 0);
}

#[test]
fn single_down_peer_is_no_live() {
    let mut p = peer(1, 1);
    p.down = true;
    let t = topo(vec![p], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(
        select(&t, &mut ws, &b, &mut at, &NO_KEY, 0),
        Selection::NoLive
    );
}

#[test]
fn backups_only_when_no_primary_and_then_stay_on_backups() {
    let t = topo(vec![peer(1, 1), peer(2, 1)], vec![peer(3, 1), peer(4, 1)]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(at.tries, 4);
    let mut order = vec![];
    while let Selection::Peer(id) = select(&t, &mut ws, &b, &mut at, &NO_KEY, 0) {
        order.push(id);
        free(&t, &mut ws, &b, &mut at, true, None, 0);
        if at.tries == 0 {
            break;
        }
    }
    assert_eq!(order.len(), 4);
    assert!(order[..2].iter().all(|&i| i < 2));
    assert!(order[2..].iter().all(|&i| i >= 2));
    // Every peer is failed out now: no live upstreams.
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(
        select(&t, &mut ws, &b, &mut at, &NO_KEY, 1),
        Selection::NoLive
    );
}

#[test]
fn tries_cap_and_down_peers() {
    let mut d = peer(3, 1);
    d.down = true;
    let t = topo(vec![peer(1, 1), peer(2, 1), d], vec![]);
    assert_eq!(Attempt::new(&t, 0, 0).tries, 2);
    assert_eq!(Attempt::new(&t, 0, 1).tries, 1);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let seen: Vec<_> = (0..6).map(|_| pick(&t, &mut ws, &b, 0).unwrap()).collect();
    assert!(!seen.contains(&2));
}

#[test]
fn max_conns_skips_full_peer_across_workers() {
    let mut a = peer(1, 1);
    a.max_conns = 1;
    let t = topo(vec![a, peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    // Two workers share the board: worker 1 holds a request on peer 0.
    let mut w1 = WorkerPeers::new(&t, 1);
    let mut w2 = WorkerPeers::new(&t, 2);
    let mut held = Attempt::new(&t, 0, 0);
    assert_eq!(
        select(&t, &mut w1, &b, &mut held, &NO_KEY, 0),
        Selection::Peer(0)
    );
    assert_eq!(b.conns(0), 1);
    for _ in 0..4 {
        assert_eq!(pick(&t, &mut w2, &b, 0), Some(1));
    }
    free(&t, &mut w1, &b, &mut held, false, None, 0);
    assert_eq!(b.conns(0), 0);
    let seen: Vec<_> = (0..4).filter_map(|_| pick(&t, &mut w2, &b, 0)).collect();
    assert!(seen.contains(&0));
}

#[test]
fn max_conns_on_every_peer_is_no_live_and_backups_take_over() {
    let mut a = peer(1, 1);
    a.max_conns = 1;
    let t = topo(vec![a.clone()], vec![peer(9, 1)]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t, 1);
    let mut held = Attempt::new(&t, 0, 0);
    assert_eq!(
        select(&t, &mut ws, &b, &mut held, &NO_KEY, 0),
        Selection::Peer(0)
    );
    assert_eq!(pick(&t, &mut ws, &b, 0), Some(1));
    // Without backups a single full peer is "no live upstreams" (nginx's single path).
    let t = topo(vec![a], vec![]);
    let b = Board::new(t.peer_count);
    let mut held = Attempt::new(&t, 0, 0);
    assert_eq!(
        select(&t, &mut ws, &b, &mut held, &NO_KEY, 0),
        Selection::Peer(0)
    );
    assert_eq!(pick(&t, &mut ws, &b, 0), None);
}

#[test]
fn single_peer_ignores_failures_but_not_down_or_max_conns() {
    let mut p = peer(1, 1);
    p.max_conns = 2;
    let t = topo(vec![p], vec![]);
    let b = Board::new(t.peer_count);
    b.get(0)
        .unwrap()
        .fails
        .store(5, std::sync::atomic::Ordering::Relaxed);
    let mut ws = WorkerPeers::new(&t, 1);
    assert_eq!(pick(&t, &mut ws, &b, 0), Some(0));
}

#[test]
fn foreign_state_never_panics() {
    // A worker state and board built for another (smaller) topology.
    let small = topo(vec![peer(1, 1)], vec![]);
    let t = topo(vec![peer(1, 1), peer(2, 1), peer(3, 1)], vec![peer(4, 1)]);
    let b = Board::new(1);
    let mut ws = WorkerPeers::new(&small, 1);
    for _ in 0..3 {
        let _ = pick(&t, &mut ws, &b, 0);
    }
    let mut at = Attempt::new(&t, 5, 0);
    assert_eq!(at.tries, 0);
    assert_eq!(
        select(&t, &mut ws, &b, &mut at, &NO_KEY, 0),
        Selection::NoLive
    );
    let empty = Topology::new(vec![]);
    let mut at = Attempt::new(&empty, 0, 0);
    assert_eq!(
        select(&empty, &mut ws, &b, &mut at, &NO_KEY, 0),
        Selection::NoLive
    );
    assert_eq!(
        free(&empty, &mut ws, &b, &mut at, true, None, 0),
        FreeOutcome::default()
    );
}
