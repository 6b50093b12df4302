//! Worker threads: one monoio runtime per thread (io_uring, or epoll when io_uring is not
//! available), optionally pinned to a core, each with its own `SO_REUSEPORT` listeners. A
//! worker owns its nginx-style peer state and keepalive pools (`!Send`), reads the shared
//! snapshot through `ArcSwap`, and watches the engine's run state to reload listeners, drain
//! on QUIT and stop on TERM. Its main task sleeps until woken: by the engine (reload,
//! quit, stop) through its bell, by its own last request ending while it drains or waits to
//! release memory, or by the one-shot quiet timer.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::net::TcpListener;
use ringfront_config::LogLevel;
use ringfront_upstream::WorkerPeers;

use crate::pool::Pool;
use crate::quiet::Quiet;
use crate::snapshot::Snapshot;
use crate::wake::Signal;
use crate::{Driver, Shared, RUN, STOP};

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

pub struct Worker {
    pub index: usize,
    pub shared: Arc<Shared>,
    /// Requests being served (a connection idle in keepalive is not busy).
    pub busy: Cell<usize>,
    /// Idle keepalive client connections, oldest first.
    pub idle: crate::idle::IdleQueue,
    /// Spare request buffers, so that idle connections hold none.
    bufs: RefCell<Vec<Vec<u8>>>,
    state: RefCell<Rc<PeerState>>,
    /// Wakes the main task (raised by the bell, or by `poke`).
    wake: Rc<Signal>,
    /// The main task wants to hear when the worker may have gone idle.
    watch: Cell<bool>,
    /// Wakes the keepalive sweep: raised by every bell (a reload, a peer marked down) and,
    /// while the sweep waits with nothing pooled, by the next connection pooled.
    pub sweep: Signal,
    /// The sweep waits with nothing pooled.
    pub sweep_parked: Cell<bool>,
}

/// The size of a request buffer, and how many spare ones a worker keeps (256 KiB at most).
const BUF_SIZE: usize = 4096;
const SPARE_BUFS: usize = 64;

impl Worker {
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.snapshot.load_full()
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

    /// This worker's counters for status pages.
    pub fn stats(&self) -> &crate::WorkerStats {
        static NONE: crate::WorkerStats = crate::WorkerStats {
            connections: std::sync::atomic::AtomicU64::new(0),
            requests: std::sync::atomic::AtomicU64::new(0),
        };
        self.shared.workers.get(self.index).unwrap_or(&NONE)
    }

    /// Open client connections (for `worker_connections`, draining and status pages). Only
    /// this worker writes the count, so a load and a store suffice.
    pub fn conns(&self) -> usize {
        self.stats().connections.load(Ordering::Relaxed) as usize
    }

    pub fn conn_opened(&self) {
        let c = &self.stats().connections;
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    pub fn conn_closed(&self) {
        let c = &self.stats().connections;
        c.store(
            c.load(Ordering::Relaxed).saturating_sub(1),
            Ordering::Relaxed,
        );
        self.poke();
    }

    /// A request ended (the session's busy guard). Costs a `Cell` read unless the main task
    /// watches (draining, or waiting for activity after a memory release).
    pub fn request_done(&self) {
        let n = self.busy.get() - 1;
        self.busy.set(n);
        if n == 0 {
            self.poke();
        }
    }

    fn poke(&self) {
        if self.watch.replace(false) {
            self.wake.raise();
        }
    }

    fn activity(&self) -> crate::quiet::Activity {
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

    pub fn stopping(&self) -> bool {
        self.shared.state.load(Ordering::Relaxed) != RUN
    }

    /// One error-log line in nginx's layout: `YYYY/MM/DD HH:MM:SS [level] PID#TID: *CONN msg`.
    pub fn log(&self, snap: &Snapshot, level: LogLevel, conn: u64, msg: std::fmt::Arguments<'_>) {
        crate::logger::error_line(&self.shared.logger, snap, level, self.index, conn, msg);
    }
}

/// A listening socket with `SO_REUSEPORT` (one per worker and address) and nginx's backlog.
/// Bound on the calling thread, so start-up errors reach the caller. The binary claims the
/// address first (`listen::claim`), so no other instance is in the group.
pub fn bind_std(addr: SocketAddr, backlog: i32) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())
        .map_err(|e| crate::listen::bind_failed(addr, &e))?;
    sock.listen(backlog)?;
    Ok(sock.into())
}

/// Stops one accept loop. The accept is cancelled through monoio's canceller and still
/// awaited to its end, never dropped in flight: on io_uring a dropped accept can complete in
/// the kernel with nobody to take the connection, which then waits forever.
#[derive(Default)]
struct AcceptCtl {
    gone: Cell<bool>,
    canceller: RefCell<monoio::io::Canceller>,
}

impl AcceptCtl {
    fn stop(&self) {
        self.gone.set(true);
        let c = self.canceller.replace(monoio::io::Canceller::new());
        let _ = c.cancel();
    }
}

async fn accept_loop(w: Rc<Worker>, listener: Rc<TcpListener>, ctl: Rc<AcceptCtl>) {
    loop {
        if w.stopping() || ctl.gone.get() {
            return;
        }
        let handle = ctl.canceller.borrow().handle();
        match listener.cancelable_accept(handle).await {
            Ok((stream, _)) => {
                let snap = w.snapshot();
                // Full: make room by closing the oldest idle keepalive connection, as nginx
                // does; refuse the newcomer only when every connection is busy.
                if w.conns() >= snap.worker_connections && !w.idle.close_oldest() {
                    w.log(
                        &snap,
                        LogLevel::Alert,
                        0,
                        format_args!(
                            "{} worker_connections are not enough",
                            snap.worker_connections
                        ),
                    );
                    drop(stream);
                    continue;
                }
                let _ = stream.set_nodelay(true);
                if let Some(conn) = crate::session::Conn::new(w.clone(), stream) {
                    monoio::spawn(crate::session::serve(conn));
                }
            }
            Err(_) if w.stopping() || ctl.gone.get() => return,
            Err(e) => {
                // Out of descriptors (EMFILE/ENFILE) or memory: stop accepting for a while
                // instead of spinning on the same error, as nginx does (500 ms).
                let snap = w.snapshot();
                w.log(
                    &snap,
                    LogLevel::Crit,
                    0,
                    format_args!("accept() failed {}", crate::io::errno_text(&e)),
                );
                monoio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

fn spawn_accept(w: &Rc<Worker>, listener: TcpListener) -> Rc<AcceptCtl> {
    let ctl = Rc::new(AcceptCtl::default());
    monoio::spawn(accept_loop(w.clone(), Rc::new(listener), ctl.clone()));
    ctl
}

async fn worker_main(w: Rc<Worker>, initial: Vec<(SocketAddr, TcpListener)>) {
    let mut listeners: HashMap<SocketAddr, Rc<AcceptCtl>> = HashMap::new();
    let reaper = w.clone();
    monoio::spawn(async move { reaper.idle.reap().await });
    monoio::spawn(crate::pool::sweep::run(w.clone()));
    for (addr, l) in initial {
        listeners.insert(addr, spawn_accept(&w, l));
    }
    let mut generation = w.snapshot().generation;
    // A second without requests or connections opening or closing: let the allocator give
    // back what the last busy period freed (once per quiet period).
    let mut quiet = w
        .shared
        .release_memory
        .map(|_| Quiet::new(Instant::now(), w.activity(), w.busy.get()));
    // Each pass looks at everything a wakeup can be for; the bell is cleared before the
    // look, so an engine change made during it wakes the task again.
    loop {
        if w.stopping() {
            listeners.values().for_each(|c| c.stop());
            break;
        }
        let snap = w.snapshot();
        if snap.generation != generation {
            generation = snap.generation;
            rebind(&w, &mut listeners, &snap);
            let _ = w.peer_state(&snap);
            w.shared.applied.set(w.index, generation);
        }
        let watching = quiet.is_some_and(|q| q.watching());
        w.watch.set(watching);
        match quiet.and_then(|q| q.due()) {
            Some(due) => {
                monoio::select! {
                    _ = w.wake.wait() => {}
                    _ = monoio::time::sleep_until(due.into()) => {}
                }
            }
            None => w.wake.wait().await,
        }
        w.sweep.raise();
        let poked = watching && !w.watch.replace(false);
        if let (Some(q), Some(release)) = (quiet.as_mut(), w.shared.release_memory) {
            if q.update(Instant::now(), w.activity(), w.busy.get(), poked) {
                release();
            }
        }
    }
    // QUIT: listeners are closed (accept loops ended); finish the requests in flight (the
    // last one to end pokes this task), then drop idle keepalive connections with the
    // runtime. STOP (which rings the bell): leave at once.
    while w.shared.state.load(Ordering::SeqCst) != STOP && w.busy.get() > 0 {
        w.watch.set(true);
        w.wake.wait().await;
    }
    w.watch.set(false);
}

/// After a reload: keep every listener that survives (closing one would drop the
/// connections queued on it); open new addresses, close removed ones.
fn rebind(w: &Rc<Worker>, listeners: &mut HashMap<SocketAddr, Rc<AcceptCtl>>, snap: &Snapshot) {
    listeners.retain(|addr, ctl| {
        let keep = snap.listens.iter().any(|l| l.addr == *addr);
        if !keep {
            ctl.stop();
        }
        keep
    });
    for l in &snap.listens {
        if listeners.contains_key(&l.addr) {
            continue;
        }
        match bind_std(l.addr, l.backlog).and_then(TcpListener::from_std) {
            Ok(lst) => {
                listeners.insert(l.addr, spawn_accept(w, lst));
            }
            Err(e) => w.log(snap, LogLevel::Emerg, 0, format_args!("{e}")),
        }
    }
}

/// Runs one worker on the current thread until the engine stops. `ready` gets one message:
/// `Ok` once the event loop runs with every listener registered, or why it could not start.
pub fn run(
    index: usize,
    shared: Arc<Shared>,
    driver: Driver,
    listeners: Vec<std::net::TcpListener>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let snap = shared.snapshot.load_full();
    let w = Rc::new(Worker {
        index,
        shared: shared.clone(),
        busy: Cell::new(0),
        idle: Default::default(),
        bufs: Default::default(),
        state: RefCell::new(Rc::new(PeerState::new(&snap))),
        wake: Rc::new(Signal::default()),
        sweep: Signal::default(),
        sweep_parked: Cell::new(false),
        watch: Cell::new(false),
    });
    let started = ready.clone();
    let fut = async move {
        // Reachable by the engine before the first look at its state and snapshot.
        let installed = crate::wake::bell().and_then(|(notifier, bell)| {
            bell.install(w.wake.clone())?;
            let _ = shared.wakers.get(index).map(|slot| slot.set(notifier));
            Ok(())
        });
        if let Err(e) = installed {
            let _ = started.send(Err(format!("worker {index}: wakeup bell: {e}")));
            return;
        }
        let mut bound = Vec::new();
        for (l, conf) in listeners.into_iter().zip(snap.listens.iter()) {
            match TcpListener::from_std(l) {
                Ok(l) => bound.push((conf.addr, l)),
                Err(e) => {
                    let _ =
                        started.send(Err(format!("worker {index}: listener {}: {e}", conf.addr)));
                    return;
                }
            }
        }
        let _ = started.send(Ok(()));
        worker_main(w, bound).await
    };
    let entries = 1024;
    match driver {
        Driver::IoUring => {
            let build = |flags: RingFlags| {
                let mut urb = io_uring::IoUring::builder();
                match flags {
                    RingFlags::Defer => {
                        urb.setup_coop_taskrun()
                            .setup_single_issuer()
                            .setup_defer_taskrun();
                    }
                    RingFlags::Coop => {
                        urb.setup_coop_taskrun().setup_taskrun_flag();
                    }
                    RingFlags::Plain => {}
                }
                monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                    .with_entries(entries)
                    .uring_builder(urb)
                    .enable_timer()
                    .build()
            };
            let wanted = ring_flags();
            let rt = build(wanted)
                .or_else(|_| build(RingFlags::Coop))
                .or_else(|_| build(RingFlags::Plain));
            match rt {
                Ok(mut rt) => rt.block_on(fut),
                Err(e) => {
                    let _ = ready.send(Err(format!("worker {index}: io_uring runtime: {e}")));
                }
            }
        }
        Driver::Epoll => {
            match monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build()
            {
                Ok(mut rt) => rt.block_on(fut),
                Err(e) => {
                    let _ = ready.send(Err(format!("worker {index}: epoll runtime: {e}")));
                }
            }
        }
    }
}

/// io_uring setup flags, strongest first. `COOP_TASKRUN` stops the kernel interrupting the
/// worker (an IPI, a VM exit under virtualisation) for every completion; `DEFER_TASKRUN`
/// (Linux 6.1+) runs completion work only when the worker waits. Older kernels refuse the
/// flags and the next weaker set is tried.
#[derive(Clone, Copy, Debug)]
enum RingFlags {
    Defer,
    Coop,
    Plain,
}

fn ring_flags() -> RingFlags {
    match std::env::var("RINGFRONT_URING_FLAGS").as_deref() {
        Ok("plain") => RingFlags::Plain,
        Ok("coop") => RingFlags::Coop,
        _ => RingFlags::Defer,
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
