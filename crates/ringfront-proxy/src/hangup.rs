//! The worker's hang-up watch (io_uring): which client connections have closed their side
//! (or been reset), known without a submission per request. One epoll instance per worker
//! thread holds each watched client socket, registered once per connection for
//! `EPOLLRDHUP` only (edge-triggered: bytes the client sends, its next request, do not
//! report), and one poll on the ring watches that instance; a close marks the connection's
//! slot and wakes the wait that watches it. What nginx's `EPOLLRDHUP` registration gives it:
//! a close is seen at once, and a request costs the kernel nothing for it.
//!
//! The epoll instance holds no reference on the sockets: a socket leaves it when its last
//! descriptor is closed. A slot's token carries a generation, so that a report for a
//! connection already gone never marks the connection that took its slot.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::Waker;

/// A connection's registration: its slot and the slot's generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    fn token(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    fn of(token: u64) -> Key {
        Key {
            index: token as u32,
            generation: (token >> 32) as u32,
        }
    }
}

#[derive(Default)]
struct Slot {
    generation: u32,
    used: bool,
    hung: bool,
    waker: Option<Waker>,
}

/// The worker's epoll instance and the connections registered in it.
pub struct Hangups {
    ep: OwnedFd,
    /// Whether its poll task runs (it ends with the runtime it was spawned on).
    alive: Cell<bool>,
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
}

thread_local! {
    static WORKER: RefCell<Option<Rc<Hangups>>> = const { RefCell::new(None) };
}

impl Hangups {
    /// This worker's watch, made (and its poll task spawned) at the first use, or again when
    /// the runtime its task ran on has ended; `None` when no epoll instance can be made.
    pub fn worker() -> Option<Rc<Hangups>> {
        WORKER.with(|w| {
            let mut w = w.try_borrow_mut().ok()?;
            if !w.as_ref().is_some_and(|h| h.alive.get()) {
                let h = Rc::new(Hangups::new()?);
                monoio::spawn(watch(Rc::clone(&h)));
                *w = Some(h);
            }
            w.clone()
        })
    }

    #[allow(unsafe_code)]
    fn new() -> Option<Hangups> {
        // SAFETY: plain system call; the descriptor it returns is owned by the `OwnedFd`.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        Some(Hangups {
            // SAFETY: `fd` is the fresh descriptor just returned, owned by no one else.
            ep: unsafe { OwnedFd::from_raw_fd(fd) },
            alive: Cell::new(true),
            slots: RefCell::default(),
            free: RefCell::default(),
        })
    }

    /// Registers the socket `fd` (a connection's, for as long as it is open); `None` when
    /// epoll refuses it.
    #[allow(unsafe_code)]
    pub fn register(&self, fd: RawFd) -> Option<Key> {
        let key = self.take_slot()?;
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: key.token(),
        };
        // SAFETY: `ev` is a valid event for the call; `fd` is the caller's open socket.
        let r = unsafe { libc::epoll_ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r < 0 {
            self.release(key);
            return None;
        }
        Some(key)
    }

    fn take_slot(&self) -> Option<Key> {
        let mut slots = self.slots.try_borrow_mut().ok()?;
        let index = match self.free.try_borrow_mut().ok()?.pop() {
            Some(i) => i,
            None => {
                slots.push(Slot::default());
                u32::try_from(slots.len() - 1).ok()?
            }
        };
        let slot = slots.get_mut(index as usize)?;
        slot.used = true;
        slot.hung = false;
        slot.waker = None;
        Some(Key {
            index,
            generation: slot.generation,
        })
    }

    /// The connection is closed: its slot goes to the next one, under a new generation.
    pub fn release(&self, key: Key) {
        let (Ok(mut slots), Ok(mut free)) =
            (self.slots.try_borrow_mut(), self.free.try_borrow_mut())
        else {
            return;
        };
        if let Some(slot) = slots
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)
        {
            slot.used = false;
            slot.waker = None;
            slot.generation = slot.generation.wrapping_add(1);
            free.push(key.index);
        }
    }

    /// Whether the connection hung up; if not, `waker` is woken when it does.
    pub fn hung(&self, key: Key, waker: &Waker) -> bool {
        let Ok(mut slots) = self.slots.try_borrow_mut() else {
            return false;
        };
        let Some(slot) = slots
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)
        else {
            return false;
        };
        if !slot.hung && !slot.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            slot.waker = Some(waker.clone());
        }
        slot.hung
    }

    /// Marks what the epoll instance reports; false when it has nothing (more) to report.
    #[allow(unsafe_code)]
    fn drain(&self) -> bool {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 32];
        // SAFETY: `events` is a valid buffer of the length passed; a zero timeout.
        let n = unsafe { libc::epoll_wait(self.ep.as_raw_fd(), events.as_mut_ptr(), 32, 0) };
        let Ok(n) = usize::try_from(n) else {
            return false;
        };
        let Ok(mut slots) = self.slots.try_borrow_mut() else {
            return false;
        };
        for ev in events.iter().take(n) {
            let key = Key::of(ev.u64);
            if let Some(slot) = slots
                .get_mut(key.index as usize)
                .filter(|s| s.used && s.generation == key.generation)
            {
                slot.hung = true;
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        }
        n == events.len()
    }
}

/// The worker's one poll on its epoll instance, re-armed after each report.
async fn watch(h: Rc<Hangups>) {
    let _alive = Alive(Rc::clone(&h));
    let Ok(dup) = h.ep.try_clone() else {
        return;
    };
    // Held as a stream only for the ring's readiness poll: no socket call is made on it.
    let Ok(ep) = monoio::net::TcpStream::from_std(std::net::TcpStream::from(dup)) else {
        return;
    };
    loop {
        if ep.readable(false).await.is_err() {
            return;
        }
        while h.drain() {}
    }
}

/// Marks the watch dead when its task ends or is dropped with its runtime.
struct Alive(Rc<Hangups>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.alive.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_slot_taken_again_ignores_the_old_token() {
        let h = Hangups::new().unwrap();
        let a = h.take_slot().unwrap();
        h.release(a);
        let b = h.take_slot().unwrap();
        assert_eq!(a.index, b.index);
        assert_ne!(a.generation, b.generation);
        assert_eq!(Key::of(b.token()), b);
        let waker = Waker::noop();
        assert!(!h.hung(a, waker));
        assert!(!h.hung(b, waker));
    }

    /// A connection over loopback: bytes from the client report nothing, its close does.
    #[test]
    fn bytes_report_nothing_and_a_close_marks_the_connection() {
        use std::io::Write;
        let h = Hangups::new().unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let key = h.register(server.as_raw_fd()).unwrap();
        let waker = Waker::noop();
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let _ = h.drain();
        assert!(!h.hung(key, waker), "bytes are no hang-up");
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !h.hung(key, waker) && std::time::Instant::now() < end {
            let _ = h.drain();
        }
        assert!(h.hung(key, waker), "the close is reported");
        h.release(key);
        assert!(!h.hung(key, waker), "a released key reads nothing");
    }
}
