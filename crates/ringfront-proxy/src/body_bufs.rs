//! The large buffers of a response body's relay loop: a worker keeps a few spare 64 KiB
//! buffers and lends one to a body for as long as its loop runs, so that a large body moves
//! in few, large reads and writes without allocating per request, and a keep-alive
//! connection holds none while it waits for its next request.

use std::cell::RefCell;

/// The size of a large body buffer: the most one upstream read takes.
pub const BIG: usize = 64 * 1024;
/// How many spare large buffers a worker keeps (1 MiB at most).
const SPARES: usize = 16;
/// The room a body read asks for when it does not know better.
pub const READ: usize = 16 * 1024;

/// A worker's spare large buffers.
#[derive(Default)]
pub struct BigBufs(RefCell<Vec<Vec<u8>>>);

impl BigBufs {
    /// An empty buffer with room for `BIG` bytes.
    pub fn take(&self) -> Vec<u8> {
        self.0
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BIG))
    }

    /// Keeps `buf` for another body unless there are enough spares or it is not one of
    /// ours (a timed-out read leaves an empty one; trailer framing may have grown one).
    pub fn give(&self, mut buf: Vec<u8>) {
        let mut spares = self.0.borrow_mut();
        if (BIG..=2 * BIG).contains(&buf.capacity()) && spares.len() < SPARES {
            buf.clear();
            spares.push(buf);
        }
    }

    #[cfg(test)]
    fn spares(&self) -> usize {
        self.0.borrow().len()
    }
}

/// The room the next body read asks for: what is left of a `Content-Length` body (at most
/// `READ`; the read still fills what the buffer has, so bytes beyond the end are seen),
/// otherwise `READ`.
pub fn want(left: Option<u64>) -> usize {
    left.map_or(READ, |l| usize::try_from(l).map_or(READ, |l| l.min(READ)))
}

/// Whether a read asking for `want` bytes into `buf` should use a large buffer instead: it
/// would otherwise grow the request buffer past what the worker takes back.
pub fn needs_big(buf: &[u8], cap: usize, want: usize) -> bool {
    cap - buf.len() < want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spares_are_kept_up_to_a_limit_and_only_ours() {
        let b = BigBufs::default();
        let taken: Vec<_> = (0..SPARES + 2).map(|_| b.take()).collect();
        for t in taken {
            assert!(t.capacity() >= BIG);
            b.give(t);
        }
        assert_eq!(b.spares(), SPARES);
        b.give(Vec::new());
        b.give(Vec::with_capacity(4 * BIG));
        assert_eq!(b.spares(), SPARES);
        let mut t = b.take();
        t.extend_from_slice(b"abc");
        b.give(t);
        assert!(b.take().is_empty());
    }

    #[test]
    fn a_read_asks_for_what_is_left_up_to_the_read_size() {
        assert_eq!(want(None), READ);
        assert_eq!(want(Some(10)), 10);
        assert_eq!(want(Some(1 << 40)), READ);
        let small = Vec::with_capacity(4096);
        assert!(!needs_big(&small, small.capacity(), 100));
        assert!(needs_big(&small, small.capacity(), READ));
    }
}
