//! A zone's memory as a byte budget: a state is charged what nginx's slab would give it
//! ([`crate::slab`]) and refunded when it goes, so a zone holds as many states as nginx's.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct Budget(AtomicU64);

impl Budget {
    pub fn new(bytes: u64) -> Self {
        Budget(AtomicU64::new(bytes))
    }

    /// Takes `cost` bytes; false when fewer are left.
    pub fn charge(&self, cost: u64) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| b.checked_sub(cost))
            .is_ok()
    }

    pub fn refund(&self, cost: u64) {
        self.0.fetch_add(cost, Ordering::AcqRel);
    }

    #[cfg(test)]
    pub fn left(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}
