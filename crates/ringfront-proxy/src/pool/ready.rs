//! The idle connections' readiness watch on io_uring, with no submission and no syscall per
//! reuse: one epoll instance per pool (per worker) holds every pooled upstream socket,
//! registered once per connection (`EPOLL_CTL_ADD` at its first time in the pool) for
//! `EPOLLIN | EPOLLRDHUP`, edge-triggered, and one poll on the ring watches the instance.
//! The idle connection stays in its slot; a report for it (FIN, RST or unsolicited bytes:
//! what the per-connection watcher saw) closes it there and takes it out of the cache, so
//! `take` never returns it and a reuse only reads the slot.
//!
//! A socket's registration outlives its idle periods, so it also reports while the
//! connection is in use: its response arriving (`epoll_wait` polls each reported socket
//! again, so one whose bytes the request already read is left out, but a response that
//! arrived before its read ran is reported: most of them, measured). Bytes reported while
//! in use are the response's and are not looked at again; a close reported while in use
//! (`EPOLLRDHUP`, `EPOLLHUP`, `EPOLLERR`: it is not reported again) marks the connection
//! `suspect`, and its next entry into the pool looks with one non-blocking peek (rare).
//! What the per-connection watcher saw and this does not: unsolicited bytes without a
//! close that arrive after the response was read and before the connection is pooled (the
//! client write between), with nothing after them. The
//! instance holds no reference on the sockets (one leaves it with its last descriptor);
//! tokens carry the descriptor's registration generation, so a late report for a closed
//! socket never marks the one that took its descriptor.

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::pin;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};

use crate::stream::UpstreamStream;

use super::watch::{Shared, State, WatchId, NO_SLOT};

/// What the watch knows of one descriptor.
#[derive(Clone, Copy)]
pub struct FdWatch {
    /// The idle connection on it, or `NO_SLOT` (in use, or not pooled).
    slot: WatchId,
    /// Its registration's generation (in the tokens of its reports).
    generation: u32,
    /// Reported while in use: looked at when it next enters the pool.
    suspect: bool,
}

const UNWATCHED: FdWatch = FdWatch {
    slot: NO_SLOT,
    generation: 0,
    suspect: false,
};

/// The pool's epoll instance and its poll task's stop signal.
pub struct Ready {
    ep: OwnedFd,
    stop: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Ready {
    /// Makes the instance and spawns its poll task, which acts on `shared`; `None` when no
    /// epoll instance can be made.
    #[allow(unsafe_code)]
    pub fn start(shared: Weak<Shared>) -> Option<Rc<Ready>> {
        // SAFETY: plain system call; the descriptor it returns is owned by the `OwnedFd`.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let ready = Rc::new(Ready {
            // SAFETY: `fd` is the fresh descriptor just returned, owned by no one else.
            ep: unsafe { OwnedFd::from_raw_fd(fd) },
            stop: Cell::new(false),
            waker: Cell::new(None),
        });
        monoio::spawn(watch(Rc::clone(&ready), shared));
        Some(ready)
    }

    /// Registers (or re-registers) the socket `fd` under `generation`.
    #[allow(unsafe_code)]
    fn register(&self, fd: RawFd, generation: u32) -> bool {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token(fd, generation),
        };
        let ep = self.ep.as_raw_fd();
        // SAFETY: `ev` is a valid event for the call; `fd` is the caller's open socket.
        let r = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return false;
        }
        // SAFETY: as above; the socket is already in the instance, its token is replaced.
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_MOD, fd, &mut ev) == 0 }
    }

    /// The reports waiting, into `events`; how many.
    #[allow(unsafe_code)]
    fn wait(&self, events: &mut [libc::epoll_event; 32]) -> usize {
        let ep = self.ep.as_raw_fd();
        // SAFETY: `events` is a valid buffer of the length passed; a zero timeout.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 32, 0) };
        usize::try_from(n).unwrap_or(0)
    }

    /// Ends the poll task (the pool is gone).
    pub fn stop(&self) {
        self.stop.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

fn token(fd: RawFd, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(fd as u32)
}

/// The pool's one poll on its epoll instance, re-armed after each drain.
async fn watch(ready: Rc<Ready>, shared: Weak<Shared>) {
    let Ok(dup) = ready.ep.try_clone() else {
        return;
    };
    // Held as a stream only for the ring's readiness poll: no socket call is made on it.
    let Ok(ep) = monoio::net::TcpStream::from_std(std::net::TcpStream::from(dup)) else {
        return;
    };
    loop {
        let mut readable = pin!(ep.readable(false));
        let go_on = poll_fn(|cx| {
            if ready.stop.get() {
                return Poll::Ready(false);
            }
            if let Poll::Ready(r) = readable.as_mut().poll(cx) {
                return Poll::Ready(r.is_ok());
            }
            ready.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await;
        let Some(shared) = shared.upgrade().filter(|_| go_on) else {
            return;
        };
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 32];
        loop {
            let n = ready.wait(&mut events);
            for ev in events.iter().take(n) {
                let dead = shared
                    .try_borrow_mut()
                    .ok()
                    .and_then(|mut st| st.reported(ev.u64, ev.events));
                drop(dead);
            }
            if n < events.len() {
                break;
            }
        }
    }
}

/// A one-byte non-blocking peek: whether the socket has nothing to say (no bytes, no close).
#[allow(unsafe_code)]
fn quiet(fd: RawFd) -> bool {
    let mut byte = [0u8; 1];
    // SAFETY: `byte` is a valid, writable buffer of the one byte passed; `fd` is the
    // caller's open socket.
    let n = unsafe {
        libc::recv(
            fd,
            byte.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
}

impl State {
    /// Whether the connection on `fd` (served `requests`, so at most 1 when it enters the
    /// pool for the first time) may wait idle in the watch: registered now if new, looked
    /// at if reported while in use. False: it is closed instead.
    pub fn admit(&mut self, shared: &Rc<Shared>, fd: RawFd, requests: u64) -> bool {
        let Ok(i) = usize::try_from(fd) else {
            return false;
        };
        if self.ready.is_none() {
            self.ready = Ready::start(Rc::downgrade(shared));
        }
        let Some(ready) = self.ready.clone() else {
            return false;
        };
        if self.fds.len() <= i {
            self.fds.resize(i + 1, UNWATCHED);
        }
        let w = &mut self.fds[i];
        if requests <= 1 {
            w.generation = w.generation.wrapping_add(1);
            w.suspect = false;
            return ready.register(fd, w.generation);
        }
        !std::mem::take(&mut w.suspect) || quiet(fd)
    }

    /// Keeps `stream` (admitted on `fd`) idle in slot `id`.
    pub fn hold(&mut self, id: WatchId, fd: RawFd, stream: UpstreamStream, requests: u64) {
        if let Some(w) = usize::try_from(fd).ok().and_then(|i| self.fds.get_mut(i)) {
            w.slot = id;
        }
        self.set_held(id, Some((stream, requests)));
    }

    /// The stream held idle in slot `id`, if any, no longer watched as idle.
    pub fn unhold(&mut self, id: WatchId) -> Option<(UpstreamStream, u64)> {
        let held = self.set_held(id, None)?;
        let fd = usize::try_from(held.0.raw_fd()).ok();
        if let Some(w) = fd.and_then(|i| self.fds.get_mut(i)) {
            w.slot = NO_SLOT;
        }
        Some(held)
    }

    /// A report (`events`) with `token`: an idle connection's is closed (returned, to be
    /// dropped); a close on a busy one marks it suspect.
    fn reported(&mut self, token: u64, events: u32) -> Option<UpstreamStream> {
        let (fd, generation) = (token as u32 as usize, (token >> 32) as u32);
        let w = self
            .fds
            .get_mut(fd)
            .filter(|w| w.generation == generation)?;
        if w.slot == NO_SLOT {
            let close = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
            w.suspect |= events & close != 0;
            return None;
        }
        let id = w.slot;
        self.leave(id);
        let (stream, _) = self.unhold(id)?;
        self.free_slot(id);
        Some(stream)
    }
}

/// Bytes the watch adds per idle connection: its descriptor's entry.
#[cfg(test)]
pub fn fd_entry_size() -> usize {
    std::mem::size_of::<FdWatch>()
}
