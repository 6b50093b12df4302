//! Per-worker keepalive pool of idle upstream connections, keyed by peer, capped per group at
//! `keepalive N` (nginx's per-worker cache size). Most recently used first; connections idle
//! longer than the group's `keepalive_timeout` are dropped when met.

use std::time::{Duration, Instant};

use monoio::net::TcpStream;
use ringfront_upstream::{PeerId, UpstreamId};

pub struct Idle {
    pub stream: TcpStream,
    pub since: Instant,
    /// Requests already served on this connection.
    pub requests: u64,
}

#[derive(Default)]
pub struct Pool {
    peers: Vec<Vec<Idle>>,
    per_group: Vec<usize>,
    group_of: Vec<UpstreamId>,
}

impl Pool {
    pub fn new(peer_count: usize) -> Self {
        Pool {
            peers: (0..peer_count).map(|_| Vec::new()).collect(),
            per_group: Vec::new(),
            group_of: vec![0; peer_count],
        }
    }

    /// The pool of a new configuration generation with the idle connections of every peer
    /// that survived (`from[new id] = Some(old id)`); the rest of `old` is closed on drop.
    pub fn carry(
        mut old: Pool,
        from: &[Option<PeerId>],
        topo: &ringfront_upstream::Topology,
    ) -> Pool {
        let mut new = Pool::new(from.len());
        for (nid, oid) in from.iter().enumerate() {
            let (Some(oid), Some(g)) = (oid, topo.group_of(nid)) else {
                continue;
            };
            let Some(list) = old.peers.get_mut(*oid).map(std::mem::take) else {
                continue;
            };
            if new.per_group.len() <= g {
                new.per_group.resize(g + 1, 0);
            }
            new.per_group[g] += list.len();
            new.group_of[nid] = g;
            new.peers[nid] = list;
        }
        new
    }

    /// An idle connection to `peer` still inside `timeout`, if any.
    pub fn take(&mut self, peer: PeerId, timeout: Duration) -> Option<Idle> {
        let list = self.peers.get_mut(peer)?;
        while let Some(idle) = list.pop() {
            let g = self.group_of[peer];
            self.per_group[g] = self.per_group[g].saturating_sub(1);
            if idle.since.elapsed() <= timeout {
                return Some(idle);
            }
        }
        None
    }

    /// Keeps `idle` for reuse unless the group's cache is full (then it is closed).
    pub fn put(&mut self, group: UpstreamId, peer: PeerId, cap: usize, idle: Idle) {
        if self.per_group.len() <= group {
            self.per_group.resize(group + 1, 0);
        }
        if self.per_group[group] >= cap || peer >= self.peers.len() {
            return;
        }
        self.per_group[group] += 1;
        self.group_of[peer] = group;
        self.peers[peer].push(idle);
    }
}
