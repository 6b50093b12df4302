//! Selection and feedback checked against nginx's documented sequences.

use super::*;
use crate::topology::UpstreamSpec;

fn peer(port: u16, weight: u32) -> PeerSpec {
    PeerSpec {
        name: format!("127.0.0.1:{port}"),
        addr: ([127, 0, 0, 1], port).into(),
        weight,
        max_fails: 1,
        fail_timeout: 10,
        down: false,
    }
}

fn topo(primary: Vec<PeerSpec>, backup: Vec<PeerSpec>) -> Topology {
    Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary,
        backup,
    }])
}

fn pick(t: &Topology, ws: &mut WorkerPeers, b: &Board, now: u64) -> Option<PeerId> {
    let mut at = Attempt::new(t, 0, 0);
    match select(t, ws, b, &mut at, now) {
        Selection::Peer(id) => {
            free(t, ws, b, &mut at, false, now);
            Some(id)
        }
        Selection::NoLive => None,
    }
}

#[test]
fn smooth_weighted_4_2_1() {
    let t = topo(vec![peer(1, 4), peer(2, 2), peer(3, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    let seq: Vec<_> = (0..14).map(|_| pick(&t, &mut ws, &b, 0).unwrap()).collect();
    assert_eq!(seq, [0, 1, 0, 2, 0, 1, 0, 0, 1, 0, 2, 0, 1, 0]);
}

#[test]
fn failure_takes_peer_out_until_quiet_period_then_one_probe() {
    let t = topo(vec![peer(1, 1), peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(at.tries, 2);
    assert_eq!(select(&t, &mut ws, &b, &mut at, 100), Selection::Peer(0));
    assert!(free(&t, &mut ws, &b, &mut at, true, 100).disabled);
    // Next try of the same request goes to the other peer.
    assert_eq!(select(&t, &mut ws, &b, &mut at, 100), Selection::Peer(1));
    free(&t, &mut ws, &b, &mut at, false, 100);
    assert_eq!(at.tries, 0);
    // Within fail_timeout (10 s, inclusive) peer 0 is skipped.
    for now in [100, 105, 110] {
        assert_eq!(pick(&t, &mut ws, &b, now), Some(1));
    }
    // After it, exactly one request probes peer 0; while it is in flight others skip it.
    let mut probe = None;
    for _ in 0..4 {
        let mut at = Attempt::new(&t, 0, 0);
        match select(&t, &mut ws, &b, &mut at, 111) {
            Selection::Peer(0) => {
                probe = Some(at);
                break;
            }
            _ => {
                free(&t, &mut ws, &b, &mut at, false, 111);
            }
        }
    }
    let mut probe = probe.expect("peer 0 probed after its quiet period");
    for _ in 0..4 {
        assert_eq!(pick(&t, &mut ws, &b, 112), Some(1));
    }
    // The probe succeeds: failures are forgiven (accessed < checked).
    free(&t, &mut ws, &b, &mut probe, false, 112);
    assert_eq!(b.get(0).unwrap().fails(), 0);
}

#[test]
fn success_within_quiet_period_does_not_reset_fails() {
    let mut p = peer(1, 1);
    p.max_fails = 3;
    let t = topo(vec![p, peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    let mut at = Attempt::new(&t, 0, 0);
    select(&t, &mut ws, &b, &mut at, 50);
    free(&t, &mut ws, &b, &mut at, true, 50);
    assert_eq!(b.get(0).unwrap().fails(), 1);
    // A success on peer 0 at the same second: accessed == checked, not forgiven.
    let mut at = Attempt::new(&t, 0, 0);
    loop {
        if select(&t, &mut ws, &b, &mut at, 50) == Selection::Peer(0) {
            break;
        }
        free(&t, &mut ws, &b, &mut at, false, 50);
        at = Attempt::new(&t, 0, 0);
    }
    free(&t, &mut ws, &b, &mut at, false, 50);
    assert_eq!(b.get(0).unwrap().fails(), 1);
}

#[test]
fn effective_weight_penalty_and_recovery() {
    let mut a = peer(1, 4);
    a.max_fails = 2;
    let t = topo(vec![a, peer(2, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(select(&t, &mut ws, &b, &mut at, 0), Selection::Peer(0));
    free(&t, &mut ws, &b, &mut at, true, 0);
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
    let mut ws = WorkerPeers::new(&t);
    for _ in 0..5 {
        let mut at = Attempt::new(&t, 0, 0);
        while select(&t, &mut ws, &b, &mut at, 0) != Selection::Peer(0) {
            free(&t, &mut ws, &b, &mut at, false, 0);
            at = Attempt::new(&t, 0, 0);
        }
        free(&t, &mut ws, &b, &mut at, true, 0);
    }
    assert_eq!(b.get(0).unwrap().fails(), 5);
    let seen: Vec<_> = (0..4).filter_map(|_| pick(&t, &mut ws, &b, 0)).collect();
    assert!(seen.contains(&0));
}

#[test]
fn single_peer_never_failed_out_and_never_retried() {
    let t = topo(vec![peer(1, 1)], vec![]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    for _ in 0..3 {
        let mut at = Attempt::new(&t, 0, 0);
        assert_eq!(select(&t, &mut ws, &b, &mut at, 0), Selection::Peer(0));
        free(&t, &mut ws, &b, &mut at, true, 0);
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
    let mut ws = WorkerPeers::new(&t);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(select(&t, &mut ws, &b, &mut at, 0), Selection::NoLive);
}

#[test]
fn backups_only_when_no_primary_and_then_stay_on_backups() {
    let t = topo(vec![peer(1, 1), peer(2, 1)], vec![peer(3, 1), peer(4, 1)]);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(at.tries, 4);
    let mut order = vec![];
    while let Selection::Peer(id) = select(&t, &mut ws, &b, &mut at, 0) {
        order.push(id);
        free(&t, &mut ws, &b, &mut at, true, 0);
        if at.tries == 0 {
            break;
        }
    }
    assert_eq!(order.len(), 4);
    assert!(order[..2].iter().all(|&i| i < 2));
    assert!(order[2..].iter().all(|&i| i >= 2));
    // Every peer is failed out now: no live upstreams.
    let mut at = Attempt::new(&t, 0, 0);
    assert_eq!(select(&t, &mut ws, &b, &mut at, 1), Selection::NoLive);
}

#[test]
fn tries_cap_and_down_peers() {
    let mut d = peer(3, 1);
    d.down = true;
    let t = topo(vec![peer(1, 1), peer(2, 1), d], vec![]);
    assert_eq!(Attempt::new(&t, 0, 0).tries, 2);
    assert_eq!(Attempt::new(&t, 0, 1).tries, 1);
    let b = Board::new(t.peer_count);
    let mut ws = WorkerPeers::new(&t);
    let seen: Vec<_> = (0..6).map(|_| pick(&t, &mut ws, &b, 0).unwrap()).collect();
    assert!(!seen.contains(&2));
}
