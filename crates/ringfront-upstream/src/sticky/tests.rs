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
            inflight: false,
        },
    ]
}

fn group(balancer: Balancer, primaries: u16, backups: u16) -> Bench {
    Bench::new(Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: (0..primaries).map(|i| peer(9001 + i, 1)).collect(),
        backup: (0..backups).map(|i| peer(9101 + i, 1)).collect(),
        balancer,
        revive: false,
    }]))
}

/// One request pinned to `pin`; the peers of its first `n` tries, each failing.
fn tries(g: &mut Bench, pin: Option<PeerId>, n: usize, now: u64) -> Vec<PeerId> {
    let mut at = g.attempt();
    at.pin(pin);
    let mut out = Vec::new();
    for _ in 0..n {
        match g.select(&mut at, &NO_KEY, now) {
            Selection::Peer(id) => {
                out.push(id);
                g.free(&mut at, true, now);
            }
            Selection::NoLive => break,
        }
    }
    out
}

#[test]
fn a_pin_wins_over_every_balancer() {
    for bal in all() {
        let mut g = group(bal, 4, 0);
        for _ in 0..20 {
            let mut at = g.attempt();
            at.pin(Some(2));
            assert_eq!(g.select(&mut at, &NO_KEY, 5), Selection::Peer(2), "{bal:?}");
            g.free(&mut at, false, 5);
        }
    }
}

#[test]
fn a_failed_out_down_or_full_pin_falls_back_to_the_balancer() {
    for bal in all() {
        let mut g = group(bal, 3, 0);
        g.fail(1, 5); // max_fails=1: out for fail_timeout (10 s)
        let picked = g.pick_pinned(Some(1), 6);
        assert!(picked.is_some() && picked != Some(1), "{bal:?}");
        // After fail_timeout the pin is honoured again (as the probe nginx allows).
        assert_eq!(g.pick_pinned(Some(1), 16), Some(1), "{bal:?}");
    }
    let mut specs: Vec<PeerSpec> = (0..3).map(|i| peer(9001 + i, 1)).collect();
    specs[0].down = true;
    specs[1].max_conns = 1;
    let mut g = Bench::new(testutil_topo(specs));
    assert_ne!(g.pick_pinned(Some(0), 5), Some(0));
    g.b.get(1).unwrap().acquire();
    assert_ne!(g.pick_pinned(Some(1), 5), Some(1));
}

fn testutil_topo(specs: Vec<PeerSpec>) -> Topology {
    crate::testutil::topo(specs, Vec::new())
}

#[test]
fn a_pin_is_tried_once_then_the_request_moves_on() {
    for bal in all() {
        let mut g = group(bal, 3, 0);
        let seen = tries(&mut g, Some(1), 3, 5);
        assert_eq!(seen.first(), Some(&1), "{bal:?}");
        assert_eq!(seen.iter().filter(|&&p| p == 1).count(), 1, "{bal:?}");
    }
}

#[test]
fn a_backup_pin_counts_only_once_the_request_is_on_the_backups() {
    let mut g = group(Balancer::RoundRobin, 2, 2);
    // A primary is up: the backup pin is not on the primary list.
    assert!(matches!(g.pick_pinned(Some(3), 5), Some(0 | 1)));
    g.fail(0, 5);
    g.fail(1, 5);
    assert_eq!(g.pick_pinned(Some(3), 6), Some(3));
}

#[test]
fn find_maps_an_id_to_the_groups_peer() {
    let g = group(Balancer::RoundRobin, 2, 1);
    let up = &g.t.upstreams[0];
    let ids = ["a", "b", "c"];
    assert_eq!(sticky::find(up, &ids, b"b"), Some(1));
    assert_eq!(sticky::find(up, &ids, b"c"), Some(2));
    assert_eq!(sticky::find(up, &ids, b"zz"), None);
    assert_eq!(sticky::find(up, &ids, b""), None);
    // A table longer than the group (a stale one) finds nothing outside it.
    assert_eq!(sticky::find(up, &["a", "b", "c", "d"], b"d"), None);
}

/// nginx looks a server id up again on the backup list: a request pinned to a primary
/// whose id a backup shares goes to that backup once every primary is out, with every
/// balancer; a backup's id is found only among the backups.
#[test]
fn a_pinned_primary_leads_to_the_backup_with_its_id() {
    let ids = ["a", "b", "a", "b"];
    for bal in all() {
        let mut g = group(bal, 2, 2);
        let up = &g.t.upstreams[0];
        assert_eq!(sticky::find(up, &ids, b"b"), Some(1));
        assert_eq!(sticky::find_backup(up, &ids, b"b"), Some(3));
        assert_eq!(sticky::find_backup(up, &ids, b"c"), None);
        assert_eq!(sticky::find_backup(up, &ids, b""), None);
        g.fail(0, 5);
        g.fail(1, 5);
        for _ in 0..6 {
            let mut at = g.attempt();
            at.pin(Some(1));
            at.pin_backup(Some(3));
            assert_eq!(g.select(&mut at, &NO_KEY, 6), Selection::Peer(3), "{bal:?}");
            g.free(&mut at, false, 6);
        }
        // Without the backup pin the backups are balanced as usual.
        let unpinned: Vec<_> = (0..4).map(|_| g.pick_pinned(Some(1), 6).unwrap()).collect();
        assert!(unpinned.contains(&2), "{bal:?}: {unpinned:?}");
    }
    // A table of primaries only finds no backup.
    let g = group(Balancer::RoundRobin, 2, 0);
    assert_eq!(
        sticky::find_backup(&g.t.upstreams[0], &["a", "b"], b"a"),
        None
    );
}

/// nginx 1.29.6's round robin with a sticky peer: the pin takes its turn in the weights
/// until it is a whole round behind, then the weights are left alone; the requests without
/// a pin then see the weights it left (here 1 first, where plain round robin starts with 0).
#[test]
fn round_robin_weighs_the_pin_in_as_nginx() {
    let mut g = group(Balancer::RoundRobin, 2, 0);
    for _ in 0..5 {
        assert_eq!(g.pick_pinned(Some(0), 5), Some(0));
    }
    assert_eq!(g.ws.current_weight(0), -1, "-(total_weight - weight)");
    assert_eq!(g.ws.current_weight(1), 1);
    let unpinned: Vec<_> = (0..4).map(|_| g.pick_pinned(None, 5).unwrap()).collect();
    assert_eq!(unpinned, [1, 0, 1, 0]);
    // Weights 1 and 3: the pin on the light peer is at most 3 behind.
    let specs = vec![peer(9001, 1), peer(9002, 3)];
    let mut g = Bench::new(testutil_topo(specs));
    for _ in 0..10 {
        assert_eq!(g.pick_pinned(Some(0), 5), Some(0));
    }
    assert_eq!(g.ws.current_weight(0), -3);
}

fn draining(balancer: Balancer, n: u16, drained: usize) -> Bench {
    let mut specs: Vec<PeerSpec> = (0..n).map(|i| peer(9001 + i, 1)).collect();
    specs[drained].down = true;
    specs[drained].drain = true;
    Bench::new(Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: specs,
        backup: Vec::new(),
        balancer,
        revive: false,
    }]))
}

#[test]
fn a_draining_peer_takes_only_its_pins() {
    for bal in all() {
        let mut g = draining(bal, 3, 0);
        for now in 5..35 {
            assert_ne!(g.pick_pinned(None, now), Some(0), "{bal:?}: unpinned");
            assert_ne!(
                g.pick_pinned(Some(1), now),
                Some(0),
                "{bal:?}: pinned elsewhere"
            );
            assert_eq!(g.pick_pinned(Some(0), now), Some(0), "{bal:?}: pinned");
        }
        // Otherwise unusable (failed out): the pin falls back to the balancer.
        g.fail(0, 40);
        let picked = g.pick_pinned(Some(0), 41);
        assert!(picked.is_some() && picked != Some(0), "{bal:?}");
    }
}

#[test]
fn a_draining_pin_is_taken_when_nothing_else_is_selectable() {
    // A single draining peer (nginx's `peers->single`), and a group whose other peer is down.
    for bal in all() {
        let mut g = draining(bal, 1, 0);
        assert_eq!(g.pick_pinned(Some(0), 5), Some(0), "{bal:?}: single");
        assert_eq!(g.pick_pinned(None, 5), None, "{bal:?}: single, unpinned");
    }
    {
        let mut specs: Vec<PeerSpec> = (0..2).map(|i| peer(9001 + i, 1)).collect();
        specs[0].down = true;
        specs[0].drain = true;
        specs[1].down = true;
        let mut g = Bench::new(testutil_topo(specs));
        assert_eq!(g.pick_pinned(Some(0), 5), Some(0), "other down");
        assert_eq!(g.pick_pinned(None, 5), None, "other down, unpinned");
    }
}
