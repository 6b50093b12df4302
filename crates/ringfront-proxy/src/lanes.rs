//! Queues of deadlines, one lane per timeout value: entries of one timeout are pushed in
//! time order, so each lane's deadlines ascend and only its front needs looking at. Entries
//! that went stale (their connection or I/O moved on) stay until they reach the front or a
//! compaction drops them. Used by the idle connections' queue (`idle.rs`) and the per-I/O
//! deadlines (`deadline.rs`).
//!
//! Once warm, a lane allocates nothing: a compaction shrinks a lane only when it is far
//! larger than needed, and empty lanes are kept (up to `MAX_EMPTY_LANES`), since a queue
//! shrunk to its floor, or a lane dropped, would be allocated again before long.

use std::collections::VecDeque;

/// Empty lanes kept for their timeouts' next entries; past this many they are dropped
/// (timeouts taken from variables could make many).
const MAX_EMPTY_LANES: usize = 16;

/// The entries of one timeout value, ascending.
pub struct Lane<L, E> {
    pub limit: L,
    pub q: VecDeque<E>,
}

/// Every lane in use.
pub struct Lanes<L, E> {
    lanes: Vec<Lane<L, E>>,
}

impl<L, E> Default for Lanes<L, E> {
    fn default() -> Self {
        Lanes { lanes: Vec::new() }
    }
}

impl<L: PartialEq, E> Lanes<L, E> {
    /// Appends `entry` to the lane of `limit` (made if there is none).
    pub fn push(&mut self, limit: L, entry: E) {
        match self.lanes.iter_mut().find(|l| l.limit == limit) {
            Some(l) => l.q.push_back(entry),
            None => self.lanes.push(Lane {
                limit,
                q: VecDeque::from([entry]),
            }),
        }
    }

    /// Entries queued, stale ones included.
    pub fn len(&self) -> usize {
        self.lanes.iter().map(|l| l.q.len()).sum()
    }

    /// Keeps only the entries `live` accepts.
    pub fn compact(&mut self, mut live: impl FnMut(&E) -> bool) {
        for l in self.lanes.iter_mut() {
            l.q.retain(&mut live);
            let keep = 2 * l.q.len() + 64;
            if l.q.capacity() > 4 * keep {
                l.q.shrink_to(keep);
            }
        }
        self.settle();
    }

    /// Drops the empty lanes once there are more than a few (after entries were taken).
    pub fn settle(&mut self) {
        if self.lanes.len() > MAX_EMPTY_LANES {
            self.lanes.retain(|l| !l.q.is_empty());
        }
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Lane<L, E>> {
        self.lanes.iter_mut()
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Lane<L, E>> {
        self.lanes.get_mut(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_go_to_their_timeouts_lane_in_order() {
        let mut l = Lanes::default();
        l.push(5u32, 1);
        l.push(7, 2);
        l.push(5, 3);
        assert_eq!(l.len(), 3);
        let got: Vec<(u32, Vec<i32>)> = l
            .iter_mut()
            .map(|x| (x.limit, x.q.iter().copied().collect()))
            .collect();
        assert_eq!(got, vec![(5, vec![1, 3]), (7, vec![2])]);
    }

    #[test]
    fn compaction_keeps_live_entries_and_a_few_empty_lanes() {
        let mut l = Lanes::default();
        for limit in 0..4u32 {
            for e in 0..100 {
                l.push(limit, e);
            }
        }
        let cap = l.get_mut(0).map(|x| x.q.capacity()).unwrap_or(0);
        l.compact(|e| *e == 7);
        assert_eq!(l.len(), 4);
        assert_eq!(
            l.get_mut(0).map(|x| x.q.capacity()),
            Some(cap),
            "not shrunk"
        );
        l.compact(|_| false);
        assert_eq!(l.len(), 0);
        assert!(l.get_mut(3).is_some(), "empty lanes kept while few");
        for limit in 4..=MAX_EMPTY_LANES as u32 {
            l.push(limit, 0);
        }
        l.compact(|_| false);
        assert!(l.get_mut(0).is_none(), "past the bound, empty lanes go");
    }

    #[test]
    fn a_far_oversized_lane_is_shrunk() {
        let mut l = Lanes::default();
        for e in 0..10_000 {
            l.push(1u32, e);
        }
        l.compact(|e| *e < 10);
        let cap = l.get_mut(0).map(|x| x.q.capacity()).unwrap_or(usize::MAX);
        assert!(cap < 1_000, "capacity {cap}");
    }
}
