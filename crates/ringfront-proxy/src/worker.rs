//! What one worker thread owns (`!Send`): its nginx-style peer state and keepalive pool per
//! snapshot generation, its idle-connection queue, spare request buffers, counters and the
//! signals that wake its tasks. The thread and its loops are in `runtime.rs`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ringfront_config::LogLevel;
use ringfront_upstream::WorkerPeers;

use crate::pool::Pool;
use crate::snapshot::Snapshot;
use crate::wake::Signal;
use crate::{Shared, RUN};

/// Per-worker peer state of one snapshot generation.
pub struct PeerState {
    pub generation: u64,
    pub peers: RefCell<WorkerPeers>,
    pub pool: RefCell<Pool>,
}

impl PeerState {
    fn new(snap: &Snapshot) -> Self {
        PeerState {
            generation: snap.generation,
            peers: RefCell::new(WorkerPeers::new(&snap.topology, seed(snap.generation))),
            pool: RefCell::new(Pool::new(snap.topology.peer_count)),
        }
    }
}

/// A worker's reference to the published snapshot. The `Rc` is the point: cloning it per
/// request touches only this worker's count, where cloning the `Arc` would write a count
/// every worker writes.
#[allow(clippy::redundant_allocation)]
pub type LocalSnapshot = Rc<Arc<Snapshot>>;

pub struct Worker {
    pub index: usize,
    pub shared: Arc<Shared>,
    /// Requests being served (a connection idle in keepalive is not busy).
    pub busy: Cell<usize>,
    /// Idle keepalive client connections, oldest first.
    pub idle: crate::idle::IdleQueue,
    /// Idle client connections waiting with a read posted (idle_policy.rs).
    pub fat_idle: Cell<usize>,
    /// Spare request buffers, so that idle connections hold none.
    bufs: RefCell<Vec<Vec<u8>>>,
    /// Spare large buffers for response bodies (body_bufs.rs).
    pub big_bufs: crate::body_bufs::BigBufs,
    /// Spare blocks for request futures and for idle connections' posted reads
    /// (future_blocks.rs).
    pub request_blocks: crate::future_blocks::Blocks,
    pub wait_blocks: crate::future_blocks::Blocks,
    /// Emptied pipes for spliced bodies (splice.rs).
    pub pipes: crate::splice::Pipes,
    state: RefCell<Rc<PeerState>>,
    /// This worker's reference to the published snapshot and the `Shared::published` count
    /// it was loaded at: a request clones the `Rc`, not the shared `Arc`, whose count every
    /// worker would write (a cache line moving between cores on every request).
    snap: RefCell<(u64, LocalSnapshot)>,
    /// Wakes the main task (raised by the bell, or by `poke`).
    pub(crate) wake: Rc<Signal>,
    /// The main task wants to hear when the worker may have gone idle.
    pub(crate) watch: Cell<bool>,
    /// Wakes the keepalive sweep: raised by every bell (a reload, a peer marked down) and,
    /// while the sweep waits with nothing pooled, by the next connection pooled.
    pub sweep: Signal,
    /// The sweep waits with nothing pooled.
    pub sweep_parked: Cell<bool>,
    /// `worker_shutdown_timeout` after a reload: when the connections accepted before it
    /// close.
    pub retire: crate::retire::Retire,
    /// The resolver's cache and counters (`proxy_pass` with variables).
    pub dns: crate::dns::WorkerDns,
    /// Log lines this worker handed to the log thread.
    pub(crate) logged: Cell<u64>,
    /// Access-log lines not handed over yet (log_batch.rs).
    pub(crate) log_lines: crate::log_batch::Batch,
    /// Waiting for the log thread (`log_wait`), made on first use; `None` if it cannot be.
    log_wait: std::cell::OnceCell<Option<crate::log_wait::LogWait>>,
}

/// Adds `by` to a counter only this worker writes (a load and a store, no locked
/// read-modify-write).
fn bump(c: &std::sync::atomic::AtomicU64, by: i64) {
    let v = c.load(Ordering::Relaxed).saturating_add_signed(by);
    c.store(v, Ordering::Relaxed);
}

/// The size of a request buffer (a client head's read makes this much room, session.rs
/// `HEAD_READ`, so a fresh connection's buffer is not grown before its first read), and how
/// many spare ones a worker keeps: enough for every request of a busy worker to take one
/// without allocating (each in flight holds up to three; 8 MiB at most), trimmed to
/// `QUIET_BUFS` (256 KiB) when the worker has been quiet.
pub(crate) const BUF_SIZE: usize = 8192;
const SPARE_BUFS: usize = 512;
const QUIET_BUFS: usize = 32;

/// Spare request-future blocks a worker keeps (about 10 KiB each: 2.5 MiB at most; a posted
/// read's block is about 0.5 KiB), and after a quiet spell.
const SPARE_REQUEST_BLOCKS: usize = 256;
const QUIET_REQUEST_BLOCKS: usize = 8;

impl Worker {
    pub fn new(index: usize, shared: Arc<Shared>, snap: &Snapshot) -> Self {
        let published = Rc::new(shared.snapshot.load_full());
        let log_lines = crate::log_batch::Batch::new(shared.logger.clone());
        Worker {
            index,
            shared,
            busy: Cell::new(0),
            idle: Default::default(),
            fat_idle: Cell::new(0),
            bufs: Default::default(),
            big_bufs: Default::default(),
            request_blocks: crate::future_blocks::Blocks::new(SPARE_REQUEST_BLOCKS),
            wait_blocks: crate::future_blocks::Blocks::new(SPARE_REQUEST_BLOCKS),
            pipes: Default::default(),
            state: RefCell::new(Rc::new(PeerState::new(snap))),
            snap: RefCell::new((0, published)),
            wake: Rc::new(Signal::default()),
            sweep: Signal::default(),
            sweep_parked: Cell::new(false),
            watch: Cell::new(false),
            retire: Default::default(),
            dns: Default::default(),
            logged: Cell::new(0),
            log_lines,
            log_wait: Default::default(),
        }
    }

    /// The published snapshot: this worker's reference, loaded anew when a publish moved
    /// `Shared::published` since (one plain load per call otherwise).
    pub fn snapshot(&self) -> LocalSnapshot {
        let now = self.shared.published.0.load(Ordering::Acquire);
        let mut cached = self.snap.borrow_mut();
        if cached.0 != now {
            *cached = (now, Rc::new(self.shared.snapshot.load_full()));
        }
        cached.1.clone()
    }

    /// The peer state for `snap`; rebuilt when a reload published a newer generation.
    pub fn peer_state(&self, snap: &Snapshot) -> Rc<PeerState> {
        let cur = self.state.borrow().clone();
        if cur.generation == snap.generation {
            return cur;
        }
        let fresh = PeerState::new(snap);
        // Keep the idle upstream connections of peers that survived the reload.
        if let Some(c) = snap
            .carried
            .as_ref()
            .filter(|c| c.generation == cur.generation)
        {
            let old = std::mem::take(&mut *cur.pool.borrow_mut());
            let limits = |g: usize| {
                snap.groups
                    .get(g)
                    .map_or((0, Duration::ZERO), |g| (g.keepalive, g.keepalive_timeout))
            };
            *fresh.pool.borrow_mut() = Pool::carry(old, &c.from, &snap.topology, limits);
        }
        let fresh = Rc::new(fresh);
        if snap.generation > cur.generation {
            *self.state.borrow_mut() = fresh.clone();
        }
        fresh
    }

    /// The generation of the newest peer state this worker has built (no snapshot load).
    pub fn current_generation(&self) -> u64 {
        self.state.borrow().generation
    }

    /// The peer state of the newest generation this worker has seen (no snapshot load).
    pub fn current_state(&self) -> Rc<PeerState> {
        self.state.borrow().clone()
    }

    /// This worker's counters for status pages.
    pub fn stats(&self) -> &crate::WorkerStats {
        static NONE: crate::WorkerStats = crate::WorkerStats {
            connections: std::sync::atomic::AtomicU64::new(0),
            requests: std::sync::atomic::AtomicU64::new(0),
            accepted: std::sync::atomic::AtomicU64::new(0),
            handled: std::sync::atomic::AtomicU64::new(0),
            busy: std::sync::atomic::AtomicU64::new(0),
            reading: std::sync::atomic::AtomicU64::new(0),
        };
        self.shared.workers.get(self.index).unwrap_or(&NONE)
    }

    /// Open client connections (for `worker_connections`, draining and status pages). Only
    /// this worker writes the count, so a load and a store suffice.
    pub fn conns(&self) -> usize {
        self.stats().connections.load(Ordering::Relaxed) as usize
    }

    pub fn conn_opened(&self) {
        let s = self.stats();
        bump(&s.connections, 1);
        bump(&s.handled, 1);
    }

    /// A connection was accepted (served or not: `stub_status`'s accepts).
    pub fn conn_accepted(&self) {
        bump(&self.stats().accepted, 1);
    }

    /// A request's first byte arrived: it is busy, reading its head.
    pub fn request_started(&self) {
        self.busy.set(self.busy.get() + 1);
        let s = self.stats();
        s.requests.fetch_add(1, Ordering::Relaxed);
        bump(&s.busy, 1);
        bump(&s.reading, 1);
    }

    /// The request is over as `stub_status` counts it (no longer writing): its log line is
    /// handed over and its connection is to close without a lingering close. The worker
    /// still waits for it while draining, until `request_done`.
    pub fn request_answered(&self) {
        bump(&self.stats().busy, -1);
    }

    /// The request's head is in: it is no longer reading.
    pub fn head_read(&self) {
        bump(&self.stats().reading, -1);
    }

    pub fn conn_closed(&self) {
        let c = &self.stats().connections;
        c.store(
            c.load(Ordering::Relaxed).saturating_sub(1),
            Ordering::Relaxed,
        );
        self.poke();
    }

    /// A request ended (the session's busy guard); `counted`: not yet taken off the
    /// `stub_status` count by `request_answered`. Costs a `Cell` read unless the main task
    /// watches (draining, or waiting for activity after a memory release).
    pub fn request_done(&self, counted: bool) {
        let n = self.busy.get() - 1;
        self.busy.set(n);
        if counted {
            bump(&self.stats().busy, -1);
        }
        if n == 0 {
            self.poke();
        }
    }

    fn poke(&self) {
        if self.watch.replace(false) {
            self.wake.raise();
        }
    }

    pub(crate) fn activity(&self) -> crate::quiet::Activity {
        (self.stats().requests.load(Ordering::Relaxed), self.conns())
    }

    /// An empty buffer with room for `BUF_SIZE` bytes.
    pub fn take_buf(&self) -> Vec<u8> {
        self.bufs
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BUF_SIZE))
    }

    /// Keeps `buf` for another request unless there are enough spares, or it grew large.
    pub fn give_buf(&self, mut buf: Vec<u8>) {
        let mut bufs = self.bufs.borrow_mut();
        if (BUF_SIZE..=2 * BUF_SIZE).contains(&buf.capacity()) && bufs.len() < SPARE_BUFS {
            buf.clear();
            bufs.push(buf);
        }
    }

    /// After a busy period: keeps only a quiet worker's share of the spares its requests
    /// reuse (buffers, outbound requests, header and try lists), so the allocator can give the rest
    /// back.
    pub fn trim_spares(&self) {
        let mut bufs = self.bufs.borrow_mut();
        bufs.truncate(QUIET_BUFS);
        bufs.shrink_to_fit();
        self.request_blocks.trim(QUIET_REQUEST_BLOCKS);
        self.wait_blocks.trim(QUIET_REQUEST_BLOCKS);
        crate::upstream_request::trim_spares();
        ringfront_http::trim_spare_headers();
        ringfront_upstream::exchange::trim_tries();
    }

    pub fn stopping(&self) -> bool {
        self.shared.state.load(Ordering::Relaxed) != RUN
    }

    /// One error-log line in nginx's layout: `YYYY/MM/DD HH:MM:SS [level] PID#TID: *CONN msg`.
    pub fn log(&self, snap: &Snapshot, level: LogLevel, conn: u64, msg: std::fmt::Arguments<'_>) {
        // After the access-log lines before it, should both go to one file.
        self.log_lines.hand_over();
        if crate::logger::error_line(&self.shared.logger, snap, level, self.index, conn, msg) {
            self.logged.set(self.logged.get() + 1);
        }
    }

    /// Waits (without blocking the worker, at most `log_wait::MAX_WAIT`) until the lines
    /// this worker handed over are in their files, if any were since `logged` was read as
    /// `since`: a connection about to close waits, as nginx writes before it closes.
    pub(crate) async fn logs_written_since(&self, since: u64) {
        if self.logged.get() == since {
            return;
        }
        let Some(lw) = self.log_wait.get_or_init(crate::log_wait::LogWait::install) else {
            return;
        };
        let (acks, seq) = lw.next_mark();
        self.log_lines.hand_over();
        self.shared.logger.mark(acks, seq);
        let _ = crate::deadline::timeout(crate::log_wait::MAX_WAIT, lw.written(seq)).await;
    }
}

/// A per-worker, per-generation seed for `random`: different workers must not draw the same
/// sequence. Not cryptographic; the pure crate takes it as input.
fn seed(generation: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let thread = std::thread::current().id();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&(thread, generation, nanos, std::process::id()), &mut h);
    std::hash::Hasher::finish(&h)
}
