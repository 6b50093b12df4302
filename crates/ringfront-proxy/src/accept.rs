//! A worker's accept loops, one set per listener. One accept is always posted. While the
//! worker holds more than [`BUSY_ABOVE`] connections, the io_uring driver posts up to
//! [`RING_ACCEPTS`] at once: with one, a burst of new connections on a busy worker was taken
//! at one per event-loop turn (about 350 a second with 1,000 connections busy), and the last
//! clients of the burst waited up to 2 s for their first response; with 16 the queue drains
//! within 0.1 s. On a worker with few connections, one posted accept takes queued
//! connections as they come, which costs the kernel less per connection than an accept
//! waiting for each (3–4 % of the CPU of a `Connection: close` request). docs/benchmarks.md,
//! 2026-12-07 18:20 UTC. The epoll driver keeps one: monoio's readiness there holds a single
//! reader's waker per socket.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use ringfront_config::LogLevel;

use crate::listener::{Accepted, Listener};
use crate::worker::Worker;
use crate::Driver;

/// The most accepts posted on one listener of a busy worker, with io_uring.
pub const RING_ACCEPTS: usize = 16;

/// Open connections past which a worker counts as busy, and posts more accepts.
pub const BUSY_ABOVE: usize = 64;

/// How many extra loops to start beside the first: none while the worker's `conns` open
/// connections are [`BUSY_ABOVE`] or fewer, else enough for `accepts` posted in all with
/// `extra` running already.
fn to_start(conns: usize, extra: usize, accepts: usize) -> usize {
    match conns > BUSY_ABOVE {
        true => accepts.saturating_sub(1 + extra),
        false => 0,
    }
}

/// Accepts a worker may post on each listener with this driver.
pub fn accepts_for(driver: Driver) -> usize {
    match driver {
        Driver::IoUring => RING_ACCEPTS,
        Driver::Epoll => 1,
    }
}

/// One listener and the control of its accept loops. A stop ends each accept (the listener
/// shut, or a unix one's accepts cancelled) and still awaits it to its end, never drops it
/// in flight: on io_uring a dropped accept can complete in the kernel with nobody to take
/// the connection, which then waits forever.
pub struct AcceptCtl {
    listener: Listener,
    gone: Cell<bool>,
    canceller: RefCell<monoio::io::Canceller>,
    /// Loops running beside the first one.
    extra: Cell<usize>,
}

impl AcceptCtl {
    fn new(listener: Listener) -> AcceptCtl {
        AcceptCtl {
            listener,
            gone: Cell::new(false),
            canceller: RefCell::default(),
            extra: Cell::new(0),
        }
    }

    pub fn stop(&self) {
        self.gone.set(true);
        self.listener.shut();
        let c = self.canceller.replace(monoio::io::Canceller::new());
        let _ = c.cancel();
    }
}

/// Starts accepting on `listener`, with up to `accepts` accepts posted when busy.
pub fn spawn(w: &Rc<Worker>, listener: Listener, accepts: usize) -> Rc<AcceptCtl> {
    let ctl = Rc::new(AcceptCtl::new(listener));
    let lp = Loop {
        w: w.clone(),
        ctl: ctl.clone(),
        accepts,
    };
    monoio::spawn(lp.run(false));
    ctl
}

/// What each of a listener's loops holds.
#[derive(Clone)]
struct Loop {
    w: Rc<Worker>,
    ctl: Rc<AcceptCtl>,
    accepts: usize,
}

impl Loop {
    /// Whether this loop posts another accept: the first always, the extra ones while the
    /// worker is busy.
    fn wanted(&self, extra: bool) -> bool {
        !extra || self.w.conns() > BUSY_ABOVE
    }

    /// Posts the extra accepts of a busy worker.
    fn grow(&self) {
        for _ in 0..to_start(self.w.conns(), self.ctl.extra.get(), self.accepts) {
            self.ctl.extra.set(self.ctl.extra.get() + 1);
            monoio::spawn(self.clone().run(true));
        }
    }

    async fn run(self, extra: bool) {
        while !self.w.stopping() && !self.ctl.gone.get() && self.wanted(extra) {
            match self.ctl.listener.accept(&self.ctl.canceller).await {
                Ok(stream) => {
                    serve(&self.w, stream);
                    if !extra {
                        self.grow();
                    }
                }
                Err(_) if self.w.stopping() || self.ctl.gone.get() => break,
                Err(e) => {
                    // Out of descriptors (EMFILE/ENFILE) or memory: stop accepting for a
                    // while instead of spinning on the same error, as nginx does (500 ms).
                    let snap = self.w.snapshot();
                    let msg = format_args!("accept() failed {}", crate::io::errno_text(&e));
                    self.w.log(&snap, LogLevel::Crit, 0, msg);
                    monoio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
        if extra {
            self.ctl.extra.set(self.ctl.extra.get().saturating_sub(1));
        }
    }
}

/// Starts serving an accepted connection, or closes it when the worker is full.
fn serve(w: &Rc<Worker>, stream: Accepted) {
    w.conn_accepted();
    let snap = w.snapshot();
    // Full: make room by closing the oldest idle keepalive connection, as nginx does;
    // refuse the newcomer only when every connection is busy.
    if w.conns() >= snap.worker_connections && !w.idle.close_oldest() {
        let msg = format_args!(
            "{} worker_connections are not enough",
            snap.worker_connections
        );
        w.log(&snap, LogLevel::Alert, 0, msg);
        return;
    }
    let conn = match stream {
        // TCP_NODELAY comes from the listening socket (listen.rs).
        Accepted::Tcp(stream, peer, local) => {
            crate::session::Conn::new(w.clone(), stream, peer, local)
        }
        Accepted::Unix(stream, key) => Some(crate::session::Conn::new_unix(w.clone(), stream, key)),
    };
    if let Some(conn) = conn {
        let serve = crate::clock::Fresh::new(crate::session::serve(conn));
        // Only with `worker_shutdown_timeout` does a session race a reload.
        match snap.shutdown_timeout {
            None => drop(monoio::spawn(serve)),
            Some(_) => drop(monoio::spawn(retiring(w.clone(), snap.generation, serve))),
        }
    }
}

/// Serves a connection accepted under `generation` until it ends or a reload's
/// `worker_shutdown_timeout` retires it (dropping the session closes the socket; its guards
/// keep the worker's counts).
async fn retiring(w: Rc<Worker>, generation: u64, serve: impl std::future::Future<Output = ()>) {
    monoio::select! {
        _ = serve => {}
        _ = w.retire.wait(generation) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_with_few_connections_posts_one_accept() {
        assert_eq!(to_start(0, 0, RING_ACCEPTS), 0);
        assert_eq!(to_start(BUSY_ABOVE, 0, RING_ACCEPTS), 0);
    }

    #[test]
    fn a_busy_worker_posts_up_to_its_drivers_accepts() {
        assert_eq!(to_start(BUSY_ABOVE + 1, 0, RING_ACCEPTS), RING_ACCEPTS - 1);
        assert_eq!(to_start(10_000, 5, RING_ACCEPTS), RING_ACCEPTS - 6);
        assert_eq!(to_start(10_000, RING_ACCEPTS - 1, RING_ACCEPTS), 0);
        assert_eq!(to_start(10_000, 0, accepts_for(Driver::Epoll)), 0);
        assert_eq!(accepts_for(Driver::IoUring), RING_ACCEPTS);
    }
}
