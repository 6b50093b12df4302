//! How an idle keepalive client connection waits for its next request.
//!
//! Fat: with a read posted into a pooled 8 KiB buffer (the read's future in a small block of
//! its own, future_blocks.rs), so the next request costs no extra ring operation. Lean: for
//! readability only, holding no buffer; the buffer is taken when bytes come, at the cost of
//! one more ring operation per request (7 % more CPU per keep-alive request with 100
//! connections, 12 % with 1,000, `loadtest/ab.sh`, 2026-12-07). Neither holds the request's
//! future: that is built in a spare block when the request's bytes are in.
//!
//! Every connection waits fat while the worker has few connections. Past that, a connection
//! whose last wait was short (a client sending request after request) still waits fat while
//! fewer than `FAT_IDLE_MAX` connections do, so the busy connections of a worker that holds
//! thousands of idle ones do not pay the lean wait; a connection that waits long gives its
//! place up at its next request. Memory stays bounded by `FAT_IDLE_MAX` fat waits.

use std::cell::Cell;

/// Up to this many open connections on a worker, every idle connection waits fat.
pub const LEAN_IDLE_ABOVE: usize = 64;

/// The most connections of a worker waiting fat past `LEAN_IDLE_ABOVE` (8.5 KiB each: about
/// 8.5 MiB). It was 128 while a fat wait held its request's future too (about 22 KiB).
pub const FAT_IDLE_MAX: usize = 1024;

/// A wait this short or shorter is a client sending request after request.
pub const QUICK_MS: u64 = 1000;

/// Whether a connection that goes idle waits fat: `open` connections on the worker,
/// `fat_waiting` of them waiting fat now, `quick` when its last wait was short.
pub fn waits_fat(open: usize, fat_waiting: usize, quick: bool) -> bool {
    open <= LEAN_IDLE_ABOVE || (quick && fat_waiting < FAT_IDLE_MAX)
}

/// Whether a wait from `since_ms` to `now_ms` was short.
pub fn quick(since_ms: u64, now_ms: u64) -> bool {
    now_ms.saturating_sub(since_ms) <= QUICK_MS
}

/// A fat wait in progress, counted in the worker's `fat` until dropped.
pub struct FatWait<'a>(&'a Cell<usize>);

impl<'a> FatWait<'a> {
    pub fn enter(fat: &'a Cell<usize>) -> Self {
        fat.set(fat.get() + 1);
        FatWait(fat)
    }
}

impl Drop for FatWait<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_connections_always_wait_fat() {
        assert!(waits_fat(LEAN_IDLE_ABOVE, LEAN_IDLE_ABOVE, false));
        assert!(waits_fat(1, 0, false));
    }

    #[test]
    fn past_the_threshold_only_quick_connections_wait_fat_while_there_is_room() {
        let many = LEAN_IDLE_ABOVE + 1;
        assert!(!waits_fat(many, 0, false));
        assert!(waits_fat(many, 0, true));
        assert!(waits_fat(10_000, FAT_IDLE_MAX - 1, true));
        assert!(!waits_fat(10_000, FAT_IDLE_MAX, true));
    }

    #[test]
    fn a_wait_is_quick_up_to_its_limit() {
        assert!(quick(5_000, 5_000));
        assert!(quick(5_000, 5_000 + QUICK_MS));
        assert!(!quick(5_000, 5_001 + QUICK_MS));
        // A clock that went back (a test's injected time) is no wait at all.
        assert!(quick(5_000, 4_000));
    }

    #[test]
    fn a_fat_wait_is_counted_until_dropped() {
        let fat = Cell::new(0);
        let a = FatWait::enter(&fat);
        let b = FatWait::enter(&fat);
        assert_eq!(fat.get(), 2);
        drop(a);
        assert_eq!(fat.get(), 1);
        drop(b);
        assert_eq!(fat.get(), 0);
    }
}
