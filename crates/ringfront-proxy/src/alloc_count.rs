//! The unit tests' global allocator: the test kit's counting one, so a test can show that a
//! request path allocates nothing.

use ringfront_testkit::alloc_count::Counting;
pub use ringfront_testkit::alloc_count::{allocations, track_this_thread, tracked};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn counts_this_threads_allocations() {
    let before = allocations();
    drop(std::hint::black_box(vec![0u8; 64]));
    assert_eq!(allocations() - before, 1);
}
