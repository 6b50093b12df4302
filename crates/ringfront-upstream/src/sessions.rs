//! `sticky learn`'s zone: session id -> peer, shared by every worker without a lock. A
//! fixed table of slots (sized from the zone's size, as nginx fits about 8000 sessions in a
//! megabyte), open addressing over a short probe window; each slot is two atomics: the
//! session's 64-bit hash and `last use (ms) << 24 | peer + 1`. An entry expires `timeout`
//! after its last use (nginx's session timer); the caller passes `now`. When the window
//! is full the least recently used entry in it goes, as nginx expires its least recently
//! used session when the zone is full.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::sid::siphash24;

/// Slots looked at from a session's home slot.
const WINDOW: usize = 8;
/// Bytes of zone per session, as nginx's node (about 8000 per megabyte).
const BYTES_PER_SESSION: u64 = 128;
const PEER_BITS: u32 = 24;
const PEER_MASK: u64 = (1 << PEER_BITS) - 1;
const KEY: [u64; 2] = [0x6c65_6172_6e65_6421, 0x7365_7373_696f_6e73];

struct Slot {
    key: AtomicU64,
    meta: AtomicU64,
}

/// The sessions of one `sticky learn` zone.
pub struct Sessions {
    slots: Box<[Slot]>,
    mask: usize,
    timeout_ms: u64,
    size: u64,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("slots", &self.slots.len())
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

fn hash(id: &[u8]) -> u64 {
    siphash24(KEY, id).max(1)
}

fn pack(now_ms: u64, peer: usize) -> u64 {
    (now_ms << PEER_BITS) | ((peer as u64 + 1) & PEER_MASK)
}

fn last(meta: u64) -> u64 {
    meta >> PEER_BITS
}

fn peer_of(meta: u64) -> Option<usize> {
    usize::try_from((meta & PEER_MASK).checked_sub(1)?).ok()
}

impl Sessions {
    /// A zone of `size` bytes whose entries live `timeout_ms` after their last use.
    pub fn new(size: u64, timeout_ms: u64) -> Self {
        let n = (size / BYTES_PER_SESSION)
            .clamp(WINDOW as u64, 1 << 24)
            .next_power_of_two() as usize;
        let slots = (0..n)
            .map(|_| Slot {
                key: AtomicU64::new(0),
                meta: AtomicU64::new(0),
            })
            .collect();
        Sessions {
            slots,
            mask: n - 1,
            timeout_ms,
            size,
        }
    }

    /// The zone size it was made for.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn live(&self, meta: u64, now_ms: u64) -> bool {
        meta != 0 && now_ms.saturating_sub(last(meta)) < self.timeout_ms
    }

    fn window(&self, h: u64) -> impl Iterator<Item = &Slot> {
        let home = h as usize & self.mask;
        (0..WINDOW).filter_map(move |i| self.slots.get((home + i) & self.mask))
    }

    /// The peer (index in its group) of session `id`, unless unknown or expired.
    pub fn lookup(&self, id: &[u8], now_ms: u64) -> Option<usize> {
        let h = hash(id);
        for s in self.window(h) {
            if s.key.load(Ordering::Acquire) != h {
                continue;
            }
            let meta = s.meta.load(Ordering::Acquire);
            // The slot may have been taken over meanwhile: only a stable key counts.
            if s.key.load(Ordering::Acquire) == h && self.live(meta, now_ms) {
                return peer_of(meta);
            }
        }
        None
    }

    /// Session `id` uses `peer` now. `create`: add it if unknown (else only a known,
    /// unexpired session is refreshed, as nginx's learn with a lookup value only).
    pub fn learn(&self, id: &[u8], peer: usize, create: bool, now_ms: u64) {
        let h = hash(id);
        let fresh = pack(now_ms, peer);
        for s in self.window(h) {
            if s.key.load(Ordering::Acquire) == h {
                let meta = s.meta.load(Ordering::Acquire);
                if self.live(meta, now_ms) || create {
                    s.meta.store(fresh, Ordering::Release);
                }
                return;
            }
        }
        if create {
            self.insert(h, fresh, now_ms);
        }
    }

    /// Takes an empty or expired slot of the window, else its least recently used one.
    fn insert(&self, h: u64, fresh: u64, now_ms: u64) {
        for _ in 0..WINDOW {
            let victim = self
                .window(h)
                .map(|s| {
                    (
                        s,
                        s.key.load(Ordering::Acquire),
                        s.meta.load(Ordering::Acquire),
                    )
                })
                .min_by_key(|&(_, k, m)| match (k, self.live(m, now_ms)) {
                    (0, _) => 0,
                    (_, false) => 1,
                    _ => 2 + last(m),
                });
            let Some((s, k, m)) = victim else { return };
            // First retire the old entry (readers of it now see it expired), then claim the
            // slot; a writer that lost either race tries again.
            if s.meta
                .compare_exchange(m, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            if s.key
                .compare_exchange(k, h, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            s.meta.store(fresh, Ordering::Release);
            return;
        }
    }

    /// Entries not expired at `now_ms` (status, tests).
    pub fn len_live(&self, now_ms: u64) -> usize {
        self.slots
            .iter()
            .filter(|s| self.live(s.meta.load(Ordering::Relaxed), now_ms))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    #[test]
    fn learned_sessions_are_found_until_they_expire() {
        let s = Sessions::new(1 << 20, 10 * MIN);
        assert_eq!(s.capacity(), 8192);
        s.learn(b"abc", 2, true, 1_000);
        assert_eq!(s.lookup(b"abc", 1_000), Some(2));
        assert_eq!(s.lookup(b"abd", 1_000), None);
        assert_eq!(s.lookup(b"abc", 1_000 + 10 * MIN - 1), Some(2));
        assert_eq!(s.lookup(b"abc", 1_000 + 10 * MIN), None);
    }

    #[test]
    fn use_refreshes_and_moves_a_session() {
        let s = Sessions::new(1 << 20, MIN);
        s.learn(b"x", 0, true, 0);
        s.learn(b"x", 1, false, MIN / 2); // a request with the session, answered by peer 1
        assert_eq!(s.lookup(b"x", MIN + 1), Some(1));
        // Without create an unknown session is not added.
        s.learn(b"y", 0, false, 0);
        assert_eq!(s.lookup(b"y", 0), None);
        // Nor an expired one revived.
        s.learn(b"x", 0, false, 3 * MIN);
        assert_eq!(s.lookup(b"x", 3 * MIN), None);
        s.learn(b"x", 0, true, 3 * MIN);
        assert_eq!(s.lookup(b"x", 3 * MIN), Some(0));
    }

    #[test]
    fn a_full_zone_drops_the_least_recently_used() {
        let s = Sessions::new(0, 10 * MIN); // the smallest table: one window
        assert_eq!(s.capacity(), WINDOW);
        for i in 0..WINDOW as u64 {
            s.learn(&i.to_le_bytes(), 1, true, i);
        }
        s.learn(b"new", 3, true, 100);
        assert_eq!(s.lookup(b"new", 100), Some(3));
        assert_eq!(s.lookup(&0u64.to_le_bytes(), 100), None, "the oldest went");
        assert_eq!(s.lookup(&7u64.to_le_bytes(), 100), Some(1));
        assert_eq!(s.len_live(100), WINDOW);
    }

    #[test]
    fn workers_learning_at_once_lose_no_entry_of_their_own() {
        let s = std::sync::Arc::new(Sessions::new(1 << 20, 10 * MIN));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..500u32 {
                        let id = format!("{t}-{i}");
                        s.learn(id.as_bytes(), t, true, 5);
                        assert_eq!(s.lookup(id.as_bytes(), 5), Some(t));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(s.len_live(5), 2000);
    }
}
