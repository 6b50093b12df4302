//! Idle keepalive client connections of one worker, oldest first: a worker at
//! `worker_connections` closes the oldest to make room for a new client (nginx's
//! `ngx_drain_connections`) instead of refusing the newcomer, and one reaper task per worker
//! closes those whose `keepalive_timeout` has passed, so that an idle connection holds no
//! timer of its own (a monoio timer entry is a few hundred bytes, cache-line aligned).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::lanes::{Lane, Lanes};

/// One connection's "close now" signal.
#[derive(Default)]
pub struct IdleSignal {
    closed: Cell<bool>,
    idle: Cell<bool>,
    /// Which idle period the connection is in; a queue entry from an older one is stale.
    period: Cell<u32>,
    waker: Cell<Option<Waker>>,
}

impl IdleSignal {
    /// Ready once the worker has asked this idle connection to close.
    pub fn poll_closed(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.closed.get() {
            return Poll::Ready(());
        }
        self.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }

    fn close(&self) {
        self.closed.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// Milliseconds on the queue's own clock, wrapping: deadlines are compared as differences,
/// and no timeout is longer than `MAX_TIMEOUT_MS`.
type Ms = u32;
const MAX_TIMEOUT_MS: u128 = 1 << 30;

/// Whether `deadline` has come at `now`.
fn due(deadline: Ms, now: Ms) -> bool {
    now.wrapping_sub(deadline) as i32 >= 0
}

/// One idle period of one connection: 16 bytes.
struct Entry {
    deadline: Ms,
    period: u32,
    sig: Weak<IdleSignal>,
}

impl Entry {
    /// The connection is still in the idle period this entry was made for.
    fn live(&self) -> Option<Rc<IdleSignal>> {
        self.sig
            .upgrade()
            .filter(|s| s.idle.get() && s.period.get() == self.period && !s.closed.get())
    }
}

/// Drops stale entries at the front of a lane (one `keepalive_timeout` value); the live
/// front entry's deadline and connection.
fn live_front(lane: &mut Lane<Ms, Entry>) -> Option<(Ms, Rc<IdleSignal>)> {
    loop {
        let e = lane.q.front()?;
        match e.live() {
            Some(s) => return Some((e.deadline, s)),
            None => {
                lane.q.pop_front();
            }
        }
    }
}

/// The worker's idle connections, one lane per `keepalive_timeout` value in use.
pub struct IdleQueue {
    epoch: Instant,
    lanes: RefCell<Lanes<Ms, Entry>>,
    /// Connections idle now; entries beyond these are stale and compacted away.
    live: Cell<usize>,
    /// When the reaper wakes next (`None`: parked until a push).
    armed: Cell<Option<Ms>>,
    reaper: Cell<Option<Waker>>,
    kicked: Cell<bool>,
}

impl Default for IdleQueue {
    fn default() -> Self {
        IdleQueue {
            epoch: Instant::now(),
            lanes: RefCell::default(),
            live: Cell::new(0),
            armed: Cell::new(None),
            reaper: Cell::new(None),
            kicked: Cell::new(false),
        }
    }
}

impl IdleQueue {
    fn now(&self) -> Ms {
        crate::clock::now()
            .saturating_duration_since(self.epoch)
            .as_millis() as Ms
    }

    /// Registers `sig` as idle from now on, to be closed after `timeout`.
    pub fn push(&self, sig: &Rc<IdleSignal>, timeout: Duration) {
        let period = sig.period.get().wrapping_add(1);
        sig.period.set(period);
        sig.idle.set(true);
        self.live.set(self.live.get() + 1);
        let timeout = timeout.as_millis().min(MAX_TIMEOUT_MS) as Ms;
        let deadline = self.now().wrapping_add(timeout);
        let entry = Entry {
            deadline,
            period,
            sig: Rc::downgrade(sig),
        };
        let mut lanes = self.lanes.borrow_mut();
        lanes.push(timeout, entry);
        // Entries of connections that became busy again are dropped lazily; compact when
        // they outnumber the live ones so the queue stays proportional to idle connections.
        if lanes.len() > 2 * self.live.get() + 64 {
            lanes.compact(|e| e.live().is_some());
        }
        drop(lanes);
        // Wake the reaper only when this deadline comes before the one it sleeps until.
        if self.armed.get().is_none_or(|at| !due(at, deadline)) {
            self.kick();
        }
    }

    /// The connection is no longer idle (it has a request, or it is closing).
    pub fn leave(&self, sig: &IdleSignal) {
        if sig.idle.replace(false) {
            self.live.set(self.live.get() - 1);
        }
    }

    /// Asks the oldest idle connection to close. False when there is none.
    pub fn close_oldest(&self) -> bool {
        let now = self.now();
        let mut lanes = self.lanes.borrow_mut();
        let mut oldest: Option<(usize, Ms)> = None;
        for (i, l) in lanes.iter_mut().enumerate() {
            let timeout = l.limit;
            if let Some((deadline, _)) = live_front(l) {
                let age = now.wrapping_sub(deadline.wrapping_sub(timeout));
                if oldest.is_none_or(|(_, a)| age > a) {
                    oldest = Some((i, age));
                }
            }
        }
        let Some((i, _)) = oldest else { return false };
        let Some(sig) = lanes
            .get_mut(i)
            .and_then(|l| l.q.pop_front())
            .and_then(|e| e.live())
        else {
            return false;
        };
        drop(lanes);
        sig.close();
        true
    }

    /// Closes every connection whose keepalive deadline has come at `now`; the next one.
    fn expire(&self, now: Ms) -> Option<Ms> {
        let mut closing = Vec::new();
        let mut next: Option<Ms> = None;
        let mut lanes = self.lanes.borrow_mut();
        for l in lanes.iter_mut() {
            while let Some((deadline, sig)) = live_front(l) {
                if !due(deadline, now) {
                    if next.is_none_or(|n| due(deadline, n)) {
                        next = Some(deadline);
                    }
                    break;
                }
                l.q.pop_front();
                closing.push(sig);
            }
        }
        lanes.settle();
        drop(lanes);
        for sig in closing {
            sig.close();
        }
        next
    }

    fn kick(&self) {
        self.kicked.set(true);
        if let Some(w) = self.reaper.take() {
            w.wake();
        }
    }

    /// The worker's keepalive reaper: sleeps until the earliest idle deadline, closes the
    /// connections that are due, and parks while no connection is idle.
    pub async fn reap(&self) {
        loop {
            self.kicked.set(false);
            let now = self.now();
            let next = self.expire(now);
            self.armed.set(next);
            let kicked = std::future::poll_fn(|cx| {
                if self.kicked.replace(false) {
                    return Poll::Ready(());
                }
                self.reaper.set(Some(cx.waker().clone()));
                Poll::Pending
            });
            match next {
                Some(at) => {
                    let ms = at.wrapping_sub(now) as i32;
                    let wait = Duration::from_millis(ms.max(0) as u64);
                    monoio::select! {
                        _ = monoio::time::sleep(wait) => {},
                        _ = kicked => {},
                    }
                }
                None => kicked.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(q: &IdleQueue, timeout: Duration) -> Rc<IdleSignal> {
        let s = Rc::new(IdleSignal::default());
        q.push(&s, timeout);
        s
    }

    #[test]
    fn close_oldest_skips_busy_and_picks_the_longest_idle() {
        let q = IdleQueue::default();
        let a = idle(&q, Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(2));
        let b = idle(&q, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(2));
        let c = idle(&q, Duration::from_secs(60));
        q.leave(&a); // a is serving a request again
        assert!(q.close_oldest());
        assert!(b.closed.get() && !a.closed.get() && !c.closed.get());
        assert!(q.close_oldest());
        assert!(c.closed.get());
        assert!(!q.close_oldest());
    }

    #[test]
    fn expire_closes_due_connections_in_every_lane() {
        let q = IdleQueue::default();
        let short = idle(&q, Duration::from_millis(10));
        let long = idle(&q, Duration::from_secs(60));
        let now = q.now();
        let next = q.expire(now + 1_000);
        assert!(short.closed.get() && !long.closed.get());
        assert!(next.is_some_and(|n| n >= now + 59_000));
        // A connection idle again starts a new period: its old entry is stale.
        q.leave(&long);
        q.push(&long, Duration::from_secs(90));
        assert_eq!(q.lanes.borrow().len(), 2);
        q.expire(now + 61_000);
        assert!(!long.closed.get());
        assert!(q.expire(now + 120_000).is_none());
        assert!(long.closed.get());
    }

    #[test]
    fn deadlines_compare_across_the_clock_wrap() {
        assert!(due(u32::MAX - 5, 3));
        assert!(!due(3, u32::MAX - 5));
        assert!(due(7, 7));
    }

    #[test]
    fn stale_entries_are_compacted() {
        let q = IdleQueue::default();
        let s = Rc::new(IdleSignal::default());
        for _ in 0..10_000 {
            q.push(&s, Duration::from_secs(75));
            q.leave(&s);
        }
        let total = q.lanes.borrow().len();
        assert!(total <= 65, "{total}");
        assert_eq!(std::mem::size_of::<Entry>(), 16);
    }
}
