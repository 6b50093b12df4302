//! `select` and `free` never allocate, for every balancer and group size, including retries,
//! failures, backups, the round-robin fallbacks and `revive`; and a reused `Attempt` makes
//! the whole request path allocation-free. Counted by a global allocator, per thread.

use ringfront_testkit::alloc_count::{allocations, Counting};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use ringfront_upstream::{
    free, select, Attempt, Balancer, Board, PeerSpec, RequestKey, Selection, Topology,
    UpstreamSpec, WorkerPeers,
};

#[global_allocator]
static GLOBAL: Counting = Counting;

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

fn topology(balancer: Balancer, n: usize, revive: bool) -> Topology {
    let peer = |i: usize| {
        let addr = SocketAddr::from(([127, 0, 0, 1], 20000 + i as u16));
        PeerSpec {
            name: addr.to_string(),
            server: String::new(),
            addr,
            weight: 1 + (i % 3) as u32,
            max_fails: 1,
            fail_timeout: 10,
            max_conns: u32::from(i.is_multiple_of(5)),
            down: i % 7 == 3,
            drain: false,
            slow_start_ms: 0,
        }
    };
    Topology::new(vec![UpstreamSpec {
        name: "u".into(),
        primary: (0..n).map(peer).collect(),
        backup: (n..n + 2).map(peer).collect(),
        balancer,
        revive,
    }])
}

/// Requests with retries: every other try fails, some requests stay open a while.
fn run(
    topo: &Topology,
    ws: &mut WorkerPeers,
    board: &Board,
    attempts: &mut [Attempt],
    keys: &[(IpAddr, String)],
    now: u64,
) {
    let (open, spare) = attempts.split_at_mut(1);
    let held = &mut open[0];
    for (r, (ip, k)) in keys.iter().enumerate() {
        let at = &mut spare[0];
        at.reset(topo, 0, 0);
        let key = RequestKey {
            client: Some(*ip),
            hash: k.as_bytes(),
        };
        let mut try_no = 0;
        while let Selection::Peer(_) = select(topo, ws, board, at, &key, now) {
            try_no += 1;
            let failed = (r + try_no) % 2 == 0 && try_no < 4;
            let rt = Some(Duration::from_millis(r as u64 % 97));
            free(topo, ws, board, at, failed, rt, now);
            if !failed || at.tries == 0 {
                break;
            }
        }
        if r % 9 == 0 {
            free(topo, ws, board, held, false, None, now);
            held.reset(topo, 0, 0);
            let _ = select(topo, ws, board, held, &key, now);
        }
    }
}

#[test]
fn select_and_free_never_allocate() {
    let keys: Vec<(IpAddr, String)> = (0..300u32)
        .map(|i| {
            (
                IpAddr::V4(Ipv4Addr::from(i.wrapping_mul(2_654_435_761))),
                format!("/k/{i}"),
            )
        })
        .collect();
    // The counter sees this thread's allocations.
    let before = allocations();
    drop(std::hint::black_box(vec![0u8; 64]));
    assert_eq!(allocations() - before, 1);
    for balancer in BALANCERS {
        for n in [1, 4, 64, 1024] {
            for revive in [false, true] {
                let topo = topology(balancer, n, revive);
                let board = Board::new(topo.peer_count);
                let mut ws = WorkerPeers::new(&topo, 42);
                // Allocated before counting: the attempts reused for every request.
                let mut attempts = [Attempt::new(&topo, 0, 0), Attempt::new(&topo, 0, 0)];
                // A peer makes its blocks of request counters on first use (once per peer,
                // not per request): reading each peer's count makes them here.
                let made: u32 = (0..topo.peer_count).map(|id| board.conns(id)).sum();
                assert_eq!(made, 0);
                let before = allocations();
                for now in [1000, 1001, 1020, 1040] {
                    run(&topo, &mut ws, &board, &mut attempts, &keys, now);
                }
                let during = allocations() - before;
                assert_eq!(
                    during, 0,
                    "{balancer:?} over {n} peers allocated {during} times"
                );
            }
        }
    }
}

#[test]
fn a_fresh_attempt_allocates_only_past_64_peers() {
    for (n, most) in [(4, 0), (64, 0), (65, 1), (1024, 1)] {
        let topo = topology(Balancer::RoundRobin, n, false);
        let before = allocations();
        let at = Attempt::new(&topo, 0, 0);
        assert!(allocations() - before <= most, "{n} peers");
        drop(at);
    }
}
