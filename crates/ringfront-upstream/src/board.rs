//! The health board: per-peer failure state shared by every worker through atomics, so a
//! failure one worker sees takes effect in all of them at once (what nginx needs `zone` and a
//! shared-memory lock for). Writers: any worker through `rr::free` (fails, accessed,
//! checked) and `rr::select` (checked, by compare-and-swap so exactly one request probes a
//! peer whose quiet period ended).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// nginx's `fails`, `accessed` and `checked` for one peer. Times are whole seconds.
#[derive(Debug, Default)]
pub struct PeerHealth {
    pub fails: AtomicU32,
    pub accessed: AtomicU64,
    pub checked: AtomicU64,
}

impl PeerHealth {
    pub fn fails(&self) -> u32 {
        self.fails.load(Ordering::Relaxed)
    }

    pub fn checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }
}

/// One `PeerHealth` per peer of a topology, indexed by `PeerId`.
#[derive(Debug)]
pub struct Board {
    peers: Box<[PeerHealth]>,
}

impl Board {
    pub fn new(peer_count: usize) -> Self {
        Board {
            peers: (0..peer_count).map(|_| PeerHealth::default()).collect(),
        }
    }

    pub fn get(&self, id: usize) -> Option<&PeerHealth> {
        self.peers.get(id)
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}
