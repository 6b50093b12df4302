//! A `limit_conn_zone`: per key, the requests in flight, in a fixed-size open-addressed
//! table of atomic slots shared by every worker thread without a lock. A slot is one word
//! (the key's hash above, the state's slab chunk as a power of two in 4 bits, the count in
//! the low 16 bits, as nginx's `u_short conn`) changed
//! by compare-and-swap; a count back at 0 frees the state (nginx deletes the node), leaving
//! a tombstone the next new key may take. A zone holds as many states as nginx's slab.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::budget::Budget;
use crate::hash::KeyHash;
use crate::slab;

const WINDOW: usize = 32;
const RETRIES: usize = 4;
/// A freed slot: searches go past it, a new key may take it.
const TOMB: u64 = 1;
const COUNT: u64 = 0xffff;

#[derive(Debug, Default)]
struct Slot {
    word: AtomicU64,
}

const CLASS_SHIFT: u32 = 16;
const CLASS: u64 = 0xf << CLASS_SHIFT;

/// What the state in `word` was charged: its chunk, `1 << class`.
fn cost_of(word: u64) -> u64 {
    1 << ((word & CLASS) >> CLASS_SHIFT)
}

/// A counted request: give it back to [`ConnTable::release`] when the request ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnSlot(usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    Passed(ConnSlot),
    /// The key has `limit` requests in flight already.
    Busy,
    /// No room for a new key's state (nginx's failed slab allocation).
    Full,
}

#[derive(Debug)]
pub struct ConnTable {
    slots: Box<[Slot]>,
    budget: Budget,
}

fn tag(hash: u64) -> u64 {
    (hash | 1 << 63) & !(COUNT | CLASS)
}

const KEY: u64 = !(COUNT | CLASS);

impl ConnTable {
    pub fn new(size: u64) -> Self {
        let most = slab::states(size, slab::conn_cost(0)) as usize;
        let n = (most * 2).max(WINDOW);
        ConnTable {
            slots: (0..n).map(|_| Slot::default()).collect(),
            budget: Budget::new(slab::budget(size)),
        }
    }

    /// Counts one more request of `key` (non-empty) unless `limit` are in flight.
    pub fn acquire(&self, key: &[u8], limit: u32) -> Acquire {
        self.acquire_hashed(KeyHash::of(key), limit)
    }

    /// [`ConnTable::acquire`] of a key already hashed.
    pub fn acquire_hashed(&self, key: KeyHash, limit: u32) -> Acquire {
        let hash = key.hash;
        let want = tag(hash);
        let home = (hash % self.slots.len() as u64) as usize;
        'retry: for _ in 0..RETRIES {
            let mut free = None;
            for step in 0..WINDOW {
                let i = (home + step) % self.slots.len();
                let w = self.slots[i].word.load(Ordering::Acquire);
                if w & KEY == want {
                    if w & COUNT >= u64::from(limit) {
                        return Acquire::Busy;
                    }
                    match self.slots[i].word.compare_exchange(
                        w,
                        w + 1,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Acquire::Passed(ConnSlot(i)),
                        Err(_) => continue 'retry,
                    }
                }
                if w == TOMB && free.is_none() {
                    free = Some(i);
                }
                if w == 0 {
                    free = free.or(Some(i));
                    break;
                }
            }
            let Some(i) = free else {
                return Acquire::Full;
            };
            let cost = slab::conn_cost(key.len);
            if !self.budget.charge(cost) {
                return Acquire::Full;
            }
            let mine = want | u64::from(cost.trailing_zeros()) << CLASS_SHIFT | 1;
            let s = &self.slots[i];
            let old = s.word.load(Ordering::Acquire);
            if !matches!(old, 0 | TOMB)
                || s.word
                    .compare_exchange(old, mine, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                self.budget.refund(cost);
                continue;
            }
            if self.duplicate_before(want, home, i) {
                // Another thread made the key's state in an earlier slot meanwhile: give
                // this one up (unless a request already counted on it) and count there.
                if s.word
                    .compare_exchange(mine, TOMB, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    self.budget.refund(cost);
                    continue;
                }
            }
            return Acquire::Passed(ConnSlot(i));
        }
        Acquire::Full
    }

    /// The request counted in `slot` ended.
    pub fn release(&self, slot: ConnSlot) {
        let s = &self.slots[slot.0];
        let mut w = s.word.load(Ordering::Acquire);
        loop {
            if w & KEY == 0 {
                return;
            }
            let next = match w & COUNT {
                0 => return,
                1 => TOMB,
                _ => w - 1,
            };
            match s
                .word
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == TOMB => return self.budget.refund(cost_of(w)),
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
    }

    /// Requests of `key` in flight now.
    pub fn count(&self, key: &[u8]) -> u32 {
        let hash = crate::hash::hash(key);
        let want = tag(hash);
        let home = (hash % self.slots.len() as u64) as usize;
        (0..WINDOW)
            .map(|step| {
                self.slots[(home + step) % self.slots.len()]
                    .word
                    .load(Ordering::Acquire)
            })
            .filter(|w| w & KEY == want)
            .map(|w| (w & COUNT) as u32)
            .sum()
    }

    /// States held now.
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| !matches!(s.word.load(Ordering::Acquire), 0 | TOMB))
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn duplicate_before(&self, want: u64, home: usize, at: usize) -> bool {
        (0..WINDOW)
            .map(|step| (home + step) % self.slots.len())
            .take_while(|&i| i != at)
            .any(|i| self.slots[i].word.load(Ordering::Acquire) & KEY == want)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_up_to_the_limit_and_frees_at_zero() {
        let t = ConnTable::new(1 << 20);
        let Acquire::Passed(a) = t.acquire(b"k", 2) else {
            panic!()
        };
        let Acquire::Passed(b) = t.acquire(b"k", 2) else {
            panic!()
        };
        assert_eq!(a, b, "one state per key");
        assert_eq!(t.acquire(b"k", 2), Acquire::Busy);
        assert_eq!(t.count(b"k"), 2);
        t.release(a);
        assert_eq!(t.count(b"k"), 1);
        t.release(b);
        assert_eq!(t.count(b"k"), 0);
        assert!(t.is_empty(), "freed at zero");
        assert!(matches!(t.acquire(b"k", 1), Acquire::Passed(_)));
    }

    #[test]
    fn a_full_zone_refuses_new_keys() {
        let t = ConnTable::new(8 * 4096);
        let most = slab::states(8 * 4096, slab::conn_cost(4));
        assert_eq!(most, 320);
        let mut held = Vec::new();
        let mut full = 0;
        for i in 0..400u32 {
            match t.acquire(&i.to_be_bytes(), 1) {
                Acquire::Passed(s) => held.push(s),
                Acquire::Full => full += 1,
                Acquire::Busy => panic!("new key"),
            }
        }
        assert_eq!(held.len() as u64, most);
        assert_eq!(full, 80);
        for s in held {
            t.release(s);
        }
        assert!(t.is_empty());
        assert!(matches!(t.acquire(b"again", 1), Acquire::Passed(_)));
    }

    #[test]
    fn threads_never_exceed_the_limit() {
        use std::sync::atomic::AtomicU32;
        let t = Arc::new(ConnTable::new(1 << 20));
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (t, inside, most) = (t.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..5000 {
                        if let Acquire::Passed(s) = t.acquire(b"one", 3) {
                            let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            inside.fetch_sub(1, Ordering::SeqCst);
                            t.release(s);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 3);
        assert!(t.is_empty(), "every count given back");
        assert_eq!(t.budget.left(), slab::budget(1 << 20));
    }
}
