//! The immutable shape of upstream groups: peers with stable dense ids, their configured
//! parameters, primary and backup lists, the balancing method and the tables it precomputes
//! (cumulative weights, the consistent-hash ring). Built once per configuration and shared by
//! all workers behind an `ArcSwap`; everything that changes at run time lives elsewhere
//! (`WorkerPeers` per worker, `Board` shared).

use std::fmt;
use std::net::SocketAddr;

use crate::chash::Ring;

/// Dense index of a peer across the whole topology (index into the board and worker state).
pub type PeerId = usize;
/// Index of an upstream group in the topology.
pub type UpstreamId = usize;

/// One peer as configured (`server ADDR weight= max_fails= fail_timeout= max_conns= down`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    /// As nginx names it in logs and `$upstream_addr`: the resolved address.
    pub name: String,
    /// The `server` directive's address as written (`localhost:8081`, `10.0.0.1`): nginx's
    /// `peer->server`, which `hash ... consistent` hashes. Every address a name resolves to
    /// shares it. Empty means "same as `name`".
    pub server: String,
    pub addr: SocketAddr,
    /// nginx refuses `weight=0`; a 0 here is taken as 1.
    pub weight: u32,
    pub max_fails: u32,
    /// Whole seconds, like nginx's `fail_timeout`.
    pub fail_timeout: u64,
    /// Active requests allowed at once across all workers; 0 = unlimited.
    pub max_conns: u32,
    /// `down` or `drain`: no balancer selects the peer.
    pub down: bool,
    /// `drain` (with `down` set): a `sticky` pin still selects the peer while it is
    /// otherwise usable (nginx 1.29.6's `NGX_HTTP_UPSTREAM_DRAINING`).
    pub drain: bool,
    /// `slow_start`: after the peer comes back its weight ramps from 0 to `weight` over
    /// this many milliseconds; 0 = off. Ignored in a single-peer group.
    pub slow_start_ms: u64,
}

impl PeerSpec {
    /// The text consistent hashing uses: `server`, or `name` when `server` is empty.
    pub fn server_text(&self) -> &str {
        if self.server.is_empty() {
            &self.name
        } else {
            &self.server
        }
    }
}

/// The balancing method of a group (`ip_hash`, `hash KEY [consistent]`, `least_conn`,
/// `random [two [least_conn]]`, `least_time header|last_byte [inflight]`; none = round robin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balancer {
    #[default]
    RoundRobin,
    IpHash,
    Hash {
        consistent: bool,
    },
    LeastConn,
    /// `two`: draw two peers, keep the one with fewer active requests per unit of weight.
    /// `least_conn` is nginx's only (and default) criterion for `two`, so it changes nothing.
    Random {
        two: bool,
        least_conn: bool,
    },
    /// `last_byte` only tells the caller which time to feed `free`; `inflight` also counts
    /// requests still waiting for their response.
    LeastTime {
        last_byte: bool,
        inflight: bool,
    },
}

/// Input for one group: primaries and backups in configuration order.
#[derive(Debug, Clone, Default)]
pub struct UpstreamSpec {
    pub name: String,
    pub primary: Vec<PeerSpec>,
    pub backup: Vec<PeerSpec>,
    pub balancer: Balancer,
    /// When every peer is failed out: `false` answers "no live upstreams" (nginx >= 1.11.5);
    /// `true` forgets every peer's failures (primaries and backups) and selects once more in
    /// the same request, the recovery nginx < 1.11.5 had.
    pub revive: bool,
}

/// One list of peers (the primaries or the backups) with nginx's derived fields.
#[derive(Debug, Clone)]
pub struct PeerList {
    pub peers: Vec<PeerSpec>,
    /// Id of `peers[0]`; ids of a list are contiguous.
    pub base: PeerId,
    /// Peers that are not `down`: what this list adds to a request's tries.
    pub tries: u32,
    /// Sum of all weights, `down` peers included (as nginx's `total_weight`).
    pub total_weight: u64,
    /// `starts[i]` = sum of the weights before peer `i`: the weight walk of `hash`, `ip_hash`
    /// and `random` as a binary search.
    starts: Vec<u64>,
    /// Weights are multiplied by this in the round-robin arithmetic: 1 (nginx's exact
    /// integers) unless a peer of the group has `slow_start`, then [`SLOW_START_SCALE`] so a
    /// ramping weight can be a fraction of 1. Smooth weighted round robin picks the same
    /// sequence for weights scaled by a constant, so scaling changes nothing else.
    pub scale: i64,
}

/// Fixed-point factor of the round-robin weights in groups that use `slow_start`.
pub const SLOW_START_SCALE: i64 = 1000;

/// A peer's weight at full strength, in its list's fixed point.
pub(crate) fn full_weight(list: &PeerList, spec: &PeerSpec) -> i64 {
    i64::from(spec.weight).saturating_mul(list.scale)
}

/// A peer's weight now: its full weight, or during a slow start `ramp` thousandths of it,
/// never less than 1 (a peer selected at all must have a weight).
pub(crate) fn ramped_weight(list: &PeerList, spec: &PeerSpec, ramp: u32) -> i64 {
    let full = full_weight(list, spec);
    if list.scale == 1 || ramp >= 1000 {
        return full;
    }
    (full.saturating_mul(i64::from(ramp)) / 1000).max(1)
}

impl PeerList {
    fn new(mut peers: Vec<PeerSpec>, base: PeerId, scale: i64) -> Self {
        let mut starts = Vec::with_capacity(peers.len());
        let mut total_weight = 0u64;
        for p in &mut peers {
            p.weight = p.weight.max(1);
            starts.push(total_weight);
            total_weight += u64::from(p.weight);
        }
        let tries = peers.iter().filter(|p| !p.down).count() as u32;
        PeerList {
            peers,
            base,
            tries,
            total_weight,
            starts,
            scale,
        }
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// The peer whose weight interval holds `w` (`w < total_weight`): nginx's
    /// `while (w >= peer->weight) { w -= peer->weight; peer = peer->next; }`.
    pub(crate) fn walk(&self, w: u64) -> usize {
        self.starts.partition_point(|&s| s <= w).saturating_sub(1)
    }
}

#[derive(Clone)]
pub struct Upstream {
    pub name: String,
    pub primary: PeerList,
    pub backup: PeerList,
    /// nginx's `peers->single`: one primary and no backup in use. Such a peer is never failed
    /// out and a request to it is never retried.
    pub single: bool,
    pub balancer: Balancer,
    pub revive: bool,
    /// The ketama ring of `hash ... consistent`, over the primaries.
    pub(crate) ring: Option<Ring>,
    /// Something picks by the active requests of every worker together
    /// ([`PeerHealth::balance_conns`](crate::PeerHealth::balance_conns)): `least_conn`,
    /// `least_time`, `random two`, or a peer's `max_conns`. Other groups leave that shared
    /// count alone, so their requests write no cache line another core writes.
    pub counts_conns: bool,
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("primary", &self.primary)
            .field("backup", &self.backup)
            .field("single", &self.single)
            .field("balancer", &self.balancer)
            .field("revive", &self.revive)
            .field("ring_points", &self.ring.as_ref().map(Ring::len))
            .finish()
    }
}

impl Upstream {
    /// nginx's `ngx_http_upstream_tries()`: non-down primaries plus non-down backups. Every
    /// balancer counts backups: nginx refuses `backup` after `hash`/`ip_hash`/`random` but
    /// accepts it before them, and their round-robin fallback then reaches the backups.
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

    /// Every peer id of this group, primaries then backups.
    pub fn ids(&self) -> std::ops::Range<PeerId> {
        self.primary.base..self.backup.base + self.backup.len()
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
                let slow = !single
                    && s.primary
                        .iter()
                        .chain(&s.backup)
                        .any(|p| p.slow_start_ms > 0);
                let scale = if slow { SLOW_START_SCALE } else { 1 };
                let primary = PeerList::new(s.primary, next, scale);
                next += primary.len();
                let backup = PeerList::new(s.backup, next, scale);
                next += backup.len();
                let ring = (s.balancer == Balancer::Hash { consistent: true })
                    .then(|| Ring::new(&primary.peers));
                let counts_conns = matches!(
                    s.balancer,
                    Balancer::LeastConn
                        | Balancer::LeastTime { .. }
                        | Balancer::Random { two: true, .. }
                ) || primary
                    .peers
                    .iter()
                    .chain(&backup.peers)
                    .any(|p| p.max_conns != 0);
                Upstream {
                    name: s.name,
                    primary,
                    backup,
                    single,
                    balancer: s.balancer,
                    revive: s.revive,
                    ring,
                    counts_conns,
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

    /// The group holding peer `id`.
    pub fn group_of(&self, id: PeerId) -> Option<UpstreamId> {
        self.upstreams.iter().position(|u| u.ids().contains(&id))
    }

    /// The peer with this id, in whichever group holds it.
    pub fn peer(&self, id: PeerId) -> Option<&PeerSpec> {
        self.upstreams.iter().find_map(|u| u.peer(id))
    }
}
