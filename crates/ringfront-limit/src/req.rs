//! A `limit_req_zone`: a fixed-size open-addressed table of atomic slots shared by every
//! worker thread, no lock. A slot is a key word (the key's hash, and what its state was
//! charged in 128-byte units) and a state word (excess in milli-requests, last update's
//! millisecond), each changed by compare-and-swap, so two requests of one key on two
//! threads both count, as under nginx's zone mutex. A zone holds as many states as nginx's
//! slab would ([`crate::slab`]); a new key takes a drained state untouched for a minute
//! (nginx's expiry) or a free slot; when the zone's memory is spent, the least recently
//! updated state near the key's slot gives its memory up (nginx evicts the least recently
//! used state of the whole zone).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::budget::Budget;
use crate::hash::KeyHash;
use crate::rate::Rate;
use crate::slab;

/// How many slots from a key's home slot it may live in.
const WINDOW: usize = 32;
/// Tries when another thread takes the slot a new key was about to take.
const RETRIES: usize = 4;
/// A state created by a lookup that did not account it yet (nginx's node with `last` 0):
/// it reads as drained, and is not evicted.
const FRESH: u64 = u64::MAX;
const MAX_EXCESS: u64 = u32::MAX as u64 - 1;
/// The key word's low bits: the state's charge in `UNIT`s (0: it holds no memory, its
/// slot is only kept for the searches through it).
const UNITS: u64 = 0x3ff;
const UNIT: u64 = 128;

#[derive(Debug, Default)]
struct Slot {
    /// The key's hash with the top bit set, and `UNITS`; 0: never used.
    key: AtomicU64,
    state: AtomicU64,
}

/// What a lookup found (nginx's `ngx_http_limit_req_lookup` return codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Over the burst (`NGX_BUSY`), with the excess it would have had.
    Busy(u64),
    /// Within the burst, not accounted yet (`NGX_AGAIN`, a limit before the last): the
    /// slot to account once every limit passed.
    Again(usize),
    /// Within the burst and accounted (`NGX_OK`, the last limit), with its excess.
    Ok(u64),
    /// No state could be made (`NGX_ERROR`, nginx's "could not allocate node").
    Error,
}

/// The zone's states; the rate is the caller's (nginx keeps a zone's states across a
/// reload that changes its rate).
#[derive(Debug)]
pub struct ReqTable {
    slots: Box<[Slot]>,
    budget: Budget,
}

fn tag(hash: u64) -> u64 {
    (hash | 1 << 63) & !UNITS
}

fn charge_of(key: u64) -> u64 {
    (key & UNITS) * UNIT
}

fn pack(excess: u64, last: u32) -> u64 {
    excess.min(MAX_EXCESS) << 32 | u64::from(last)
}

/// The state's excess, milliseconds since its update at `now`, and its `last`.
fn read(state: u64, now: u32) -> (u64, i64, u32) {
    if state == FRESH {
        return (0, i64::MAX / 4, 0);
    }
    let last = state as u32;
    (state >> 32, Rate::elapsed(now, last), last)
}

impl ReqTable {
    /// A zone of `size` bytes (as `zone=NAME:SIZE`).
    pub fn new(size: u64) -> Self {
        let most = slab::states(size, slab::req_cost(0)) as usize;
        let n = (most * 2).max(WINDOW);
        ReqTable {
            slots: (0..n).map(|_| Slot::default()).collect(),
            budget: Budget::new(slab::budget(size)),
        }
    }

    /// nginx's lookup of `key` (non-empty) at `now` draining at `rate`: the state's excess
    /// after this request compared with `burst` (milli-requests), stored only when
    /// `account` (the last limit).
    pub fn lookup(&self, key: &[u8], now: u64, rate: Rate, burst: u64, account: bool) -> Lookup {
        self.lookup_hashed(KeyHash::of(key), now, rate, burst, account)
    }

    /// [`ReqTable::lookup`] of a key already hashed.
    pub fn lookup_hashed(
        &self,
        key: KeyHash,
        now: u64,
        rate: Rate,
        burst: u64,
        account: bool,
    ) -> Lookup {
        let hash = key.hash;
        let now = now as u32;
        for _ in 0..RETRIES {
            match self.find(hash, now, rate) {
                Found::At(i) => return self.update(i, now, rate, Some(burst), account),
                Found::Room(room) => {
                    if let Some(i) = self.insert(hash, room, (key.len, now, rate, account)) {
                        return match account {
                            true => Lookup::Ok(0),
                            false => Lookup::Again(i),
                        };
                    }
                }
            }
        }
        Lookup::Error
    }

    /// Accounts the request in the state a lookup answered `Again` for (nginx's
    /// `ngx_http_limit_req_account`): its excess at `now`, stored whatever the burst.
    pub fn account(&self, slot: usize, now: u64, rate: Rate) -> u64 {
        match self.update(slot, now as u32, rate, None, true) {
            Lookup::Ok(e) => e,
            _ => 0,
        }
    }

    /// States held now (tests and the status page).
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| charge_of(s.key.load(Ordering::Acquire)) != 0)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn home(&self, hash: u64) -> usize {
        (hash % self.slots.len() as u64) as usize
    }

    fn slot(&self, i: usize) -> &Slot {
        &self.slots[i % self.slots.len()]
    }

    fn find(&self, hash: u64, now: u32, rate: Rate) -> Found {
        let want = tag(hash);
        let home = self.home(hash);
        let mut room = Room::default();
        for step in 0..WINDOW {
            let i = (home + step) % self.slots.len();
            let s = self.slot(i);
            let k = s.key.load(Ordering::Acquire);
            let before_empty = room.empty.is_none();
            if k & !UNITS == want && before_empty {
                if charge_of(k) != 0 {
                    return Found::At(i);
                }
                // The key's own state, given up for another key: made anew (charged).
                room.stale = Some((i, k));
                continue;
            }
            if k == 0 {
                room.empty = room.empty.or(Some(i));
                continue;
            }
            let state = s.state.load(Ordering::Acquire);
            if state == FRESH {
                continue;
            }
            let (excess, ms, _) = read(state, now);
            let charged = charge_of(k) != 0;
            if before_empty && room.stale.is_none() && (!charged || rate.stale(excess, ms)) {
                room.stale = Some((i, k));
            }
            if before_empty && room.oldest.is_none_or(|(_, _, age)| ms > age) {
                room.oldest = Some((i, k, ms));
            }
            if charged && room.victim.is_none_or(|(_, _, age)| ms > age) {
                room.victim = Some((i, k, ms));
            }
        }
        Found::Room(room)
    }

    /// Makes a state for a new key in `room`; its slot, or `None` when another thread took
    /// the slot first or no memory could be freed. The slot is a drained state (nginx's
    /// expiry), a free one, or the least recently updated one before a free one; when the
    /// zone's memory is spent, the least recently updated state of the window gives its
    /// memory up (it keeps its slot, drained, so that the searches through it still work).
    fn insert(
        &self,
        hash: u64,
        room: Room,
        (len, now, rate, account): (usize, u32, Rate, bool),
    ) -> Option<usize> {
        let cost = slab::req_cost(len);
        let (i, old) = match (room.stale, room.empty, room.oldest) {
            (Some((i, k)), _, _) => (i, k),
            (None, Some(i), _) => (i, 0),
            (None, None, Some((i, k, _))) => (i, k),
            (None, None, None) => return None,
        };
        let reused = charge_of(old);
        // Memory: what the slot held, else the zone's, else what the victim gives up.
        let extra = cost.saturating_sub(reused);
        if !self.budget.charge(extra) {
            match room.victim {
                Some((v, k, _)) if v != i => self.abandon(v, k),
                _ => {}
            }
            if !self.budget.charge(extra) {
                return None;
            }
        }
        let mine = tag(hash) | (cost / UNIT).min(UNITS);
        let s = self.slot(i);
        let before = s.state.load(Ordering::Acquire);
        if s.key
            .compare_exchange(old, mine, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.budget.refund(extra);
            return None;
        }
        self.budget.refund(reused.saturating_sub(cost));
        let state = match account {
            true => pack(0, now),
            false => FRESH,
        };
        // A request of the same key on another thread may have found the key and
        // updated the state already: then this one counts on top of it.
        if s.state
            .compare_exchange(before, state, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
            && account
        {
            self.update(i, now, rate, None, true);
        }
        if self.duplicate_before(hash, i) {
            self.abandon(i, mine);
            return None;
        }
        Some(i)
    }

    /// Another thread made a state for the same key in an earlier slot at the same time:
    /// that one is the key's.
    fn duplicate_before(&self, hash: u64, at: usize) -> bool {
        let home = self.home(hash);
        let want = tag(hash);
        (0..WINDOW)
            .map(|step| (home + step) % self.slots.len())
            .take_while(|&i| i != at)
            .any(|i| self.slot(i).key.load(Ordering::Acquire) & !UNITS == want)
    }

    /// Slot `i` (holding key word `k`) gives its memory back; it stays in place, without
    /// memory, free for the next new key of its window.
    fn abandon(&self, i: usize, k: u64) {
        let s = self.slot(i);
        if s.key
            .compare_exchange(k, k & !UNITS, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.budget.refund(charge_of(k));
        }
    }

    fn update(&self, i: usize, now: u32, rate: Rate, burst: Option<u64>, account: bool) -> Lookup {
        let s = self.slot(i);
        let mut state = s.state.load(Ordering::Acquire);
        loop {
            let (excess, ms, last) = read(state, now);
            let excess = rate.excess(excess, ms);
            if burst.is_some_and(|b| excess > b) {
                return Lookup::Busy(excess);
            }
            if !account {
                return Lookup::Again(i);
            }
            let last = if ms != 0 || state == FRESH { now } else { last };
            match s.state.compare_exchange_weak(
                state,
                pack(excess, last),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Lookup::Ok(excess),
                Err(now_state) => state = now_state,
            }
        }
    }
}

enum Found {
    At(usize),
    Room(Room),
}

/// Where a new key may go.
#[derive(Default, Clone, Copy)]
struct Room {
    empty: Option<usize>,
    /// A drained state or one without memory, before `empty`.
    stale: Option<(usize, u64)>,
    /// The least recently updated state before `empty`.
    oldest: Option<(usize, u64, i64)>,
    /// The least recently updated state that holds memory, anywhere in the window.
    victim: Option<(usize, u64, i64)>,
}

#[cfg(test)]
#[path = "req_tests.rs"]
mod tests;
