//! Idle keepalive client connections of one worker, oldest first: a worker at
//! `worker_connections` closes the oldest to make room for a new client (nginx's
//! `ngx_drain_connections`) instead of refusing the newcomer, and one reaper task per worker
//! closes those whose `keepalive_timeout` has passed, so that an idle connection holds no
//! timer of its own (a monoio timer entry is a few hundred bytes, cache-line aligned).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// One connection's "close now" signal.
#[derive(Default)]
pub struct IdleSignal {
    closed: Cell<bool>,
    /// Which idle period the connection is in; a queue entry from an older one is stale.
    period: Cell<u32>,
    idle: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl IdleSignal {
    /// Resolves when the worker asks this idle connection to close.
    pub fn closed(&self) -> Closed<'_> {
        Closed(self)
    }

    fn close(&self) {
        self.closed.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

pub struct Closed<'a>(&'a IdleSignal);

impl Future for Closed<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.closed.get() {
            return Poll::Ready(());
        }
        self.0.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

struct Entry {
    deadline: Instant,
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

/// Entries of one `keepalive_timeout` value: pushed in time order, so deadlines ascend.
struct Lane {
    timeout: Duration,
    q: VecDeque<Entry>,
}

impl Lane {
    /// Drops stale entries at the front; the live front entry, if any.
    fn front(&mut self) -> Option<(Instant, Rc<IdleSignal>)> {
        loop {
            let e = self.q.front()?;
            match e.live() {
                Some(s) => return Some((e.deadline, s)),
                None => {
                    self.q.pop_front();
                }
            }
        }
    }
}

/// The worker's idle connections, one lane per `keepalive_timeout` value in use.
#[derive(Default)]
pub struct IdleQueue {
    lanes: RefCell<Vec<Lane>>,
    /// Connections idle now; entries beyond these are stale and compacted away.
    live: Cell<usize>,
    /// The reaper, parked until the earliest deadline may have changed.
    reaper: Cell<Option<Waker>>,
    kicked: Cell<bool>,
}

impl IdleQueue {
    /// Registers `sig` as idle from now on, to be closed after `timeout`.
    pub fn push(&self, sig: &Rc<IdleSignal>, timeout: Duration) {
        let period = sig.period.get().wrapping_add(1);
        sig.period.set(period);
        sig.idle.set(true);
        self.live.set(self.live.get() + 1);
        let entry = Entry {
            deadline: Instant::now() + timeout,
            period,
            sig: Rc::downgrade(sig),
        };
        let mut lanes = self.lanes.borrow_mut();
        let first = match lanes.iter_mut().find(|l| l.timeout == timeout) {
            Some(l) => {
                l.q.push_back(entry);
                l.q.len() == 1
            }
            None => {
                lanes.push(Lane {
                    timeout,
                    q: VecDeque::from([entry]),
                });
                true
            }
        };
        // Entries of connections that became busy again are dropped lazily; compact when
        // they outnumber the live ones so the queue stays proportional to idle connections.
        let total: usize = lanes.iter().map(|l| l.q.len()).sum();
        if total > 2 * self.live.get() + 64 {
            for l in lanes.iter_mut() {
                l.q.retain(|e| e.live().is_some());
                l.q.shrink_to(2 * l.q.len() + 64);
            }
        }
        drop(lanes);
        // A lane's first entry may be the new earliest deadline: let the reaper look.
        if first {
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
        let mut lanes = self.lanes.borrow_mut();
        let mut oldest: Option<(usize, Instant)> = None;
        for (i, l) in lanes.iter_mut().enumerate() {
            let timeout = l.timeout;
            if let Some((deadline, _)) = l.front() {
                let since = deadline.checked_sub(timeout).unwrap_or(deadline);
                if oldest.is_none_or(|(_, t)| since < t) {
                    oldest = Some((i, since));
                }
            }
        }
        let Some((i, _)) = oldest else { return false };
        let Some(sig) = lanes[i].q.pop_front().and_then(|e| e.live()) else {
            return false;
        };
        drop(lanes);
        sig.close();
        true
    }

    /// Closes every connection whose keepalive deadline has passed; the next deadline.
    fn expire(&self, now: Instant) -> Option<Instant> {
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        let mut lanes = self.lanes.borrow_mut();
        for l in lanes.iter_mut() {
            while let Some((deadline, sig)) = l.front() {
                if deadline > now {
                    next = Some(next.map_or(deadline, |n| n.min(deadline)));
                    break;
                }
                l.q.pop_front();
                due.push(sig);
            }
        }
        lanes.retain(|l| !l.q.is_empty());
        drop(lanes);
        for sig in due {
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

    /// Resolves when a push may have moved the earliest deadline forward.
    fn kicked(&self) -> Kicked<'_> {
        Kicked(self)
    }

    /// The worker's keepalive reaper: sleeps until the earliest idle deadline, closes the
    /// connections that are due, and parks when no connection is idle.
    pub async fn reap(&self) {
        loop {
            self.kicked.set(false);
            match self.expire(Instant::now()) {
                Some(at) => {
                    let at = monoio::time::Instant::from_std(at);
                    monoio::select! {
                        _ = monoio::time::sleep_until(at) => {},
                        _ = self.kicked() => {},
                    }
                }
                None => self.kicked().await,
            }
        }
    }
}

struct Kicked<'a>(&'a IdleQueue);

impl Future for Kicked<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.kicked.replace(false) {
            return Poll::Ready(());
        }
        self.0.reaper.set(Some(cx.waker().clone()));
        Poll::Pending
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
        let b = idle(&q, Duration::from_secs(5));
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
        let now = Instant::now();
        let next = q.expire(now + Duration::from_secs(1));
        assert!(short.closed.get() && !long.closed.get());
        assert!(next.is_some_and(|n| n > now + Duration::from_secs(59)));
        // A connection idle again starts a new period: its old entry is stale.
        q.leave(&long);
        q.push(&long, Duration::from_secs(90));
        assert_eq!(q.lanes.borrow().iter().map(|l| l.q.len()).sum::<usize>(), 2);
        q.expire(now + Duration::from_secs(61));
        assert!(!long.closed.get());
        assert!(q.expire(now + Duration::from_secs(120)).is_none());
        assert!(long.closed.get());
    }

    #[test]
    fn stale_entries_are_compacted() {
        let q = IdleQueue::default();
        let s = Rc::new(IdleSignal::default());
        for _ in 0..10_000 {
            q.push(&s, Duration::from_secs(75));
            q.leave(&s);
        }
        let total: usize = q.lanes.borrow().iter().map(|l| l.q.len()).sum();
        assert!(total <= 65, "{total}");
    }
}
