//! Peer selection hot path: `select` then `free` (success) per request, nginx's smooth
//! weighted round robin over a small weighted group and over a 64-peer group.

use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddr};

use criterion::{criterion_group, criterion_main, Criterion};
use ringfront_upstream::{
    free, select, Attempt, Board, PeerSpec, Selection, Topology, UpstreamSpec, WorkerPeers,
};

fn peer(i: usize, weight: u32) -> PeerSpec {
    let addr = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), 20000 + i as u16));
    PeerSpec {
        name: addr.to_string(),
        addr,
        weight,
        max_fails: 1,
        fail_timeout: 10,
        down: false,
    }
}

fn topology(weights: &[u32]) -> Topology {
    Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: weights
            .iter()
            .enumerate()
            .map(|(i, &w)| peer(i, w))
            .collect(),
        backup: Vec::new(),
    }])
}

fn bench_group(c: &mut Criterion, name: &str, weights: &[u32]) {
    let topo = topology(weights);
    let board = Board::new(topo.peer_count);
    let mut ws = WorkerPeers::new(&topo);
    let up = topo.find("b").unwrap();
    let now: u64 = 1_000;
    c.bench_function(name, |b| {
        b.iter(|| {
            // Per request: a fresh attempt, one pick, one successful free.
            let mut at = Attempt::new(&topo, up, 0);
            let sel = select(&topo, &mut ws, &board, &mut at, black_box(now));
            debug_assert!(matches!(sel, Selection::Peer(_)));
            free(&topo, &mut ws, &board, &mut at, false, now);
            sel
        });
    });
}

fn select_free(c: &mut Criterion) {
    bench_group(c, "select_free/3_peers_w4_2_1", &[4, 2, 1]);
    let many: Vec<u32> = (0..64).map(|i| 1 + (i % 4)).collect();
    bench_group(c, "select_free/64_peers", &many);
}

criterion_group!(benches, select_free);
criterion_main!(benches);
