//! The unit tests' global allocator: the test kit's counting one, so a test can show that a
//! request path allocates nothing.

pub use ringfront_testkit::alloc_count::allocations;
use ringfront_testkit::alloc_count::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn counts_this_threads_allocations() {
    let before = allocations();
    drop(std::hint::black_box(vec![0u8; 64]));
    assert_eq!(allocations() - before, 1);
}
