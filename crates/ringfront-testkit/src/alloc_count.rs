//! A counting global allocator for tests that show a path allocates nothing: the system's
//! allocator, with each thread's allocations (and reallocations) counted. A test binary
//! installs it with
//! `#[global_allocator] static A: ringfront_testkit::alloc_count::Counting = Counting;`
//! and reads [`allocations`] before and after the code under test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The counting allocator (install it as the test binary's `#[global_allocator]`).
pub struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches a
// thread-local cell (`try_with`: nothing while the thread's locals are torn down).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) this thread made so far; counted only where
/// [`Counting`] is the global allocator.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}
