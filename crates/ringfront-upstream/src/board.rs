//! The health board: per-peer state shared by every worker through atomics, so a failure one
//! worker sees takes effect in all of them at once and `max_conns` / `least_conn` count every
//! worker's requests (what nginx needs `zone` and a shared-memory lock for). Writers: any
//! worker through `select` (`conns`, `checked` by compare-and-swap so exactly one request
//! probes a peer whose quiet period ended, the in-flight counters) and `free` (`conns`,
//! `fails`, `accessed`, `checked`, the response-time average).
//!
//! Without a lock, two workers may both see a peer one below `max_conns` and both take it:
//! the limit can be passed by at most one request per other worker, for as long as those
//! requests last.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// nginx's per-peer run-time state. Times are whole seconds on the caller's clock.
#[derive(Debug, Default)]
pub struct PeerHealth {
    pub fails: AtomicU32,
    pub accessed: AtomicU64,
    pub checked: AtomicU64,
    /// Active requests on the peer, all workers together (nginx's `conns` under `zone`).
    pub conns: AtomicU32,
    /// `least_time`: moving average of the response time in microseconds (0 = no sample yet).
    pub response_time_us: AtomicU64,
    /// `least_time ... inflight`: requests picked and not yet freed, and the sum of the
    /// seconds at which they were picked (their average age is `now - sum / inflight`).
    pub inflight: AtomicU32,
    pub inflight_since: AtomicU64,
}

/// nginx's least_time smoothing factor, α = 0.05 = 1/20.
const EMA_DIVISOR: u64 = 20;

impl PeerHealth {
    pub fn fails(&self) -> u32 {
        self.fails.load(Ordering::Relaxed)
    }

    pub fn checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }

    pub fn conns(&self) -> u32 {
        self.conns.load(Ordering::Relaxed)
    }

    pub fn response_time_us(&self) -> u64 {
        self.response_time_us.load(Ordering::Relaxed)
    }

    pub(crate) fn acquire(&self) {
        self.conns.fetch_add(1, Ordering::Relaxed);
    }

    /// Saturating: a release without its acquire (a board reused across topologies) must
    /// not wrap the count into "always at max_conns".
    pub(crate) fn release(&self) {
        let _ = self
            .conns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c.saturating_sub(1))
            });
    }

    /// Fold one response time into the average: `avg += (sample - avg) * 0.05`, in integer
    /// microseconds; the first sample is taken as the average.
    pub(crate) fn record_response_time(&self, sample_us: u64) {
        let _ = self
            .response_time_us
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |avg| {
                Some(if avg == 0 {
                    sample_us
                } else {
                    let next = (u128::from(avg) * u128::from(EMA_DIVISOR - 1)
                        + u128::from(sample_us))
                        / u128::from(EMA_DIVISOR);
                    u64::try_from(next).unwrap_or(u64::MAX)
                })
            });
    }

    pub(crate) fn inflight_start(&self, now: u64) {
        let _ = self
            .inflight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_add(1))
            });
        let _ = self
            .inflight_since
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                Some(s.saturating_add(now))
            });
    }

    pub(crate) fn inflight_done(&self, since: u64) {
        let _ = self
            .inflight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
        let _ = self
            .inflight_since
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                Some(s.saturating_sub(since))
            });
    }

    /// Average age in seconds of the requests in flight, if any.
    pub(crate) fn inflight_age(&self, now: u64) -> Option<u64> {
        let n = u64::from(self.inflight.load(Ordering::Relaxed));
        if n == 0 {
            return None;
        }
        let since = self.inflight_since.load(Ordering::Relaxed);
        Some(now.saturating_mul(n).saturating_sub(since) / n)
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

    /// Active requests on a peer across all workers.
    pub fn conns(&self, id: usize) -> u32 {
        self.get(id).map_or(0, PeerHealth::conns)
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}
