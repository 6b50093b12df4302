//! `worker_shutdown_timeout` on a reload. nginx's old workers finish their connections and
//! close whatever is still open once the timeout passes; ringfront's workers live on, so a
//! reload *retires* the connections accepted before it instead: each of them (when the
//! timeout was configured as it was accepted) races its session against the retirement
//! and is dropped — socket closed — when the deadline comes first.
//!
//! One worker's sessions wait on one [`Retire`]: a deadline for the generations before a
//! given one, and the wakers of the sessions waiting for an announcement, in a slab so a
//! session that ends takes its waker with it.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The retirement announced last, and who waits for the next one.
#[derive(Default)]
pub struct Retire {
    /// Connections accepted under a generation below `.0` close at `.1`.
    until: Cell<Option<(u64, Instant)>>,
    /// Bumped by each announcement; a wait that saw another value is over.
    epoch: Cell<u64>,
    waiters: RefCell<Slab>,
}

#[derive(Default)]
struct Slab {
    slots: Vec<Option<Waker>>,
    free: Vec<usize>,
}

impl Retire {
    /// Connections accepted under generations below `below` close at `at`; wakes every
    /// session waiting, so each one looks.
    pub fn announce(&self, below: u64, at: Instant) {
        self.until.set(Some((below, at)));
        self.epoch.set(self.epoch.get() + 1);
        let wakers: Vec<Waker> = self
            .waiters
            .borrow_mut()
            .slots
            .iter_mut()
            .filter_map(Option::take)
            .collect();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// When a connection accepted under `generation` must close, if a retirement covers it.
    fn deadline(&self, generation: u64) -> Option<Instant> {
        self.until
            .get()
            .filter(|(below, _)| generation < *below)
            .map(|(_, at)| at)
    }

    /// Resolves when a connection accepted under `generation` must close.
    pub async fn wait(&self, generation: u64) {
        loop {
            if let Some(at) = self.deadline(generation) {
                monoio::time::sleep_until(at.into()).await;
                return;
            }
            Announced {
                retire: self,
                epoch: self.epoch.get(),
                slot: None,
            }
            .await;
        }
    }
}

/// Resolves at the next announcement.
struct Announced<'a> {
    retire: &'a Retire,
    epoch: u64,
    slot: Option<usize>,
}

impl Future for Announced<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.retire.epoch.get() != self.epoch {
            return Poll::Ready(());
        }
        let waker = Some(cx.waker().clone());
        let mut slab = self.retire.waiters.borrow_mut();
        match self.slot {
            Some(i) => slab.slots[i] = waker,
            None => {
                let i = match slab.free.pop() {
                    Some(i) => {
                        slab.slots[i] = waker;
                        i
                    }
                    None => {
                        slab.slots.push(waker);
                        slab.slots.len() - 1
                    }
                };
                drop(slab);
                self.slot = Some(i);
            }
        }
        Poll::Pending
    }
}

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            let mut slab = self.retire.waiters.borrow_mut();
            slab.slots[i] = None;
            slab.free.push(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::on_both;
    use std::time::Duration;

    /// With injected times: a retirement covers the generations before the one it names,
    /// and a later one replaces it.
    #[test]
    fn deadlines_cover_older_generations() {
        let r = Retire::default();
        let t0 = Instant::now();
        assert_eq!(r.deadline(1), None);
        r.announce(3, t0);
        assert_eq!((r.deadline(1), r.deadline(2)), (Some(t0), Some(t0)));
        assert_eq!(r.deadline(3), None, "accepted after the reload");
        let t1 = t0 + Duration::from_secs(1);
        r.announce(4, t1);
        assert_eq!((r.deadline(1), r.deadline(3)), (Some(t1), Some(t1)));
    }

    /// Waiting sessions are woken by the announcement: a covered one ends once its
    /// deadline passes, one accepted later keeps waiting; ended waits free their slot.
    #[test]
    fn an_announcement_ends_the_waits_it_covers() {
        on_both(|| async {
            let r = Retire::default();
            let mut cx = Context::from_waker(Waker::noop());
            let mut old = Box::pin(r.wait(1));
            let mut new = Box::pin(r.wait(3));
            assert!(old.as_mut().poll(&mut cx).is_pending());
            assert!(new.as_mut().poll(&mut cx).is_pending());
            assert_eq!(r.waiters.borrow().slots.len(), 2);
            r.announce(3, Instant::now());
            old.await;
            assert!(new.as_mut().poll(&mut cx).is_pending(), "not covered");
            drop(new);
            assert_eq!(r.waiters.borrow().free.len(), 2, "both slots free again");
        });
    }
}
