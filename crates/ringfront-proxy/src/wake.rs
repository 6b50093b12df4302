//! Wakeups instead of polling. A [`Notifier`] (any thread) rings a [`Bell`] owned by one
//! monoio runtime: one byte on a socket pair, read through that runtime's driver (a ring
//! read under io_uring, epoll readiness under the fallback), which raises a local
//! [`Signal`] the runtime's main task waits on. A [`Signal`] is also raised from the same
//! thread (a worker's last request ending) without any syscall or atomic.
//!
//! Rings coalesce: a notifier writes only when no ring is pending, so a burst costs one
//! `write` and the socket never holds more than a byte. The receiver clears `pending`
//! before its owner looks at the shared state, and every notifier changes that state before
//! ringing (all `SeqCst`), so a change is either seen by the look in progress or rings again.

use std::cell::Cell;
use std::future::Future;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use monoio::io::AsyncReadRent;

struct Line {
    pending: AtomicBool,
    tx: UnixStream,
}

/// Rings one [`Bell`] from any thread.
#[derive(Clone)]
pub struct Notifier(Arc<Line>);

impl Notifier {
    /// Wakes the bell's runtime. Call it after changing what that runtime should look at.
    pub fn notify(&self) {
        if !self.0.pending.swap(true, Ordering::SeqCst) {
            // Cannot block (nonblocking, at most one byte unread); an error would mean the
            // bell is gone, and then nobody is left to wake.
            let _ = (&self.0.tx).write(&[1]);
        }
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

/// The receiving end, moved to the thread whose runtime it wakes.
pub struct Bell {
    line: Arc<Line>,
    rx: UnixStream,
}

/// A connected notifier and bell.
pub fn bell() -> std::io::Result<(Notifier, Bell)> {
    let (tx, rx) = UnixStream::pair()?;
    tx.set_nonblocking(true)?;
    rx.set_nonblocking(true)?;
    let line = Arc::new(Line {
        pending: AtomicBool::new(false),
        tx,
    });
    Ok((Notifier(line.clone()), Bell { line, rx }))
}

impl Bell {
    /// Spawns, on the current monoio runtime, the task that raises `signal` at every ring.
    /// The read stays in flight for the runtime's life: cancelling it could swallow a ring.
    pub fn install(self, signal: Rc<Signal>) -> std::io::Result<()> {
        let rx = monoio::net::UnixStream::from_std(self.rx)?;
        let line = self.line;
        monoio::spawn(async move {
            let mut rx = rx;
            let mut buf = vec![0u8; 8];
            loop {
                let (res, b) = rx.read(buf).await;
                buf = b;
                match res {
                    Ok(0) => return,
                    Ok(_) => {
                        line.pending.store(false, Ordering::SeqCst);
                        signal.raise();
                    }
                    // A kernel whose ring answers EAGAIN for a nonblocking socket: wait for
                    // readiness instead.
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if rx.readable(false).await.is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
        });
        Ok(())
    }
}

/// A same-thread wakeup for one waiting task: raising it is two `Cell` writes, plus a local
/// task wake when the task waits.
#[derive(Default)]
pub struct Signal {
    raised: Cell<bool>,
    waiter: Cell<Option<Waker>>,
}

impl Signal {
    pub fn raise(&self) {
        self.raised.set(true);
        if let Some(w) = self.waiter.take() {
            w.wake();
        }
    }

    /// Resolves once the signal was raised since the last `wait` resolved (at once if it
    /// was). Dropping it loses nothing.
    pub fn wait(&self) -> Wait<'_> {
        Wait(self)
    }
}

pub struct Wait<'a>(&'a Signal);

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.raised.replace(false) {
            return Poll::Ready(());
        }
        self.0.waiter.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.0.waiter.set(None);
    }
}

/// The sending half of a channel whose receiver is woken by a [`Bell`].
pub struct Sender<T> {
    tx: crossbeam_channel::Sender<T>,
    bell: Notifier,
}

impl<T> Sender<T> {
    pub fn send(&self, v: T) -> Result<(), crossbeam_channel::SendError<T>> {
        self.tx.send(v)?;
        self.bell.notify();
        Ok(())
    }

    /// Wakes the receiver without a message (it has shared state to look at).
    pub fn notify(&self) {
        self.bell.notify();
    }
}

/// The receiving half: the messages, and the bell to install on the receiving runtime.
pub struct Receiver<T> {
    pub rx: crossbeam_channel::Receiver<T>,
    pub bell: Bell,
}

/// An unbounded channel that wakes its receiver's runtime.
pub fn channel<T>() -> std::io::Result<(Sender<T>, Receiver<T>)> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (notifier, bell) = bell()?;
    Ok((Sender { tx, bell: notifier }, Receiver { rx, bell }))
}

/// The snapshot generation each worker has applied (listeners rebound, peer state rebuilt),
/// so that a reload can return once the new configuration serves. Touched once per worker
/// per reload, by the worker and the control thread only.
pub struct Applied {
    gens: Mutex<Vec<u64>>,
    changed: Condvar,
}

impl Applied {
    pub fn new(workers: usize, generation: u64) -> Applied {
        Applied {
            gens: Mutex::new(vec![generation; workers]),
            changed: Condvar::new(),
        }
    }

    pub fn set(&self, worker: usize, generation: u64) {
        let mut gens = self.gens.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = gens.get_mut(worker) {
            *g = generation;
        }
        self.changed.notify_all();
    }

    /// Waits until every worker applied `generation` or later; false after `limit`.
    pub fn wait(&self, generation: u64, limit: Duration) -> bool {
        let gens = self.gens.lock().unwrap_or_else(|e| e.into_inner());
        let (gens, _) = self
            .changed
            .wait_timeout_while(gens, limit, |g| g.iter().any(|&a| a < generation))
            .unwrap_or_else(|e| e.into_inner());
        gens.iter().all(|&a| a >= generation)
    }
}

#[cfg(test)]
mod tests;
