//! Per-request selection state: which list is in use, what was tried, tries left, and what
//! the hash and random balancers carry from one try of a request to the next.

use crate::topology::{Balancer, PeerId, Topology, UpstreamId};
use crate::tried::Tried;

/// What a balancer remembers between the tries of one request (nginx keeps these in its
/// per-request peer data: `hp->tries/rehash/hash`, `iphp->tries/hash`, `rp->tries`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BalancerState {
    /// Fruitless re-hashes / random draws / ring steps; past 20, round robin takes over.
    pub tries: u32,
    /// `ip_hash`: the running hash (starts at 89). `hash`: the accumulated hash.
    /// `hash consistent`: the index of the current ring point.
    pub hash: u64,
    /// `hash`: how many times the key has been hashed.
    pub rehash: u64,
    /// `hash consistent`: the key's point was looked up.
    pub keyed: bool,
}

/// Seed of nginx's `ip_hash`.
const IP_HASH_SEED: u64 = 89;

#[derive(Debug, Clone)]
pub struct Attempt {
    pub upstream: UpstreamId,
    /// Tries left including the current one; 0 means no more peers may be tried.
    pub tries: u32,
    pub(crate) in_backup: bool,
    pub(crate) tried: Tried,
    pub(crate) current: Option<PeerId>,
    pub(crate) revived: bool,
    pub(crate) bal: BalancerState,
    /// `least_time ... inflight`: when the current pick was counted in flight.
    pub(crate) inflight_since: Option<u64>,
    /// `sticky`: the peer the request names, preferred while it can be selected.
    pub(crate) pin: Option<PeerId>,
    /// `sticky`: the first backup with the server id the request names, preferred on the
    /// backup list (nginx looks the id up on the list the request is on).
    pub(crate) backup_pin: Option<PeerId>,
}

impl Attempt {
    /// `cap` is `proxy_next_upstream_tries` (0 = no cap).
    pub fn new(topo: &Topology, upstream: UpstreamId, cap: u32) -> Self {
        let mut at = Attempt {
            upstream,
            tries: 0,
            in_backup: false,
            tried: Tried::default(),
            current: None,
            revived: false,
            bal: BalancerState::default(),
            inflight_since: None,
            pin: None,
            backup_pin: None,
        };
        at.reset(topo, upstream, cap);
        at
    }

    /// Start over for a new request, keeping the tried bitmap's memory: a worker that reuses
    /// one `Attempt` never allocates on the request path.
    pub fn reset(&mut self, topo: &Topology, upstream: UpstreamId, cap: u32) {
        let up = topo.upstreams.get(upstream);
        let mut tries = up.map_or(0, |u| u.tries());
        if cap != 0 {
            tries = tries.min(cap);
        }
        let width = up.map_or(0, |u| u.primary.len().max(u.backup.len()));
        self.upstream = upstream;
        self.tries = tries;
        self.in_backup = false;
        self.tried.reset(width);
        self.current = None;
        self.revived = false;
        self.bal = BalancerState::default();
        if up.is_some_and(|u| u.balancer == Balancer::IpHash) {
            self.bal.hash = IP_HASH_SEED;
        }
        self.inflight_since = None;
        self.pin = None;
        self.backup_pin = None;
    }

    /// `sticky`: prefer peer `id` (of this group) on every try it can be selected on.
    pub fn pin(&mut self, id: Option<PeerId>) {
        self.pin = id;
    }

    /// `sticky`: on the backup list prefer backup `id` (one with the server id of the
    /// pinned peer, when that is a primary).
    pub fn pin_backup(&mut self, id: Option<PeerId>) {
        self.backup_pin = id;
    }

    /// The pin on the list the request is on.
    pub(crate) fn pin_here(&self) -> Option<PeerId> {
        match self.in_backup {
            true => self.backup_pin.or(self.pin),
            false => self.pin,
        }
    }

    /// The peer of the try in progress (selected and not yet freed).
    pub fn current(&self) -> Option<PeerId> {
        self.current
    }

    /// Whether the request moved on to the backup servers.
    pub fn in_backup(&self) -> bool {
        self.in_backup
    }
}

/// What `select` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    Peer(PeerId),
    /// Nothing selectable: nginx's "no live upstreams" (`NGX_BUSY`).
    NoLive,
}
