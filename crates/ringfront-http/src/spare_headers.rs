//! Header lists kept per thread for the next heads: a parsed head's list comes back here
//! when the head is dropped and the next head's parse takes it, so that parsing request and
//! response heads allocates nothing once a thread is warm.

use std::cell::RefCell;

use crate::span::Header;

/// Lists kept per thread (a busy worker's heads in flight, two a request), how many `trim`
/// leaves, and the largest capacity one keeps.
const KEPT: usize = 1024;
const QUIET: usize = 64;
const MAX_FIELDS: usize = 128;

thread_local! {
    static SPARE: RefCell<Vec<Vec<Header>>> = const { RefCell::new(Vec::new()) };
}

/// An empty list: a spare one, else a new one (which allocates when first pushed to).
pub(crate) fn take() -> Vec<Header> {
    SPARE
        .try_with(|s| s.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keeps `list` for a next head (unless it never allocated, grew large, or enough are kept).
pub(crate) fn give(mut list: Vec<Header>) {
    if list.capacity() == 0 || list.capacity() > MAX_FIELDS {
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
pub fn trim() {
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.truncate(QUIET);
            s.shrink_to_fit();
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_dropped_heads_list_is_the_next_heads() {
        let buf = b"GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n";
        let mut a = crate::RequestHead::new();
        a.parse(buf).unwrap().unwrap();
        let ptr = a.headers.as_ptr();
        drop(a);
        let mut b = crate::RequestHead::new();
        b.parse(buf).unwrap().unwrap();
        assert_eq!(b.headers.as_ptr(), ptr);
        assert_eq!(b.headers.len(), 2);
    }

    #[test]
    fn a_busy_threads_lists_are_kept_and_trim_leaves_a_quiet_share() {
        let spares = || super::SPARE.with(|s| s.borrow().len());
        let lists: Vec<_> = (0..super::QUIET * 3)
            .map(|_| Vec::<crate::span::Header>::with_capacity(8))
            .collect();
        lists.into_iter().for_each(super::give);
        assert!(spares() >= super::QUIET * 3);
        super::trim();
        assert_eq!(spares(), super::QUIET);
    }
}
