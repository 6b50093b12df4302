//! The immutable shape of upstream groups: peers with stable dense ids, their configured
//! parameters, primary and backup lists. Built once per configuration and shared by all
//! workers behind an `ArcSwap`; everything that changes at run time lives elsewhere
//! (`WorkerPeers` per worker, `Board` shared).

use std::net::SocketAddr;

/// Dense index of a peer across the whole topology (index into the board and worker state).
pub type PeerId = usize;
/// Index of an upstream group in the topology.
pub type UpstreamId = usize;

/// One peer as configured (`server ADDR weight= max_fails= fail_timeout= down`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    /// As nginx names it in logs and `$upstream_addr`: the resolved address.
    pub name: String,
    pub addr: SocketAddr,
    pub weight: u32,
    pub max_fails: u32,
    /// Whole seconds, like nginx's `fail_timeout`.
    pub fail_timeout: u64,
    pub down: bool,
}

/// Input for one group: primaries and backups in configuration order.
#[derive(Debug, Clone)]
pub struct UpstreamSpec {
    pub name: String,
    pub primary: Vec<PeerSpec>,
    pub backup: Vec<PeerSpec>,
}

/// One list of peers (the primaries or the backups) with nginx's derived fields.
#[derive(Debug, Clone)]
pub struct PeerList {
    pub peers: Vec<PeerSpec>,
    /// Id of `peers[0]`; ids of a list are contiguous.
    pub base: PeerId,
    /// Peers that are not `down`: what this list adds to a request's tries.
    pub tries: u32,
    pub total_weight: u64,
}

impl PeerList {
    fn new(peers: Vec<PeerSpec>, base: PeerId) -> Self {
        let tries = peers.iter().filter(|p| !p.down).count() as u32;
        let total_weight = peers.iter().map(|p| u64::from(p.weight)).sum();
        PeerList {
            peers,
            base,
            tries,
            total_weight,
        }
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    pub primary: PeerList,
    pub backup: PeerList,
    /// nginx's `peers->single`: one primary and no backup. Such a peer is never failed out
    /// and a request to it is never retried.
    pub single: bool,
}

impl Upstream {
    /// nginx's `ngx_http_upstream_tries()`: non-down primaries plus non-down backups.
    pub fn tries(&self) -> u32 {
        self.primary.tries + self.backup.tries
    }

    pub fn peer(&self, id: PeerId) -> Option<&PeerSpec> {
        let list = if id >= self.backup.base && !self.backup.is_empty() {
            &self.backup
        } else {
            &self.primary
        };
        list.peers.get(id.checked_sub(list.base)?)
    }
}

/// Every group of one configuration.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    pub upstreams: Vec<Upstream>,
    pub peer_count: usize,
}

impl Topology {
    pub fn new(specs: Vec<UpstreamSpec>) -> Self {
        let mut next = 0;
        let upstreams = specs
            .into_iter()
            .map(|s| {
                let single = s.primary.len() == 1 && s.backup.is_empty();
                let primary = PeerList::new(s.primary, next);
                next += primary.len();
                let backup = PeerList::new(s.backup, next);
                next += backup.len();
                Upstream {
                    name: s.name,
                    primary,
                    backup,
                    single,
                }
            })
            .collect();
        Topology {
            upstreams,
            peer_count: next,
        }
    }

    pub fn find(&self, name: &str) -> Option<UpstreamId> {
        self.upstreams.iter().position(|u| u.name == name)
    }

    /// The peer with this id, in whichever group holds it.
    pub fn peer(&self, id: PeerId) -> Option<&PeerSpec> {
        self.upstreams.iter().find_map(|u| u.peer(id))
    }
}
