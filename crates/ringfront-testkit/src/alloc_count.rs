//! A counting global allocator for tests that show a path allocates nothing: the system's
//! allocator, with each thread's allocations (and reallocations) counted. A test binary
//! installs it with
//! `#[global_allocator] static A: ringfront_testkit::alloc_count::Counting = Counting;`
//! and reads [`allocations`] before and after the code under test. Another thread's
//! allocations (a worker's, started by the test) are counted in [`tracked`] once that
//! thread called [`track_this_thread`]; with `RINGFRONT_ALLOC_TRACE=1` in the environment
//! each of them is printed with its backtrace, to find where they come from.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Whether this thread's allocations count in `TRACKED`; whether one is being traced.
    static TRACKING: Cell<(bool, bool)> = const { Cell::new((false, false)) };
}

/// Allocations of the tracked threads.
static TRACKED: AtomicU64 = AtomicU64::new(0);
/// Whether the tracked threads' allocations are printed with a backtrace.
static TRACE: AtomicBool = AtomicBool::new(false);

fn count() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    let _ = TRACKING.try_with(|t| {
        let (tracked, tracing) = t.get();
        if !tracked || tracing {
            return;
        }
        TRACKED.fetch_add(1, Ordering::Relaxed);
        if TRACE.load(Ordering::Relaxed) && !tracing {
            t.set((true, true));
            eprintln!(
                "allocation:\n{}",
                std::backtrace::Backtrace::force_capture()
            );
            t.set((true, false));
        }
    });
}

/// Counts this thread's allocations (and reallocations) in [`tracked`] from now on.
pub fn track_this_thread() {
    TRACE.store(
        std::env::var_os("RINGFRONT_ALLOC_TRACE").is_some_and(|v| v == "1"),
        Ordering::Relaxed,
    );
    TRACKING.with(|t| t.set((true, false)));
}

/// Allocations (and reallocations) the tracked threads made so far.
pub fn tracked() -> u64 {
    TRACKED.load(Ordering::Relaxed)
}

/// The counting allocator (install it as the test binary's `#[global_allocator]`).
pub struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches a
// thread-local cell (`try_with`: nothing while the thread's locals are torn down).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) this thread made so far; counted only where
/// [`Counting`] is the global allocator.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}
