//! Idle keepalive client connections of one worker, oldest first, so that a worker at
//! `worker_connections` can close one to make room for a new client (nginx's
//! `ngx_drain_connections`) instead of refusing the newcomer.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

/// One connection's "close now" signal.
#[derive(Default)]
pub struct IdleSignal {
    closed: Cell<bool>,
    /// Which idle period the connection is in; a queue entry from an older one is stale.
    period: Cell<u64>,
    idle: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl IdleSignal {
    /// Resolves when the worker asks this idle connection to close.
    pub fn closed(self: &Rc<Self>) -> Closed {
        Closed(self.clone())
    }

    /// The connection has a request to serve again.
    pub fn busy(&self) {
        self.idle.set(false);
    }
}

pub struct Closed(Rc<IdleSignal>);

impl Future for Closed {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.closed.get() {
            return Poll::Ready(());
        }
        *self.0.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// The worker's queue of idle connections.
#[derive(Default)]
pub struct IdleQueue {
    queue: RefCell<VecDeque<(u64, Weak<IdleSignal>)>>,
}

impl IdleQueue {
    /// Registers `sig` as idle from now on.
    pub fn push(&self, sig: &Rc<IdleSignal>) {
        let period = sig.period.get() + 1;
        sig.period.set(period);
        sig.idle.set(true);
        let mut q = self.queue.borrow_mut();
        q.push_back((period, Rc::downgrade(sig)));
        // Entries of connections that became busy or closed are dropped lazily; compact
        // when they pile up so the queue stays proportional to live connections.
        if q.len() > 64 && q.len().is_multiple_of(64) {
            q.retain(|(p, w)| {
                w.upgrade()
                    .is_some_and(|s| s.idle.get() && s.period.get() == *p)
            });
        }
    }

    /// Asks the oldest idle connection to close. False when there is none.
    pub fn close_oldest(&self) -> bool {
        let mut q = self.queue.borrow_mut();
        while let Some((period, weak)) = q.pop_front() {
            let Some(sig) = weak.upgrade() else { continue };
            if !sig.idle.get() || sig.period.get() != period || sig.closed.get() {
                continue;
            }
            sig.closed.set(true);
            if let Some(w) = sig.waker.borrow_mut().take() {
                w.wake();
            }
            return true;
        }
        false
    }
}
