//! Peer selection hot path: per request, `select` then `free` (success), for every balancer
//! over groups of 4, 64 and 1,024 peers (weights 1..=4), plus nginx's classic 4:2:1 group.
//! The `Attempt` is reset, not rebuilt, so the numbers are the balancer's alone (a fresh
//! `Attempt` over more than 64 peers allocates its tried bitmap).

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ringfront_upstream::{
    free, select, Attempt, Balancer, Board, PeerSpec, RequestKey, Selection, Topology,
    UpstreamSpec, WorkerPeers,
};

fn peer(i: usize, weight: u32) -> PeerSpec {
    let addr = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), 20000 + i as u16));
    PeerSpec {
        name: addr.to_string(),
        server: String::new(),
        addr,
        weight,
        max_fails: 1,
        fail_timeout: 10,
        max_conns: 0,
        down: false,
        drain: false,
        slow_start_ms: 0,
    }
}

fn topology(balancer: Balancer, weights: &[u32]) -> Topology {
    Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: weights
            .iter()
            .enumerate()
            .map(|(i, &w)| peer(i, w))
            .collect(),
        balancer,
        ..UpstreamSpec::default()
    }])
}

const BALANCERS: [(&str, Balancer); 9] = [
    ("round_robin", Balancer::RoundRobin),
    ("ip_hash", Balancer::IpHash),
    ("hash", Balancer::Hash { consistent: false }),
    ("hash_consistent", Balancer::Hash { consistent: true }),
    ("least_conn", Balancer::LeastConn),
    (
        "random",
        Balancer::Random {
            two: false,
            least_conn: false,
        },
    ),
    (
        "random_two",
        Balancer::Random {
            two: true,
            least_conn: true,
        },
    ),
    (
        "least_time",
        Balancer::LeastTime {
            last_byte: false,
            inflight: false,
        },
    ),
    (
        "least_time_inflight",
        Balancer::LeastTime {
            last_byte: true,
            inflight: true,
        },
    ),
];

/// Keys cycled through request by request: distinct clients (distinct /24s) and URIs.
fn keys() -> Vec<(IpAddr, String)> {
    (0..1024u32)
        .map(|i| {
            (
                IpAddr::V4(Ipv4Addr::from(i.wrapping_mul(2_654_435_761))),
                format!("/articles/{i}?page=2"),
            )
        })
        .collect()
}

fn bench_one(c: &mut Criterion, group: &str, id: BenchmarkId, balancer: Balancer, weights: &[u32]) {
    let topo = topology(balancer, weights);
    let board = Board::new(topo.peer_count);
    let mut ws = WorkerPeers::new(&topo, 0x5eed);
    let up = topo.find("b").unwrap();
    let keys = keys();
    let mut at = Attempt::new(&topo, up, 0);
    let mut next = 0usize;
    let now: u64 = 1_000;
    c.benchmark_group(group).bench_function(id, |b| {
        b.iter(|| {
            let (ip, uri) = &keys[next % keys.len()];
            next = next.wrapping_add(1);
            let key = RequestKey {
                client: Some(*ip),
                hash: uri.as_bytes(),
            };
            at.reset(&topo, up, 0);
            let sel = select(&topo, &mut ws, &board, &mut at, &key, black_box(now));
            debug_assert!(matches!(sel, Selection::Peer(_)));
            free(
                &topo,
                &mut ws,
                &board,
                &mut at,
                false,
                Some(Duration::from_millis(12)),
                now,
            );
            sel
        });
    });
}

fn select_free(c: &mut Criterion) {
    bench_one(
        c,
        "select_free",
        BenchmarkId::new("round_robin", "3_peers_w4_2_1"),
        Balancer::RoundRobin,
        &[4, 2, 1],
    );
    for n in [4usize, 64, 1024] {
        let weights: Vec<u32> = (0..n).map(|i| 1 + (i % 4) as u32).collect();
        for (name, balancer) in BALANCERS {
            bench_one(
                c,
                "select_free",
                BenchmarkId::new(name, format!("{n}_peers")),
                balancer,
                &weights,
            );
        }
    }
}

criterion_group!(benches, select_free);
criterion_main!(benches);
