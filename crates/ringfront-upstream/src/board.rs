//! The health board: per-peer state shared by every worker through atomics, so a failure one
//! worker sees takes effect in all of them at once and `max_conns` / `least_conn` count every
//! worker's requests (what nginx needs `zone` and a shared-memory lock for). Writers: any
//! worker through `select` (`conns` where the group reads it, `checked` by
//! compare-and-swap so exactly one request probes a peer whose quiet period ended, the
//! in-flight counters) and `free` (`conns`, `fails`, `accessed`, `checked`, the
//! response-time average). What every request counts goes to the worker's own block
//! ([`Counts`]), not to a line every worker writes.
//!
//! Without a lock, two workers may both see a peer one below `max_conns` and both take it:
//! the limit can be passed by at most one request per other worker, for as long as those
//! requests last.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// `PeerHealth::state`: selectable.
pub const UP: u8 = 0;
/// Out until probes pass: failed active checks, or a `confirm` probe failed.
pub const DOWN: u8 = 1;
/// Out while a probe decides: a `confirm` probe in flight, or a `mandatory` peer never
/// checked yet.
pub const CHECKING: u8 = 2;

/// Why a try failed, as the proxy classifies it (for counters and state-change causes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FailKind {
    /// Connection refused.
    Refused = 1,
    /// Any other connection error (reset, unreachable, closed before a response).
    Error = 2,
    Timeout = 3,
    InvalidHeader = 4,
    /// A 500/502/503/504 listed in `proxy_next_upstream`.
    Http5xx = 5,
    /// A 429 listed in `proxy_next_upstream`.
    Http429 = 6,
}

impl FailKind {
    pub const ALL: [FailKind; 6] = [
        FailKind::Refused,
        FailKind::Error,
        FailKind::Timeout,
        FailKind::InvalidHeader,
        FailKind::Http5xx,
        FailKind::Http429,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FailKind::Refused => "refused",
            FailKind::Error => "error",
            FailKind::Timeout => "timeout",
            FailKind::InvalidHeader => "invalid_header",
            FailKind::Http5xx => "http_5xx",
            FailKind::Http429 => "http_429",
        }
    }

    fn from_code(c: u32) -> Option<FailKind> {
        FailKind::ALL.into_iter().find(|k| *k as u32 == c)
    }

    fn index(self) -> usize {
        self as usize - 1
    }
}

/// Upper bounds (microseconds) of the response-time histogram buckets, 5 ms to 10 s; one
/// more bucket counts everything slower.
pub const RT_BUCKETS_US: [u64; 11] = [
    5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000,
    10_000_000,
];

/// The counters of one peer that every request writes, one block per worker thread on
/// cache lines of its own, summed when read. A count every worker wrote would move its cache
/// line between the cores on every request (measured: ringfront's user time per request rose
/// 1.8x from one to eight workers, nginx's 1.4x; docs/benchmarks.md, 2026-12-04).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Counts {
    /// Picks minus frees on this thread (wrapping: a request is freed on the thread that
    /// picked it, but the sum is what counts).
    active: AtomicU64,
    requests: AtomicU64,
    responses: [AtomicU64; 5],
    rt_sum_us: AtomicU64,
    rt_buckets: [AtomicU64; 12],
}

/// Blocks of [`Counts`] a peer makes on first use: the number of workers (`set_shards`).
static SHARDS: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The block this thread writes (`set_shard`); threads that are no worker share block 0.
    static SHARD: Cell<usize> = const { Cell::new(0) };
}

/// How many blocks of counters a peer makes: one per worker. Set before the workers start;
/// a peer counted earlier keeps the blocks it made (threads share them, modulo).
pub fn set_shards(n: usize) {
    SHARDS.store(n.max(1), Ordering::Relaxed);
}

/// The block of counters this thread writes: worker `i` writes block `i`.
pub fn set_shard(i: usize) {
    SHARD.with(|s| s.set(i));
}

/// The last state change of a peer, for status pages.
#[derive(Debug, Clone)]
pub struct StateChange {
    pub at_unix_ms: u64,
    pub state: u8,
    pub cause: String,
}

/// nginx's per-peer run-time state plus ringfront's health state and counters. Failure
/// accounting times are whole seconds on the caller's clock.
#[derive(Debug)]
pub struct PeerHealth {
    pub fails: AtomicU32,
    pub accessed: AtomicU64,
    pub checked: AtomicU64,
    /// Active requests on the peer, all workers together (nginx's `conns` under `zone`).
    /// Kept only for groups that read it ([`Upstream::counts_conns`](crate::Upstream));
    /// [`PeerHealth::conns`] is the count for status pages.
    pub conns: AtomicU32,
    /// `least_time`: moving average of the response time in microseconds (0 = no sample yet).
    pub response_time_us: AtomicU64,
    /// `least_time ... inflight`: requests picked and not yet freed, and the sum of the
    /// seconds at which they were picked (their average age is `now - sum / inflight`).
    pub inflight: AtomicU32,
    pub inflight_since: AtomicU64,
    /// `UP`, `DOWN` or `CHECKING` (see the module documentation for who writes it).
    pub state: AtomicU8,
    /// Slow start: thousandths of the weight the peer has now (1000 = all of it).
    pub ramp: AtomicU32,
    /// Slow start: when the ramp began (milliseconds on the checker's clock); 0 = none.
    pub ramp_since_ms: AtomicU64,
    /// What every request counts (tries, active requests, responses, response times): one
    /// block per worker, made on first use (see [`Counts`]).
    counts: OnceLock<Box<[Counts]>>,
    /// Failed tries by [`FailKind`].
    pub failures: [AtomicU64; 6],
    /// The last eight failure kinds, four bits each, newest in the low bits.
    pub last_failures: AtomicU32,
    /// Active-check probes run and failed.
    pub checks: AtomicU64,
    pub checks_failed: AtomicU64,
    /// Verdict of the last probe: 0 none yet, 1 passed, 2 failed.
    pub last_probe: AtomicU8,
    /// Milliseconds spent not `UP`, closed periods only (the checker adds on each return).
    pub downtime_ms: AtomicU64,
    /// Consecutive passed / failed probes of the first active check (Tengine's rise/fall).
    pub rise: AtomicU32,
    pub fall: AtomicU32,
    /// Times the checker took the peer out (`DOWN`).
    pub ejections: AtomicU64,
    /// Times the peer reached `max_fails` (nginx Plus's `unavail`).
    pub unavail: AtomicU64,
    /// The last state change and its cause (written by the checker, rarely).
    pub change: ArcCell,
}

/// A write-rarely, read-rarely shared value without a lock on anyone's hot path: the
/// checker replaces it, status pages read it.
#[derive(Debug, Default)]
pub struct ArcCell(std::sync::RwLock<Option<Arc<StateChange>>>);

impl ArcCell {
    pub fn get(&self) -> Option<Arc<StateChange>> {
        self.0.read().ok().and_then(|g| g.clone())
    }

    pub fn set(&self, v: StateChange) {
        if let Ok(mut g) = self.0.write() {
            *g = Some(Arc::new(v));
        }
    }
}

impl Default for PeerHealth {
    fn default() -> Self {
        PeerHealth {
            fails: AtomicU32::new(0),
            accessed: AtomicU64::new(0),
            checked: AtomicU64::new(0),
            conns: AtomicU32::new(0),
            response_time_us: AtomicU64::new(0),
            inflight: AtomicU32::new(0),
            inflight_since: AtomicU64::new(0),
            state: AtomicU8::new(UP),
            ramp: AtomicU32::new(1000),
            ramp_since_ms: AtomicU64::new(0),
            counts: OnceLock::new(),
            failures: Default::default(),
            last_failures: AtomicU32::new(0),
            checks: AtomicU64::new(0),
            checks_failed: AtomicU64::new(0),
            last_probe: AtomicU8::new(0),
            downtime_ms: AtomicU64::new(0),
            rise: AtomicU32::new(0),
            fall: AtomicU32::new(0),
            ejections: AtomicU64::new(0),
            unavail: AtomicU64::new(0),
            change: ArcCell::default(),
        }
    }
}

/// nginx's least_time smoothing factor, α = 0.05 = 1/20.
const EMA_DIVISOR: u64 = 20;

impl PeerHealth {
    pub fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }

    pub fn is_up(&self) -> bool {
        self.state() == UP
    }

    pub fn ramp(&self) -> u32 {
        self.ramp.load(Ordering::Relaxed)
    }

    /// Counts one failed try of `kind` and remembers it among the last eight.
    pub fn note_failure(&self, kind: FailKind) {
        if let Some(c) = self.failures.get(kind.index()) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self
            .last_failures
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some((v << 4) | kind as u32)
            });
    }

    /// Failed tries of `kind` so far.
    pub fn failures_of(&self, kind: FailKind) -> u64 {
        self.failures
            .get(kind.index())
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The last `n` (at most eight) failure kinds, oldest first.
    pub fn recent_failures(&self, n: usize) -> Vec<FailKind> {
        let v = self.last_failures.load(Ordering::Relaxed);
        let mut out: Vec<FailKind> = (0..n.min(8))
            .filter_map(|i| FailKind::from_code((v >> (4 * i)) & 0xf))
            .collect();
        out.reverse();
        out
    }

    /// Counts a response (its status class) and its time to the last byte.
    pub fn note_response(&self, status: u16, elapsed_us: u64) {
        let mine = self.mine();
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        if let Some(c) = mine.responses.get(class) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let b = RT_BUCKETS_US
            .iter()
            .position(|&le| elapsed_us <= le)
            .unwrap_or(RT_BUCKETS_US.len());
        if let Some(c) = mine.rt_buckets.get(b) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        mine.rt_sum_us.fetch_add(elapsed_us, Ordering::Relaxed);
    }

    /// Every worker's blocks of counters.
    fn blocks(&self) -> &[Counts] {
        self.counts.get_or_init(|| {
            (0..SHARDS.load(Ordering::Relaxed).max(1))
                .map(|_| Counts::default())
                .collect()
        })
    }

    /// This thread's block of counters: a worker's own; a thread numbered past the blocks
    /// shares one (`blocks` is never empty).
    fn mine(&self) -> &Counts {
        let blocks = self.blocks();
        let i = SHARD.with(Cell::get);
        match blocks.get(i) {
            Some(mine) => mine,
            None => &blocks[i % blocks.len()],
        }
    }

    fn sum(&self, f: impl Fn(&Counts) -> &AtomicU64) -> u64 {
        self.blocks()
            .iter()
            .fold(0u64, |t, c| t.wrapping_add(f(c).load(Ordering::Relaxed)))
    }

    /// Tries sent to the peer (every `select` that picked it), all workers together.
    pub fn requests(&self) -> u64 {
        self.sum(|c| &c.requests)
    }

    /// Responses of status class `class` (1 for 1xx .. 5 for 5xx; 0 for any other).
    pub fn responses(&self, class: usize) -> u64 {
        match class {
            1..=5 => self.sum(|c| &c.responses[class - 1]),
            _ => 0,
        }
    }

    /// The response-time histogram's bucket `i` (`RT_BUCKETS_US`, then one for slower; 0
    /// past that).
    pub fn rt_bucket(&self, i: usize) -> u64 {
        match i <= RT_BUCKETS_US.len() {
            true => self.sum(|c| &c.rt_buckets[i]),
            false => 0,
        }
    }

    /// The response times counted in the histogram, summed (microseconds).
    pub fn rt_sum_us(&self) -> u64 {
        self.sum(|c| &c.rt_sum_us)
    }

    pub fn fails(&self) -> u32 {
        self.fails.load(Ordering::Relaxed)
    }

    pub fn checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }

    /// Active requests on the peer, all workers together (for status pages and tests).
    pub fn conns(&self) -> u32 {
        let n = self.sum(|c| &c.active) as i64;
        u32::try_from(n.max(0)).unwrap_or(u32::MAX)
    }

    /// The active requests balancers read (`least_conn`, `max_conns`, ...): kept only when
    /// the group counts them, see [`PeerHealth::conns`] for the count every group keeps.
    pub fn balance_conns(&self) -> u32 {
        self.conns.load(Ordering::Relaxed)
    }

    pub fn response_time_us(&self) -> u64 {
        self.response_time_us.load(Ordering::Relaxed)
    }

    /// A try picked the peer: counted in this thread's block, and in the shared count when
    /// its group's balancer reads it (`shared`).
    pub(crate) fn pick(&self, shared: bool) {
        let mine = self.mine();
        mine.active.fetch_add(1, Ordering::Relaxed);
        mine.requests.fetch_add(1, Ordering::Relaxed);
        if shared {
            self.conns.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The try ended (`shared` as at its `pick`). The shared count saturates: a release
    /// without its acquire (a board reused across topologies) must not wrap it into "always
    /// at max_conns".
    pub(crate) fn unpick(&self, shared: bool) {
        self.mine().active.fetch_sub(1, Ordering::Relaxed);
        if shared {
            let _ = self
                .conns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                    Some(c.saturating_sub(1))
                });
        }
    }

    /// A pick counted everywhere (tests of the balancers that read the shared count).
    #[cfg(test)]
    pub(crate) fn acquire(&self) {
        self.pick(true);
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
    peers: Box<[Arc<PeerHealth>]>,
}

impl Board {
    pub fn new(peer_count: usize) -> Self {
        Board {
            peers: (0..peer_count)
                .map(|_| Arc::new(PeerHealth::default()))
                .collect(),
        }
    }

    /// A board of the given peers (a reload passes surviving peers' health on).
    pub fn from_peers(peers: Vec<Arc<PeerHealth>>) -> Self {
        Board {
            peers: peers.into_boxed_slice(),
        }
    }

    pub fn get(&self, id: usize) -> Option<&PeerHealth> {
        self.peers.get(id).map(|p| &**p)
    }

    /// The shared handle of a peer's health.
    pub fn arc(&self, id: usize) -> Option<&Arc<PeerHealth>> {
        self.peers.get(id)
    }

    /// Active requests on a peer across all workers.
    pub fn conns(&self, id: usize) -> u32 {
        self.get(id).map_or(0, PeerHealth::conns)
    }

    /// The shared count balancers read ([`PeerHealth::balance_conns`]).
    pub fn balance_conns(&self, id: usize) -> u32 {
        self.get(id).map_or(0, PeerHealth::balance_conns)
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}
