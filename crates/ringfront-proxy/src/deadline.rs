//! Per-I/O deadlines without a timer-wheel entry or a precise clock read each: one queue per
//! worker thread, one lane per timeout value (entries pushed in time order, so each lane's
//! deadlines ascend), and one reaper task that sleeps to the earliest deadline and wakes the
//! I/O futures that are due. An I/O that finishes leaves its entry behind, stale (its slot's
//! generation moved on); stale entries are dropped at the front or compacted away once they
//! outnumber the live ones, as in `idle.rs`.
//!
//! Time: deadlines are set from the poll's cached monotonic clock (`clock::now_ms`: read once
//! per connection task's poll, so setting one costs no clock read once the poll has one)
//! plus one millisecond for the truncation to whole milliseconds, and fired against the
//! same clock read afresh at each reaper wake-up: a deadline fires between 0 and about 1 ms
//! late, never early by more than the CPU time its poll had spent before setting it (nginx's
//! own timers are millisecond-coarse and set from its cached time in the same way). The
//! coarse clock this once used lagged by more than its stated resolution on a loaded VM
//! (a 55 ms deadline fired after 54.8 ms).
//!
//! Without a running reaper (unit tests that drive I/O outside a worker) `timeout` falls back
//! to monoio's own timer.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::clock::now_ms;
use crate::lanes::Lanes;

/// The deadline passed before the operation finished.
#[derive(Debug)]
pub struct Elapsed;

/// Timeouts this long or longer never fire (no nginx timeout is anywhere near it). A
/// `Duration`, so the check per I/O compares two of them (no 128-bit milliseconds).
const NEVER: Duration = Duration::from_millis(1 << 40);

/// Runs `fut` until it finishes or `limit` has passed, whichever comes first.
pub fn timeout<F: Future>(limit: Duration, fut: F) -> Timeout<F> {
    Timeout {
        fut,
        limit,
        state: State::Idle,
    }
}

enum State {
    Idle,
    Queued(Key),
    Fallback(Pin<Box<monoio::time::Sleep>>),
    Never,
}

pin_project_lite::pin_project! {
    /// The future `timeout` returns.
    pub struct Timeout<F> {
        #[pin]
        fut: F,
        limit: Duration,
        state: State,
    }

    impl<F> PinnedDrop for Timeout<F> {
        fn drop(this: Pin<&mut Self>) {
            if let State::Queued(key) = this.project().state {
                // At thread exit the queue may be gone already; so is the slot then.
                let _ = QUEUE.try_with(|q| q.release(*key));
            }
        }
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.fut.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match this.state {
            State::Idle => {
                if this.limit.is_zero() {
                    return Poll::Ready(Err(Elapsed));
                }
                *this.state = QUEUE.with(|q| q.register(*this.limit, cx.waker()));
                if let State::Fallback(sleep) = this.state {
                    if sleep.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Err(Elapsed));
                    }
                }
                Poll::Pending
            }
            State::Queued(key) => match QUEUE.with(|q| q.check(*key, cx.waker())) {
                true => Poll::Ready(Err(Elapsed)),
                false => Poll::Pending,
            },
            State::Fallback(sleep) => match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
                Poll::Pending => Poll::Pending,
            },
            State::Never => Poll::Pending,
        }
    }
}

/// A slot in the queue's slab, named with the generation it had when taken.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Key {
    idx: u32,
    gen: u32,
}

/// A free slot keeps the waker it last had: the next I/O to take it is most often the same
/// task's (the free list is last-in, first-out), which then needs no clone of its waker
/// (two atomic operations per I/O saved). So a free slot may hold a finished task's
/// allocation (not its future) until the slot is taken again.
#[derive(Default)]
struct Slot {
    gen: u32,
    fired: bool,
    waker: Option<Waker>,
}

/// One queued deadline: 16 bytes.
struct Entry {
    at: u64,
    key: Key,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Per timeout in whole milliseconds.
    lanes: Lanes<u64, Entry>,
    /// Slots taken now; entries beyond these are stale.
    live: usize,
    queued: usize,
}

impl Inner {
    fn is_live(&self, key: Key) -> bool {
        self.slots
            .get(key.idx as usize)
            .is_some_and(|s| s.gen == key.gen && !s.fired)
    }

    fn take(&mut self, waker: &Waker) -> Key {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[idx as usize];
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            slot.waker = Some(waker.clone());
        }
        self.live += 1;
        Key { idx, gen: slot.gen }
    }

    fn push(&mut self, limit: u64, entry: Entry) {
        self.lanes.push(limit, entry);
        self.queued += 1;
        if self.queued > 2 * self.live + 64 {
            let mut lanes = std::mem::take(&mut self.lanes);
            lanes.compact(|e| self.is_live(e.key));
            self.queued = lanes.len();
            self.lanes = lanes;
        }
    }

    /// Marks every live entry due at `now` fired and collects its waker; the next deadline.
    fn expire(&mut self, now: u64, woken: &mut Vec<Waker>) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut lanes = std::mem::take(&mut self.lanes);
        for l in lanes.iter_mut() {
            while let Some(e) = l.q.front() {
                let (at, key) = (e.at, e.key);
                if !self.is_live(key) {
                    l.q.pop_front();
                    self.queued -= 1;
                    continue;
                }
                if at > now {
                    next = Some(next.map_or(at, |n| n.min(at)));
                    break;
                }
                l.q.pop_front();
                self.queued -= 1;
                let slot = &mut self.slots[key.idx as usize];
                slot.fired = true;
                woken.extend(slot.waker.take());
            }
        }
        lanes.settle();
        self.lanes = lanes;
        next
    }
}

/// The worker thread's deadlines.
#[derive(Default)]
struct Queue {
    inner: RefCell<Inner>,
    /// A reaper task runs on this thread.
    running: Cell<bool>,
    /// When the reaper wakes next (`None`: parked until a push).
    armed: Cell<Option<u64>>,
    reaper: Cell<Option<Waker>>,
    kicked: Cell<bool>,
}

thread_local! {
    static QUEUE: Queue = Queue::default();
}

/// `limit` rounded up to whole milliseconds: a deadline is never early. u64 arithmetic (no
/// 128-bit division per I/O); the caller keeps `limit` below `NEVER`, so it fits.
fn whole_ms(limit: Duration) -> u64 {
    limit.as_secs() * 1000 + u64::from(limit.subsec_nanos().div_ceil(1_000_000))
}

impl Queue {
    fn register(&self, limit: Duration, waker: &Waker) -> State {
        if limit >= NEVER {
            return State::Never;
        }
        if !self.running.get() {
            return State::Fallback(Box::pin(monoio::time::sleep(limit)));
        }
        let limit_ms = whole_ms(limit);
        let at = now_ms() + 1 + limit_ms;
        let mut inner = self.inner.borrow_mut();
        let key = inner.take(waker);
        inner.push(limit_ms, Entry { at, key });
        drop(inner);
        if self.armed.get().is_none_or(|armed| at < armed) {
            self.kick();
        }
        State::Queued(key)
    }

    /// Whether `key`'s deadline has fired; refreshes its waker if the task's changed.
    fn check(&self, key: Key, waker: &Waker) -> bool {
        let mut inner = self.inner.borrow_mut();
        let Some(slot) = inner.slots.get_mut(key.idx as usize) else {
            return true;
        };
        if slot.gen != key.gen || slot.fired {
            return true;
        }
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            slot.waker = Some(waker.clone());
        }
        false
    }

    fn release(&self, key: Key) {
        let mut inner = self.inner.borrow_mut();
        let Some(slot) = inner.slots.get_mut(key.idx as usize) else {
            return;
        };
        if slot.gen != key.gen {
            return;
        }
        slot.gen = slot.gen.wrapping_add(1);
        slot.fired = false;
        inner.free.push(key.idx);
        inner.live -= 1;
    }

    fn kick(&self) {
        self.kicked.set(true);
        if let Some(w) = self.reaper.take() {
            w.wake();
        }
    }

    fn expire(&self, now: u64) -> Option<u64> {
        let mut woken = Vec::new();
        let next = self.inner.borrow_mut().expire(now, &mut woken);
        for w in woken {
            w.wake();
        }
        next
    }
}

/// Clears `running` when the reaper task ends (its runtime is going away).
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        let _ = QUEUE.try_with(|q| {
            q.running.set(false);
            q.armed.set(None);
        });
    }
}

/// The worker's deadline reaper: sleeps until the earliest deadline, wakes the I/O futures
/// that are due, and parks while none is queued. One per worker thread; a second one on the
/// same thread returns at once.
pub async fn reap() {
    if QUEUE.with(|q| q.running.replace(true)) {
        return;
    }
    let _running = Running;
    loop {
        let (now, next) = QUEUE.with(|q| {
            q.kicked.set(false);
            let now = now_ms();
            let next = q.expire(now);
            q.armed.set(next);
            (now, next)
        });
        let kicked = std::future::poll_fn(|cx| {
            QUEUE.with(|q| {
                if q.kicked.replace(false) {
                    return Poll::Ready(());
                }
                q.reaper.set(Some(cx.waker().clone()));
                Poll::Pending
            })
        });
        match next {
            Some(at) => {
                let wait = Duration::from_millis(at.saturating_sub(now));
                monoio::select! {
                    _ = monoio::time::sleep(wait) => {},
                    _ = kicked => {},
                }
            }
            None => kicked.await,
        }
    }
}

#[cfg(test)]
mod tests;
