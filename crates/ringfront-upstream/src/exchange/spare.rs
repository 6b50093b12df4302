//! Try lists kept per thread for the next exchanges: the caller gives a request's list back
//! when it is done with it ([`keep_tries`]), and the next [`Exchange::new`](super::Exchange::new)
//! takes it, so that an exchange allocates nothing once a thread is warm.

use std::cell::RefCell;

use super::TryRecord;

/// Lists kept per thread (one per request in flight on a busy worker), how many
/// [`trim_tries`] leaves, and the largest capacity one keeps.
const KEPT: usize = 1024;
const QUIET: usize = 64;
const MAX_TRIES: usize = 16;

thread_local! {
    static SPARE: RefCell<Vec<Vec<TryRecord>>> = const { RefCell::new(Vec::new()) };
}

/// An empty list with room for one try: a spare one, else a new one.
pub(super) fn take() -> Vec<TryRecord> {
    let spare = SPARE.try_with(|s| s.try_borrow_mut().ok()?.pop());
    spare
        .ok()
        .flatten()
        .unwrap_or_else(|| Vec::with_capacity(1))
}

/// Keeps a request's try list for a next exchange on this thread (unless it never
/// allocated, grew large, or enough are kept).
pub fn keep_tries(mut list: Vec<TryRecord>) {
    if list.capacity() == 0 || list.capacity() > MAX_TRIES {
        return;
    }
    list.clear();
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < KEPT {
                s.push(list);
            }
        }
    });
}

/// Keeps only a quiet thread's share of the spare lists (after a busy period).
pub fn trim_tries() {
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.truncate(QUIET);
            s.shrink_to_fit();
        }
    });
}
