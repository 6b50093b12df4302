//! Cross-worker ejection latency: how long after one worker's failure takes a peer out
//! (`max_fails=1`) the other workers stop selecting it. Each trial builds a fresh group of
//! two peers on a shared board; OBSERVERS threads (other "workers", each with its own
//! `WorkerPeers`) select and free in a tight loop; the ejector thread selects peer 0 and
//! frees it as failed at t0. Per observer, the start time (relative to t0) of its last
//! `select` that began after t0 and still picked peer 0 (0 if none) is the ejection latency
//! it saw; a trial reports the worst observer.
//!
//! `cargo bench -p ringfront-benches --bench ejection` (env: TRIALS=2000, OBSERVERS=1).
//! Prints median / p99 / max latency and picks of the dead peer after t0.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ringfront_upstream::{
    free, select, Attempt, Balancer, Board, PeerSpec, RequestKey, Selection, Topology,
    UpstreamSpec, WorkerPeers,
};

fn peer(port: u16) -> PeerSpec {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    PeerSpec {
        name: addr.to_string(),
        server: String::new(),
        addr,
        weight: 1,
        max_fails: 1,
        fail_timeout: 10,
        max_conns: 0,
        down: false,
        drain: false,
        slow_start_ms: 0,
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const NOW: u64 = 1_000;

fn main() {
    let trials = env("TRIALS", 2000);
    let observers = env("OBSERVERS", 1).max(1);
    let topo = Arc::new(Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary: vec![peer(1), peer(2)],
        backup: vec![],
        balancer: Balancer::RoundRobin,
        revive: false,
    }]));
    let mut latencies = Vec::with_capacity(trials);
    let mut late_picks = Vec::with_capacity(trials);
    for trial in 0..trials {
        let board = Arc::new(Board::new(topo.peer_count));
        let epoch = Instant::now();
        let t0 = Arc::new(AtomicU64::new(u64::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(observers + 1));
        let handles: Vec<_> = (0..observers)
            .map(|o| {
                let (topo, board, t0, stop, start) = (
                    topo.clone(),
                    board.clone(),
                    t0.clone(),
                    stop.clone(),
                    start.clone(),
                );
                std::thread::spawn(move || {
                    let mut ws = WorkerPeers::new(&topo, (trial * 31 + o) as u64);
                    let mut at = Attempt::new(&topo, 0, 0);
                    let key = RequestKey::default();
                    let (mut last, mut picks) = (0u64, 0u64);
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        at.reset(&topo, 0, 0);
                        // Stamped before the pick: a select that began after t0 and still
                        // chose the dead peer is what counts.
                        let at_ns = epoch.elapsed().as_nanos() as u64;
                        let t = t0.load(Ordering::Relaxed);
                        if let Selection::Peer(0) =
                            select(&topo, &mut ws, &board, &mut at, &key, NOW)
                        {
                            if at_ns > t {
                                last = at_ns - t;
                                picks += 1;
                            }
                        }
                        free(&topo, &mut ws, &board, &mut at, false, None, NOW);
                    }
                    (last, picks)
                })
            })
            .collect();
        start.wait();
        // Let the observers get going, then fail peer 0 once.
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_micros(50) {
            std::hint::spin_loop();
        }
        let mut ws = WorkerPeers::new(&topo, 99);
        let mut at = Attempt::new(&topo, 0, 0);
        loop {
            at.reset(&topo, 0, 0);
            match select(&topo, &mut ws, &board, &mut at, &RequestKey::default(), NOW) {
                Selection::Peer(0) => break,
                _ => free(&topo, &mut ws, &board, &mut at, false, None, NOW),
            };
        }
        t0.store(epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
        free(&topo, &mut ws, &board, &mut at, true, None, NOW);
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_micros(500) {
            std::hint::spin_loop();
        }
        stop.store(true, Ordering::Relaxed);
        let mut worst = 0;
        let mut picks = 0;
        for h in handles {
            let (l, p) = h.join().unwrap_or((0, 0));
            worst = worst.max(l);
            picks += p;
        }
        latencies.push(worst);
        late_picks.push(picks);
    }
    latencies.sort_unstable();
    late_picks.sort_unstable();
    let q = |v: &[u64], p: f64| v[((v.len() - 1) as f64 * p) as usize];
    println!(
        "ejection: observers={observers} trials={trials} latency_ns median={} p99={} max={} \
         | dead-peer picks after t0: median={} p99={} max={}",
        q(&latencies, 0.5),
        q(&latencies, 0.99),
        q(&latencies, 1.0),
        q(&late_picks, 0.5),
        q(&late_picks, 0.99),
        q(&late_picks, 1.0)
    );
}
