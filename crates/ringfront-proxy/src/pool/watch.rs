//! The read kept armed on each idle pooled connection (nginx arms a read event on cached
//! connections and closes one the peer closes or writes to). A small task per idle
//! connection owns the stream and awaits its readability: on io_uring one `POLL_ADD` through
//! the ring, under epoll the registered readiness. If it fires while idle the connection is
//! dead (FIN, RST) or out of step (unsolicited bytes): it is closed and leaves the cache, so
//! `take` never returns it and no reuse pays a syscall to find out. A `take` tells the task
//! to hand the stream back instead; dropping the readable future cancels the poll
//! (`ASYNC_CANCEL`), and the fd stays open until the kernel has finished with it because
//! the in-flight op holds its own reference to it.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::stream::UpstreamStream;

use super::lru::{Key, Lru};
use super::ready::{FdWatch, Ready};

/// Index of a watched connection's slot.
pub type WatchId = u32;

/// Where one watched connection stands.
enum Phase {
    /// In the cache under this key; the watcher awaits readability.
    Idle(Key),
    /// Taken: the watcher is to hand the stream back.
    Handing,
    /// Handed back (the stream waits in `State::back`).
    Returned,
    /// Found closed or out of step while being handed back.
    Dead,
    /// To be closed by its watcher (evicted, expired, peer down or gone).
    Close,
    /// Unused; the next free slot.
    Free(u32),
}

struct Slot {
    phase: Phase,
    /// The watcher's while idle, the taker's while handing back.
    waker: Option<Waker>,
    /// What the connection speaks: 0 plain, else its TLS settings' tag (a take for other
    /// settings does not reuse it).
    tag: u64,
    /// When the connection was made (`clock::now_ms`), for upstream `keepalive_time`.
    born: u64,
    /// The idle connection itself and its requests, where the readiness watch (ready.rs)
    /// watches it instead of a watcher task (io_uring).
    held: Option<(UpstreamStream, u64)>,
}

/// The pool's state, shared by the pool, its watchers and the connections being taken.
pub struct State {
    pub lru: Lru<WatchId>,
    /// Per group: `keepalive_timeout` in milliseconds.
    pub timeouts: Vec<u64>,
    slots: Vec<Slot>,
    free: u32,
    /// Streams handed back and not yet picked up (rarely more than one).
    back: Vec<(WatchId, UpstreamStream, u64)>,
    /// The readiness watch (io_uring), made at the first connection pooled.
    pub(super) ready: Option<Rc<Ready>>,
    /// Per descriptor: what the readiness watch knows of it.
    pub(super) fds: Vec<FdWatch>,
}

pub type Shared = RefCell<State>;

impl Default for State {
    fn default() -> Self {
        State::new(0)
    }
}

pub(super) const NO_SLOT: u32 = u32::MAX;

impl State {
    pub fn new(peer_count: usize) -> Self {
        State {
            lru: Lru::new(peer_count),
            timeouts: Vec::new(),
            slots: Vec::new(),
            free: NO_SLOT,
            back: Vec::new(),
            ready: None,
            fds: Vec::new(),
        }
    }

    /// A slot for a connection about to enter the cache under a key set by `set_key`.
    pub fn alloc(&mut self) -> WatchId {
        let slot = Slot {
            phase: Phase::Close,
            waker: None,
            tag: 0,
            born: 0,
            held: None,
        };
        if self.free == NO_SLOT {
            self.slots.push(slot);
            return (self.slots.len() - 1) as WatchId;
        }
        let id = self.free;
        if let Phase::Free(next) = self.slots[id as usize].phase {
            self.free = next;
        }
        self.slots[id as usize] = slot;
        id
    }

    fn release(&mut self, id: WatchId) {
        self.slots[id as usize] = Slot {
            phase: Phase::Free(self.free),
            waker: None,
            tag: 0,
            born: 0,
            held: None,
        };
        self.free = id;
    }

    /// Frees slot `id` (its connection is gone or taken).
    pub(super) fn free_slot(&mut self, id: WatchId) {
        self.release(id);
    }

    /// Sets what slot `id` holds idle; what it held before.
    pub(super) fn set_held(
        &mut self,
        id: WatchId,
        held: Option<(UpstreamStream, u64)>,
    ) -> Option<(UpstreamStream, u64)> {
        let slot = self.slots.get_mut(id as usize)?;
        std::mem::replace(&mut slot.held, held)
    }

    /// Takes `id` out of the cache, if it is there.
    pub(super) fn leave(&mut self, id: WatchId) {
        if let Some(Phase::Idle(key)) = self.slots.get(id as usize).map(|s| &s.phase) {
            let key = *key;
            self.lru.remove(key);
        }
    }

    /// What `id`'s connection speaks and when it was made (see `set_tag`).
    pub(super) fn tag_of(&self, id: WatchId) -> (u64, u64) {
        let s = &self.slots[id as usize];
        (s.tag, s.born)
    }

    /// Records what the connection `id` speaks and when it was made (see `Slot::tag`,
    /// `Slot::born`).
    pub fn set_tag(&mut self, id: WatchId, tag: u64, born: u64) {
        if let Some(s) = self.slots.get_mut(id as usize) {
            s.tag = tag;
            s.born = born;
        }
    }

    /// Records that the connection `id` is idle in the cache under `key`.
    pub fn set_key(&mut self, id: WatchId, key: Key) {
        if let Some(s) = self.slots.get_mut(id as usize) {
            s.phase = Phase::Idle(key);
        }
    }

    /// Moves `id` (just taken out of the cache) to `phase` and wakes its watcher.
    fn signal(&mut self, id: WatchId, phase: Phase) {
        let s = &mut self.slots[id as usize];
        s.phase = phase;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// Closes `id`'s connection, already out of the cache: at once when it is held here,
    /// else by asking its watcher.
    pub fn close(&mut self, id: WatchId) {
        match self.unhold(id) {
            Some(held) => {
                self.release(id);
                drop(held);
            }
            None => self.signal(id, Phase::Close),
        }
    }

    #[cfg(test)]
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Connections idle in the cache.
    #[cfg(test)]
    pub fn idle(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.phase, Phase::Idle(_)))
            .count()
    }
}

impl Drop for State {
    /// The readiness watch's poll task ends with the pool.
    fn drop(&mut self) {
        if let Some(r) = &self.ready {
            r.stop();
        }
    }
}

/// Watches `stream`, idle in the cache as `id`, until it is taken, closed or found dead.
pub fn spawn(shared: Rc<Shared>, id: WatchId, stream: UpstreamStream, requests: u64) {
    monoio::spawn(watcher(shared, id, stream, requests));
}

/// A plain block rather than an `async fn`: the arguments are used where they were
/// captured instead of being copied into the body, which keeps the stream in the task once
/// (240 bytes instead of 344).
#[allow(clippy::manual_async_fn)]
fn watcher(
    shared: Rc<Shared>,
    id: WatchId,
    stream: UpstreamStream,
    requests: u64,
) -> impl Future<Output = ()> {
    async move {
        let gone = is_idle(&shared, id) && {
            let mut ready = pin!(stream.socket_readable());
            poll_fn(|cx| {
                if ready.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(true);
                }
                poll_signal(&shared, id, cx).map(|()| false)
            })
            .await
        };
        settle(&shared, id, stream, requests, gone);
    }
}

fn is_idle(shared: &Shared, id: WatchId) -> bool {
    matches!(shared.borrow().slots[id as usize].phase, Phase::Idle(_))
}

/// Ready once the connection is no longer idle in the cache.
fn poll_signal(shared: &Shared, id: WatchId, cx: &mut Context<'_>) -> Poll<()> {
    let mut st = shared.borrow_mut();
    let s = &mut st.slots[id as usize];
    if !matches!(s.phase, Phase::Idle(_)) {
        return Poll::Ready(());
    }
    if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        s.waker = Some(cx.waker().clone());
    }
    Poll::Pending
}

/// The watcher's end: hand the stream back, or close it (`gone`: the peer closed or wrote).
fn settle(shared: &Shared, id: WatchId, stream: UpstreamStream, requests: u64, gone: bool) {
    let mut st = shared.borrow_mut();
    match st.slots[id as usize].phase {
        Phase::Idle(key) => {
            st.lru.remove(key);
            st.release(id);
        }
        Phase::Handing if gone => st.signal(id, Phase::Dead),
        Phase::Handing => {
            st.back.push((id, stream, requests));
            st.signal(id, Phase::Returned);
            return;
        }
        Phase::Close => st.release(id),
        Phase::Returned | Phase::Dead | Phase::Free(_) => {}
    }
    drop(st);
    drop(stream);
}

/// An idle connection taken out of the cache, on its way back from its watcher.
pub struct Pooled {
    shared: Rc<Shared>,
    id: WatchId,
    done: bool,
    tag: u64,
    born: u64,
    /// The connection, when the pool held it itself (nothing to wait for).
    held: Option<(UpstreamStream, u64)>,
}

impl Pooled {
    /// Takes `id`, just removed from the cache, away from its watcher.
    pub(super) fn new(shared: Rc<Shared>, id: WatchId) -> Pooled {
        let (tag, born) = {
            let mut st = shared.borrow_mut();
            st.signal(id, Phase::Handing);
            let slot = &st.slots[id as usize];
            (slot.tag, slot.born)
        };
        Pooled {
            shared,
            id,
            done: false,
            tag,
            born,
            held: None,
        }
    }

    /// A connection the pool held itself, its slot already freed.
    pub(super) fn held(
        shared: Rc<Shared>,
        (tag, born): (u64, u64),
        held: (UpstreamStream, u64),
    ) -> Pooled {
        Pooled {
            shared,
            id: NO_SLOT,
            done: true,
            tag,
            born,
            held: Some(held),
        }
    }

    /// What the connection speaks, as `Pool::put_tagged` recorded it.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// When the connection was made, as `Pool::put_tagged` recorded it.
    pub fn born(&self) -> u64 {
        self.born
    }

    /// The connection and the requests it has served; `None` when it turned out closed
    /// (the caller takes the next one or connects).
    pub fn stream(self) -> impl Future<Output = Option<(UpstreamStream, u64)>> {
        let mut me = self;
        poll_fn(move |cx| me.poll_back(cx))
    }

    fn poll_back(&mut self, cx: &mut Context<'_>) -> Poll<Option<(UpstreamStream, u64)>> {
        if let Some(held) = self.held.take() {
            return Poll::Ready(Some(held));
        }
        let mut st = self.shared.borrow_mut();
        let slot = &mut st.slots[self.id as usize];
        if let Phase::Handing = slot.phase {
            slot.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        self.done = true;
        let got = take_back(&mut st, self.id);
        st.release(self.id);
        Poll::Ready(got)
    }
}

/// The stream handed back for `id`, if any.
fn take_back(st: &mut State, id: WatchId) -> Option<(UpstreamStream, u64)> {
    let i = st.back.iter().position(|b| b.0 == id)?;
    let (_, stream, requests) = st.back.swap_remove(i);
    Some((stream, requests))
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = self.shared.borrow_mut();
        if let Phase::Handing = st.slots[self.id as usize].phase {
            // The watcher has not run yet: it closes the connection and frees the slot.
            st.slots[self.id as usize].phase = Phase::Close;
            st.slots[self.id as usize].waker = None;
            return;
        }
        let unused = take_back(&mut st, self.id);
        st.release(self.id);
        drop(st);
        drop(unused);
    }
}

/// Bytes one idle pooled connection costs in this process, under io_uring and under epoll.
/// io_uring: its slot (the stream in it), its cache node and its descriptor's entry in the
/// readiness watch. epoll: its watcher task (monoio's task header and trailer, about 48
/// bytes, around the future), its slot (with room for a stream it does not use) and its
/// cache node. The kernel's epoll item is not counted.
#[cfg(test)]
pub fn memory_per_idle() -> (usize, usize) {
    fn returned<A, B, C, D, F>(_: impl Fn(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }
    let future = returned(watcher);
    println!(
        "watcher future {future}, slot {}, node {}, stream {}",
        std::mem::size_of::<Slot>(),
        super::lru::node_size::<WatchId>(),
        std::mem::size_of::<UpstreamStream>()
    );
    let (slot, node) = (
        std::mem::size_of::<Slot>(),
        super::lru::node_size::<WatchId>(),
    );
    let held = slot + node + super::ready::fd_entry_size();
    (held, future + 48 + slot + node)
}
