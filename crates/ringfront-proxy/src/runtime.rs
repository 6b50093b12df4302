//! Worker threads: one monoio runtime per thread (io_uring, or epoll when io_uring is not
//! available), optionally pinned to a core, each with its own `SO_REUSEPORT` listeners (a descriptor of
//! the engine's one socket for `listen unix:`) and accept loops (accept.rs), its keepalive reaper and pool sweep. The main task watches the engine's run
//! state to reload listeners, drain on QUIT and stop on TERM, and sleeps until woken: by
//! the engine (reload, quit, stop) through its bell, by its own last request ending while it
//! drains or waits to release memory, or by the one-shot quiet timer.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringfront_config::LogLevel;

use crate::accept::{self, AcceptCtl};
use crate::listener::{for_worker, Listener, StdListener};
use crate::quiet::Quiet;
use crate::snapshot::Snapshot;
use crate::worker::Worker;
use crate::{Driver, Shared, STOP};

async fn worker_main(w: Rc<Worker>, initial: Vec<(SocketAddr, Listener)>, accepts: usize) {
    let mut listeners: HashMap<SocketAddr, Rc<AcceptCtl>> = HashMap::new();
    let reaper = w.clone();
    monoio::spawn(async move { reaper.idle.reap().await });
    monoio::spawn(crate::deadline::reap());
    monoio::spawn(sweep(w.clone()));
    for (addr, l) in initial {
        listeners.insert(addr, accept::spawn(&w, l, accepts));
    }
    let mut generation = w.snapshot().generation;
    // The configuration's `worker_shutdown_timeout`, for the connections accepted under it.
    let mut shutdown_timeout = w.snapshot().shutdown_timeout;
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
            // A membership change (a name resolved anew) retires no connection.
            if let (Some(t), false) = (shutdown_timeout, snap.membership_only) {
                w.retire.announce(snap.generation, Instant::now() + t);
            }
            shutdown_timeout = snap.shutdown_timeout;
            generation = snap.generation;
            rebind(&w, &mut listeners, &snap, accepts);
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
                w.trim_spares();
                release();
            }
        }
    }
    // QUIT: listeners are closed (accept loops ended); finish the requests in flight (the
    // last one to end pokes this task), then drop idle keepalive connections with the
    // runtime; with `worker_shutdown_timeout`, drop whatever is still open when it passes.
    // STOP (which rings the bell): leave at once.
    let deadline = shutdown_timeout.map(|t| Instant::now() + t);
    while w.shared.state.load(Ordering::SeqCst) != STOP && w.busy.get() > 0 {
        w.watch.set(true);
        match deadline {
            None => w.wake.wait().await,
            Some(at) => {
                let passed = monoio::select! {
                    _ = w.wake.wait() => false,
                    _ = monoio::time::sleep_until(at.into()) => true,
                };
                if passed {
                    break;
                }
            }
        }
    }
    w.watch.set(false);
}

/// Runs the sweep of `w`'s current keepalive pool until the worker ends.
async fn sweep(w: Rc<Worker>) {
    loop {
        let wait = {
            let snap = w.snapshot();
            let state = w.peer_state(&snap);
            let now = crate::clock::now_ms();
            let next = state
                .pool
                .borrow_mut()
                .sweep(now, |p| crate::pool::sweep::down(&snap.board, p));
            next.map(|at| {
                Duration::from_millis(at.saturating_sub(now)).max(Duration::from_millis(1))
            })
        };
        match wait {
            Some(wait) => {
                monoio::select! {
                    _ = monoio::time::sleep(wait) => {}
                    _ = w.sweep.wait() => {}
                }
            }
            None => {
                w.sweep_parked.set(true);
                w.sweep.wait().await;
                w.sweep_parked.set(false);
            }
        }
    }
}

/// After a reload: keep every listener that survives (closing one would drop the
/// connections queued on it); open new addresses, close removed ones.
fn rebind(
    w: &Rc<Worker>,
    listeners: &mut HashMap<SocketAddr, Rc<AcceptCtl>>,
    snap: &Snapshot,
    accepts: usize,
) {
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
        match for_worker(l, &w.shared.unix).and_then(|s| Listener::from_std(s, l.addr)) {
            Ok(lst) => {
                listeners.insert(l.addr, accept::spawn(w, lst, accepts));
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
    listeners: Vec<StdListener>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    // The unit tests count a worker's allocations (proxy_alloc_tests.rs).
    #[cfg(test)]
    crate::alloc_count::track_this_thread();
    // This thread writes its own block of every peer's request counters.
    ringfront_upstream::set_shard(index);
    let snap = shared.snapshot.load_full();
    let w = Rc::new(Worker::new(index, shared.clone(), &snap));
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
            match Listener::from_std(l, conf.addr) {
                Ok(l) => bound.push((conf.addr, l)),
                Err(e) => {
                    let _ =
                        started.send(Err(format!("worker {index}: listener {}: {e}", conf.addr)));
                    return;
                }
            }
        }
        let _ = started.send(Ok(()));
        worker_main(w, bound, accept::accepts_for(driver)).await
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
