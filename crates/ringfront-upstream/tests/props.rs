//! Property tests of the selection invariants, over random groups, states and request
//! sequences, for every balancer.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use proptest::prelude::*;
use ringfront_upstream::{
    free, select, Attempt, Balancer, Board, PeerHealth, PeerSpec, RequestKey, Selection, Topology,
    UpstreamSpec, WorkerPeers,
};

const BALANCERS: [Balancer; 9] = [
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
    Balancer::LeastTime {
        last_byte: true,
        inflight: true,
    },
];

#[derive(Debug, Clone)]
struct PeerCfg {
    weight: u32,
    down: bool,
    max_fails: u32,
    fail_timeout: u64,
    max_conns: u32,
}

fn peer_cfg() -> impl Strategy<Value = PeerCfg> {
    (
        1u32..5,
        prop::bool::weighted(0.15),
        0u32..3,
        0u64..4,
        prop_oneof![3 => Just(0u32), 1 => 1u32..3],
    )
        .prop_map(
            |(weight, down, max_fails, fail_timeout, max_conns)| PeerCfg {
                weight,
                down,
                max_fails,
                fail_timeout,
                max_conns,
            },
        )
}

fn spec(i: usize, c: &PeerCfg) -> PeerSpec {
    let addr = SocketAddr::from(([127, 0, 0, 1], 20000 + i as u16));
    PeerSpec {
        name: addr.to_string(),
        server: String::new(),
        addr,
        weight: c.weight,
        max_fails: c.max_fails,
        fail_timeout: c.fail_timeout,
        max_conns: c.max_conns,
        down: c.down,
        drain: false,
        slow_start_ms: 0,
    }
}

fn group(balancer: Balancer, weights: &[u32]) -> Topology {
    Topology::new(vec![UpstreamSpec {
        name: "u".into(),
        primary: weights
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                spec(
                    i,
                    &PeerCfg {
                        weight: w,
                        down: false,
                        max_fails: 1,
                        fail_timeout: 10,
                        max_conns: 0,
                    },
                )
            })
            .collect(),
        balancer,
        ..UpstreamSpec::default()
    }])
}

fn failed_out(s: &PeerSpec, h: &PeerHealth, now: u64) -> bool {
    s.max_fails != 0
        && h.fails() >= s.max_fails
        && now.saturating_sub(h.checked()) <= s.fail_timeout
}

#[derive(Debug, Clone)]
struct Req {
    client: u32,
    key: u8,
    fails: Vec<bool>,
    hold: bool,
    dt: u64,
}

fn req() -> impl Strategy<Value = Req> {
    (
        any::<u32>(),
        0u8..40,
        prop::collection::vec(prop::bool::weighted(0.4), 0..4),
        prop::bool::weighted(0.3),
        0u64..3,
    )
        .prop_map(|(client, key, fails, hold, dt)| Req {
            client,
            key,
            fails,
            hold,
            dt,
        })
}

fn one_pick(topo: &Topology, ws: &mut WorkerPeers, b: &Board, key: &RequestKey) -> usize {
    let mut at = Attempt::new(topo, 0, 0);
    let Selection::Peer(id) = select(topo, ws, b, &mut at, key, 0) else {
        panic!("healthy group answered no live upstreams");
    };
    free(topo, ws, b, &mut at, false, None, 0);
    id
}

fn key_of(k: u32) -> String {
    format!("/key/{k}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the state: a pick is never `down`, never a peer this request already tried,
    /// never failed out (unless `revive` just forgave everyone), never at `max_conns`; and
    /// every active-request count returns to 0.
    #[test]
    fn never_selects_an_excluded_peer(
        bal in 0usize..BALANCERS.len(),
        primary in prop::collection::vec(peer_cfg(), 1..8),
        backup in prop::collection::vec(peer_cfg(), 0..3),
        revive in any::<bool>(),
        reqs in prop::collection::vec(req(), 1..60),
        seed in any::<u64>(),
    ) {
        let balancer = BALANCERS[bal];
        let np = primary.len();
        let topo = Topology::new(vec![UpstreamSpec {
            name: "u".into(),
            primary: primary.iter().enumerate().map(|(i, c)| spec(i, c)).collect(),
            backup: backup.iter().enumerate().map(|(i, c)| spec(np + i, c)).collect(),
            balancer,
            revive,
        }]);
        let up = &topo.upstreams[0];
        let board = Board::new(topo.peer_count);
        let mut ws = WorkerPeers::new(&topo, seed);
        let mut open: Vec<Attempt> = Vec::new();
        let mut now = 1000u64;
        for r in &reqs {
            now += r.dt;
            let k = key_of(u32::from(r.key));
            let key = RequestKey {
                client: Some(IpAddr::V4(Ipv4Addr::from(r.client))),
                hash: k.as_bytes(),
            };
            let mut at = Attempt::new(&topo, 0, 0);
            let mut returned = Vec::new();
            let mut try_no = 0;
            loop {
                let before: Vec<(bool, u32)> = (0..topo.peer_count)
                    .map(|id| {
                        let (s, h) = (topo.peer(id).unwrap(), board.get(id).unwrap());
                        (failed_out(s, h, now), h.conns())
                    })
                    .collect();
                let Selection::Peer(id) = select(&topo, &mut ws, &board, &mut at, &key, now)
                else {
                    break;
                };
                let s = topo.peer(id).unwrap();
                prop_assert!(!s.down, "{balancer:?} picked down peer {id}");
                prop_assert!(!returned.contains(&id), "{balancer:?} picked tried peer {id}");
                prop_assert!(
                    s.max_conns == 0 || before[id].1 < s.max_conns,
                    "{balancer:?} picked peer {id} at max_conns"
                );
                if before[id].0 {
                    let all_forgiven = up.ids().all(|i| board.get(i).unwrap().fails() == 0);
                    prop_assert!(
                        revive && all_forgiven,
                        "{balancer:?} picked failed-out peer {id}"
                    );
                }
                returned.push(id);
                let fail = r.fails.get(try_no).copied().unwrap_or(false);
                try_no += 1;
                if fail {
                    free(&topo, &mut ws, &board, &mut at, true, None, now);
                    if at.tries == 0 {
                        break;
                    }
                } else {
                    if r.hold {
                        open.push(at.clone());
                    } else {
                        let rt = std::time::Duration::from_millis(u64::from(r.key) * 7);
                        free(&topo, &mut ws, &board, &mut at, false, Some(rt), now);
                    }
                    break;
                }
            }
            if open.len() > 3 {
                let mut old = open.remove(0);
                free(&topo, &mut ws, &board, &mut old, false, None, now);
            }
        }
        for mut at in open {
            free(&topo, &mut ws, &board, &mut at, false, None, now);
        }
        for id in 0..topo.peer_count {
            prop_assert_eq!(board.conns(id), 0);
            prop_assert_eq!(board.get(id).unwrap().inflight.load(std::sync::atomic::Ordering::Relaxed), 0);
        }
    }

    /// Round robin (and least_conn, whose every pick is a tie when requests end at once)
    /// gives each peer exactly `weight` of every `total_weight` picks. (Not least_time: its
    /// score is at least one 20 ms bucket, so the weights divide it and there is no tie.)
    #[test]
    fn smooth_round_robin_honours_weights_exactly(
        weights in prop::collection::vec(1u32..10, 1..8),
        rounds in 1u64..4,
        bal in prop::sample::select(vec![
            Balancer::RoundRobin,
            Balancer::LeastConn,
        ]),
    ) {
        let topo = group(bal, &weights);
        let board = Board::new(topo.peer_count);
        let mut ws = WorkerPeers::new(&topo, 0);
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut counts = vec![0u64; weights.len()];
        for _ in 0..rounds * total {
            counts[one_pick(&topo, &mut ws, &board, &RequestKey::default())] += 1;
        }
        for (c, w) in counts.iter().zip(&weights) {
            prop_assert_eq!(*c, rounds * u64::from(*w));
        }
    }

    /// Random picks come out roughly in proportion to the weights.
    #[test]
    fn random_is_roughly_proportional(
        weights in prop::collection::vec(1u32..6, 2..6),
        two in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let topo = group(Balancer::Random { two, least_conn: two }, &weights);
        let board = Board::new(topo.peer_count);
        let mut ws = WorkerPeers::new(&topo, seed);
        let n = 12_000u64;
        let mut counts = vec![0u64; weights.len()];
        for _ in 0..n {
            counts[one_pick(&topo, &mut ws, &board, &RequestKey::default())] += 1;
        }
        if !two {
            let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
            for (c, w) in counts.iter().zip(&weights) {
                let expect = (n * u64::from(*w)) as f64 / total as f64;
                let slack = 6.0 * expect.sqrt() + 0.01 * n as f64;
                prop_assert!((*c as f64 - expect).abs() < slack, "{counts:?} vs {weights:?}");
            }
        } else {
            // Ties go to the second draw, so `two` skews, but every peer gets traffic.
            prop_assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
        }
    }

    /// The hash balancers map a key the same way every time and in every worker.
    #[test]
    fn hash_mapping_is_stable(
        weights in prop::collection::vec(1u32..5, 1..10),
        bal in prop::sample::select(vec![
            Balancer::IpHash,
            Balancer::Hash { consistent: false },
            Balancer::Hash { consistent: true },
        ]),
        keys in prop::collection::vec(any::<u32>(), 1..40),
        seeds in (any::<u64>(), any::<u64>()),
    ) {
        let topo = group(bal, &weights);
        let (b1, b2) = (Board::new(topo.peer_count), Board::new(topo.peer_count));
        let mut w1 = WorkerPeers::new(&topo, seeds.0);
        let mut w2 = WorkerPeers::new(&topo, seeds.1);
        for k in keys {
            let text = key_of(k);
            let ip = Ipv4Addr::from(k);
            let key = RequestKey { client: Some(IpAddr::V4(ip)), hash: text.as_bytes() };
            let first = one_pick(&topo, &mut w1, &b1, &key);
            prop_assert_eq!(one_pick(&topo, &mut w1, &b1, &key), first);
            prop_assert_eq!(one_pick(&topo, &mut w2, &b2, &key), first);
            if bal == Balancer::IpHash {
                // Only the first three octets count.
                let o = ip.octets();
                let same24 = Ipv4Addr::new(o[0], o[1], o[2], o[3].wrapping_add(1));
                let key = RequestKey { client: Some(IpAddr::V4(same24)), hash: b"" };
                prop_assert_eq!(one_pick(&topo, &mut w2, &b2, &key), first);
            }
        }
    }

    /// Consistent hashing: taking one server out moves only the keys it had.
    #[test]
    fn consistent_hash_removal_moves_only_that_servers_keys(
        weights in prop::collection::vec(1u32..4, 2..10),
        remove in any::<prop::sample::Index>(),
        keys in prop::collection::vec(any::<u32>(), 50..150),
    ) {
        let bal = Balancer::Hash { consistent: true };
        let full = group(bal, &weights);
        let gone = remove.index(weights.len());
        let mut rest = full.upstreams[0].primary.peers.clone();
        rest.remove(gone);
        let gone_name = full.upstreams[0].primary.peers[gone].name.clone();
        let less = Topology::new(vec![UpstreamSpec {
            name: "u".into(),
            primary: rest,
            balancer: bal,
            ..UpstreamSpec::default()
        }]);
        let (bf, bl) = (Board::new(full.peer_count), Board::new(less.peer_count));
        let mut wf = WorkerPeers::new(&full, 0);
        let mut wl = WorkerPeers::new(&less, 0);
        let mut moved = 0;
        for k in keys {
            let text = key_of(k);
            let key = RequestKey { client: None, hash: text.as_bytes() };
            let before = full.peer(one_pick(&full, &mut wf, &bf, &key)).unwrap().name.clone();
            let after = less.peer(one_pick(&less, &mut wl, &bl, &key)).unwrap().name.clone();
            if before == gone_name {
                moved += 1;
                prop_assert_ne!(&after, &gone_name);
            } else {
                prop_assert_eq!(&after, &before, "key {} moved", text);
            }
        }
        let _ = moved;
    }

    /// Extreme configurations, clocks that jump back and forth, and huge response times:
    /// nothing panics or overflows, and `conns` still returns to 0.
    #[test]
    fn extreme_inputs_never_panic(
        bal in 0usize..BALANCERS.len(),
        peers in prop::collection::vec(
            (
                prop_oneof![1u32..4, Just(0u32), Just(u32::MAX)],
                any::<bool>(),
                any::<u32>(),
                any::<u64>(),
                any::<u32>(),
            ),
            0..6,
        ),
        backups in 0usize..3,
        steps in prop::collection::vec(
            (any::<u64>(), any::<u32>(), any::<bool>(), any::<u64>(), 0usize..3),
            1..30,
        ),
        seed in any::<u64>(),
    ) {
        let balancer = BALANCERS[bal];
        let chash = balancer == Balancer::Hash { consistent: true };
        let specs: Vec<PeerSpec> = peers
            .iter()
            .enumerate()
            .map(|(i, &(w, down, max_fails, fail_timeout, max_conns))| {
                // The ring caps absurd weights but building 2^24 points per case is slow.
                let weight = if chash { w.min(3) } else { w };
                spec(i, &PeerCfg { weight, down, max_fails, fail_timeout, max_conns })
            })
            .collect();
        let topo = Topology::new(vec![UpstreamSpec {
            name: "u".into(),
            backup: specs.iter().take(backups).cloned().map(|mut p| {
                p.addr.set_port(p.addr.port().wrapping_add(1000));
                p.name = p.addr.to_string();
                p
            }).collect(),
            primary: specs,
            balancer,
            revive: seed % 2 == 0,
        }]);
        let board = Board::new(topo.peer_count);
        let mut ws = WorkerPeers::new(&topo, seed);
        // A second upstream id that does not exist, too.
        let mut ats = [Attempt::new(&topo, 0, 3), Attempt::new(&topo, 7, 0)];
        for (now, client, failed, rt_us, which) in steps {
            let k = client.to_string();
            let key = RequestKey {
                client: Some(IpAddr::V4(Ipv4Addr::from(client))),
                hash: k.as_bytes(),
            };
            let at = &mut ats[which % 2];
            if which == 2 {
                at.reset(&topo, 0, 0);
            }
            let _ = select(&topo, &mut ws, &board, at, &key, now);
            let rt = std::time::Duration::from_micros(rt_us);
            free(&topo, &mut ws, &board, at, failed, Some(rt), now.wrapping_sub(rt_us));
        }
        for id in 0..topo.peer_count {
            prop_assert_eq!(board.conns(id), 0);
        }
    }
}
