//! ringfront's engine: worker threads running monoio event loops (io_uring, epoll fallback),
//! client sessions, the upstream client with keepalive pools, the next-upstream loop, logs.
//! The binary builds a `Snapshot` from a configuration and hands it to `Engine::start`;
//! reloads swap a new snapshot in; `quit`/`stop` end the workers.

mod accel_redirect;
mod accept;
mod access;
mod access_log;
#[cfg(test)]
mod alloc_count;
mod api_write;
mod auth_crypt;
mod auth_file;
mod bind;
mod body;
mod body_bufs;
mod body_file;
mod body_spool;
mod body_stream;
mod boxed;
mod build_error;
mod check_rt;
mod client_gone;
mod clock;
mod cookie_rewrite;
mod date;
mod deadline;
mod dispatch;
pub mod dns;
mod error_redirect;
mod forwarded;
mod future_blocks;
mod geo;
mod gzip_file;
mod gzip_ok;
mod gzip_relay;
mod gzip_stream;
mod handshake;
mod hangup;
mod head_reader;
mod head_refusal;
pub mod health;
mod http_time;
mod idle;
mod idle_policy;
mod io;
mod lanes;
mod limits;
mod linger;
pub mod listen;
mod listener;
mod local;
mod location_url;
mod log_batch;
mod log_wait;
pub mod logger;
mod map;
pub mod members;
mod misdirected;
mod paced;
mod pass_url;
mod pass_vars;
mod pool;
mod precontent;
mod proxy;
#[cfg(test)]
mod proxy_alloc_tests;
mod proxy_protocol;
mod proxy_redirect;
mod quiet;
pub mod rate_limit;
mod realip;
mod relay;
mod req;
mod request_id;
mod respond;
mod response_headers;
mod retire;
mod rewrite;
mod rewrite_file;
mod rewrite_rt;
mod rewrite_state;
mod rewrite_unescape;
mod route;
mod runtime;
mod session;
pub mod snapshot;
mod splice;
mod split;
mod static_cond;
mod static_file;
mod static_index;
mod static_multipart;
mod static_path;
mod static_send;
pub mod status;
mod sticky;
mod stream;
#[cfg(test)]
mod testutil;
mod trailers;
mod try_files;
mod unix_listen;
mod upstream;
mod upstream_dns;
mod upstream_request;
mod upstream_state;
mod upstream_tls;
mod user_agent;
mod vars;
mod vars_auth;
mod vars_cookie;
mod vars_response;
mod vars_tls;
mod wake;
mod worker;

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use arc_swap::ArcSwap;

pub use listen::{claim, Claim};
pub use logger::{Logger, Sink};
pub use snapshot::{BuildError, Snapshot};

/// The error log's time stamp for now (`2026/11/29 18:43:33`, local time), for the lines the
/// binary writes before the log thread runs (`-e`).
pub fn error_stamp() -> String {
    clock::wall().error_stamp()
}

pub(crate) const RUN: u8 = 0;
pub(crate) const QUIT: u8 = 1;
pub(crate) const STOP: u8 = 2;

/// Which event loop the workers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    IoUring,
    Epoll,
}

impl Driver {
    /// io_uring when this kernel allows it, else epoll.
    pub fn detect() -> Driver {
        if monoio::utils::detect_uring() {
            Driver::IoUring
        } else {
            Driver::Epoll
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Driver::IoUring => "io_uring",
            Driver::Epoll => "epoll",
        }
    }
}

/// One worker's counters, written by that worker only (its own cache line), read by status
/// pages.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct WorkerStats {
    /// Client connections open now.
    pub connections: AtomicU64,
    /// Requests read, all connections together.
    pub requests: AtomicU64,
    /// Connections accepted, and those of them served (`stub_status`'s accepts, handled).
    pub accepted: AtomicU64,
    pub handled: AtomicU64,
    /// Requests in flight, and those of them still reading their head (`stub_status`).
    pub busy: AtomicU64,
    pub reading: AtomicU64,
}

/// A counter alone on its cache lines, so that neither its writes nor its neighbours' make
/// the other's reads miss (every worker reads or writes it).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Alone(pub(crate) AtomicU64);

/// State every worker shares.
pub struct Shared {
    pub snapshot: ArcSwap<Snapshot>,
    /// Bumped after every publish of `snapshot`; a worker keeps its own reference to the
    /// snapshot and loads it anew only when this moved (`Worker::snapshot`), so requests
    /// touch no reference count every worker writes.
    pub(crate) published: Alone,
    pub(crate) state: AtomicU8,
    /// Connection numbers (`$connection`), shared as nginx's; on lines of its own, since
    /// every accept writes it and every request reads the fields beside it.
    pub(crate) next_conn: Alone,
    pub logger: Logger,
    /// To the health checker thread (a send also wakes it).
    pub(crate) health_tx: wake::Sender<health::Event>,
    /// Wakes the owner thread of `server NAME resolve` (upstream_dns.rs).
    pub(crate) resolver_bell: wake::Notifier,
    /// Wakes each worker's main task; set by the worker once its event loop runs.
    pub(crate) wakers: Box<[OnceLock<wake::Notifier>]>,
    /// The generation each worker serves, for `reload` to wait on.
    pub(crate) applied: wake::Applied,
    pub workers: Box<[WorkerStats]>,
    /// When the engine started (Unix milliseconds), for status pages.
    pub started_unix_ms: u64,
    pub(crate) release_memory: Option<fn()>,
    /// `listen unix:` sockets, shared by the workers.
    pub(crate) unix: unix_listen::UnixSockets,
}

impl Shared {
    /// Replaces `cur` with `next` if `cur` is still the published snapshot, and tells the
    /// workers' copies so; false (nothing published) if another publish came first.
    pub(crate) fn publish(&self, cur: &Arc<Snapshot>, next: Arc<Snapshot>) -> bool {
        let prev = self.snapshot.compare_and_swap(cur, next);
        let done = Arc::ptr_eq(&prev, cur);
        if done {
            self.published.0.fetch_add(1, Ordering::Release);
        }
        done
    }

    /// Wakes every worker and the checker to look at `state` and `snapshot` again; called
    /// after changing either (a worker still starting registers before it first looks).
    fn wake_all(&self) {
        self.wake_workers();
        self.health_tx.notify();
        self.resolver_bell.notify();
    }

    /// Wakes every worker (e.g. to close the pooled connections of a peer marked down).
    pub(crate) fn wake_workers(&self) {
        for n in self.wakers.iter().filter_map(OnceLock::get) {
            n.notify();
        }
    }
}

/// How long a reload waits for every worker to serve the new configuration before it
/// reports anyway (a worker busy for that long is logged).
const RELOAD_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Start-up options that are not in the configuration file.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub workers: usize,
    pub driver: Driver,
    /// One CPU id per worker (wrapping), or none for no pinning.
    pub cpus: Vec<usize>,
    /// Called on a worker's thread when it has been quiet for a second (no request, no
    /// connection opened or closed): the binary's allocator gives freed pages back to the
    /// OS, which it otherwise does only on later allocator activity.
    pub release_memory: Option<fn()>,
}

pub struct Engine {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    checker: Option<JoinHandle<()>>,
    /// The owner thread of `server NAME resolve` (upstream_dns.rs).
    resolver: Option<JoinHandle<()>>,
}

impl Engine {
    /// Binds every listener for every worker (so errors surface here), then starts the workers.
    pub fn start(snap: Snapshot, opts: &EngineOptions, logger: Logger) -> std::io::Result<Engine> {
        let workers = opts.workers.max(1);
        // One block of request counters per worker in every peer counted from now on.
        ringfront_upstream::set_shards(workers);
        let unix = unix_listen::UnixSockets::default();
        unix.sync(&snap)?;
        let mut per_worker = Vec::with_capacity(workers);
        for _ in 0..workers {
            let ls = snap
                .listens
                .iter()
                .map(|l| listener::for_worker(l, &unix))
                .collect::<std::io::Result<Vec<_>>>()?;
            per_worker.push(ls);
        }
        let (health_tx, health_rx) = wake::channel()?;
        let (resolver_bell, resolver_rx) = wake::bell()?;
        let generation = snap.generation;
        let shared = Arc::new(Shared {
            snapshot: ArcSwap::from_pointee(snap),
            published: Alone(AtomicU64::new(1)),
            state: AtomicU8::new(RUN),
            next_conn: Alone(AtomicU64::new(0)),
            logger,
            health_tx,
            resolver_bell,
            wakers: (0..workers).map(|_| OnceLock::new()).collect(),
            applied: wake::Applied::new(workers, generation),
            workers: (0..workers).map(|_| WorkerStats::default()).collect(),
            started_unix_ms: clock::unix_ms(),
            release_memory: opts.release_memory,
            unix,
        });
        let (checker_started, checker_start) = std::sync::mpsc::channel();
        let checker = Some(health::spawn(shared.clone(), health_rx, checker_started)?);
        // Workers serve only once the checker holds the peers' states: a passive failure
        // before its first configuration would be overwritten by it ("marked up:
        // configuration loaded") and the peer put back in. A checker that cannot start
        // drops its sender (it has said so on stderr) and the workers start without it.
        let _ = checker_start.recv();
        let resolver = Some(upstream_dns::spawn(shared.clone(), resolver_rx)?);
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let mut threads = Vec::with_capacity(workers);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        for (i, listeners) in per_worker.into_iter().enumerate() {
            let shared = shared.clone();
            let driver = opts.driver;
            let cpu = (!opts.cpus.is_empty()).then(|| opts.cpus[i % opts.cpus.len()]);
            let core = cpu.and_then(|c| cores.iter().find(|id| id.id == c).copied());
            let ready = ready_tx.clone();
            let t = std::thread::Builder::new()
                .name(format!("ringfront-w{i}"))
                .spawn(move || {
                    if let Some(core) = core {
                        if !core_affinity::set_for_current(core) {
                            let _ = ready
                                .send(Err(format!("worker {i}: cannot pin to CPU {}", core.id)));
                            return;
                        }
                    }
                    runtime::run(i, shared, driver, listeners, ready);
                })?;
            threads.push(t);
        }
        drop(ready_tx);
        let engine = Engine {
            shared,
            threads,
            checker,
            resolver,
        };
        // Return only when every worker is pinned and serving, so "ready" means ready.
        for _ in 0..workers {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    engine.stop();
                    return Err(std::io::Error::other(e));
                }
                Err(_) => {
                    engine.stop();
                    return Err(std::io::Error::other("a worker exited while starting"));
                }
            }
        }
        Ok(engine)
    }

    /// Publishes a new configuration; requests in flight finish on the old one. Peers that
    /// survive keep their health, counters and keepalive connections. Returns once every
    /// worker serves it (new addresses accept, removed ones are closing), or after
    /// `RELOAD_PATIENCE` with a warning in the error log.
    /// Fails, publishing nothing, when a new `listen unix:` path cannot be bound.
    pub fn reload(&self, snap: Snapshot) -> std::io::Result<()> {
        self.shared.unix.sync(&snap)?;
        let mut snap = Some(snap);
        let (generation, old) = loop {
            let cur = self.shared.snapshot.load_full();
            let Some(mut next) = snap.take() else {
                return Ok(());
            };
            // Membership changes bump the generation too: stay above them.
            next.generation = next.generation.max(cur.generation + 1);
            // The `resolve` templates this configuration keeps keep their members.
            if let Some(cfg) = next.config.clone() {
                let members = members::carried(&cur, &cfg);
                if !members.is_empty() {
                    let g = next.generation;
                    next = Snapshot::build_with(cfg, Arc::new(members), g)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                }
            }
            next.adopt(&cur);
            let generation = next.generation;
            let next = Arc::new(next);
            if self.shared.publish(&cur, next.clone()) {
                break (generation, cur.generation);
            }
            // A membership change published meanwhile: start over from it.
            snap = Arc::try_unwrap(next).ok();
        };
        self.shared.wake_all();
        let applied = self.shared.applied.wait(generation, RELOAD_PATIENCE);
        let now = self.shared.snapshot.load_full();
        if !applied {
            logger::error_line(
                &self.shared.logger,
                &now,
                ringfront_config::LogLevel::Warn,
                0,
                0,
                format_args!(
                    "reload: not every worker serves generation {generation} after {}s",
                    RELOAD_PATIENCE.as_secs()
                ),
            );
        }
        // nginx's master says "worker process PID exited with code 0" when an old worker is
        // done; nginx's test suite waits for those words after a reload.
        logger::error_line(
            &self.shared.logger,
            &now,
            ringfront_config::LogLevel::Notice,
            0,
            0,
            format_args!(
                "reload: generation {old} exited with code 0, the workers serve generation {generation}"
            ),
        );
        Ok(())
    }

    pub fn generation(&self) -> u64 {
        self.shared.snapshot.load().generation
    }

    /// Graceful: stop accepting, finish requests in flight, then return.
    pub fn quit(self) {
        self.shared.state.store(QUIT, Ordering::SeqCst);
        self.shared.wake_all();
        self.join();
    }

    /// Fast: workers leave at once.
    pub fn stop(self) {
        self.shared.state.store(STOP, Ordering::SeqCst);
        self.shared.wake_all();
        self.join();
    }

    fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
        // The checker was woken by the state change and has left (or is leaving) its loop.
        if let Some(c) = self.checker {
            let _ = c.join();
        }
        // The resolver thread was woken by the state change too (its bell).
        if let Some(r) = self.resolver {
            let _ = r.join();
        }
        // nginx removes its unix sockets' files when it exits.
        self.shared.unix.close_all();
        self.shared.logger.flush();
    }
}
