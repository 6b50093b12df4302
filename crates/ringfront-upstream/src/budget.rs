//! `proxy_next_upstream_budget percent=N [min=M]` (Envoy's retry budget; nginx and HAProxy
//! have none): the retries in flight to a group never exceed `N` percent of the requests in
//! flight to it, or `M` (retries always allowed at once), whichever is more. Counted across
//! every worker with two atomics per group; a retry takes a slot with a compare-and-swap
//! against the limit, so the limit holds without a lock.

use std::sync::atomic::{AtomicU64, Ordering};

/// The budget one location gives its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudget {
    /// Share of the active requests that may be retries, in percent (0-100).
    pub percent: u32,
    /// Retries always allowed at once, whatever the share.
    pub min: u32,
}

impl RetryBudget {
    /// Retries allowed in flight while `active` requests are.
    pub fn limit(&self, active: u64) -> u64 {
        let share = active.saturating_mul(u64::from(self.percent)) / 100;
        share.max(u64::from(self.min))
    }
}

/// One group's requests and retries in flight, and when the budget was last logged.
#[derive(Debug, Default)]
pub struct Load {
    active: AtomicU64,
    retries: AtomicU64,
    logged: AtomicU64,
}

impl Load {
    pub fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }

    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Whether this is the first denial logged since `interval` seconds (one line per
    /// interval for every worker together).
    pub fn should_log(&self, now_secs: u64, interval: u64) -> bool {
        let last = self.logged.load(Ordering::Relaxed);
        (last == 0 || now_secs.saturating_sub(last) >= interval)
            && self
                .logged
                .compare_exchange(last, now_secs.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// One request's share of its group's load: counted active from creation until drop; a
/// retry slot held from its first admitted retry until drop.
#[derive(Debug)]
pub struct Slot<'a> {
    load: &'a Load,
    budget: RetryBudget,
    retrying: bool,
}

impl<'a> Slot<'a> {
    pub fn new(load: &'a Load, budget: RetryBudget) -> Self {
        load.active.fetch_add(1, Ordering::Relaxed);
        Slot {
            load,
            budget,
            retrying: false,
        }
    }

    pub fn load(&self) -> &'a Load {
        self.load
    }

    /// May this request try another peer now? The first retry takes a slot if one is
    /// free; a later one keeps its slot only while the retries in flight (its own counted)
    /// are within the limit, and gives it up when they are not.
    pub fn admit(&mut self) -> bool {
        let active = self.load.active.load(Ordering::Relaxed);
        let limit = self.budget.limit(active);
        if self.retrying {
            if self.load.retries.load(Ordering::Relaxed) <= limit {
                return true;
            }
            self.release();
            return false;
        }
        let taken = self
            .load
            .retries
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |r| {
                (r < limit).then_some(r + 1)
            })
            .is_ok();
        self.retrying = taken;
        taken
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.retrying) {
            self.load.retries.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.release();
        self.load.active.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: RetryBudget = RetryBudget {
        percent: 20,
        min: 3,
    };

    #[test]
    fn the_limit_is_the_share_or_the_minimum() {
        assert_eq!(B.limit(0), 3);
        assert_eq!(B.limit(10), 3);
        assert_eq!(B.limit(20), 4);
        assert_eq!(B.limit(100), 20);
        assert_eq!(B.limit(104), 20);
        let none = RetryBudget { percent: 0, min: 0 };
        assert_eq!(none.limit(1000), 0);
        let all = RetryBudget {
            percent: 100,
            min: 0,
        };
        assert_eq!(all.limit(7), 7);
        assert_eq!(all.limit(u64::MAX), u64::MAX / 100);
    }

    /// `n` requests in flight; each asks for a retry: how many get one.
    fn admitted(load: &Load, n: usize, budget: RetryBudget) -> usize {
        let mut slots: Vec<Slot> = (0..n).map(|_| Slot::new(load, budget)).collect();
        slots.iter_mut().map(|s| s.admit()).filter(|&ok| ok).count()
    }

    #[test]
    fn retries_in_flight_stay_within_the_budget() {
        let load = Load::default();
        assert_eq!(admitted(&load, 100, B), 20);
        assert_eq!(
            (load.active(), load.retries()),
            (0, 0),
            "all released on drop"
        );
        assert_eq!(admitted(&load, 5, B), 3, "the minimum");
        let tight = RetryBudget { percent: 0, min: 0 };
        assert_eq!(admitted(&load, 50, tight), 0);
    }

    #[test]
    fn a_retry_keeps_its_slot_only_while_within_the_limit() {
        let load = Load::default();
        let b = RetryBudget {
            percent: 50,
            min: 0,
        };
        let mut a = Slot::new(&load, b);
        let others: Vec<Slot> = (0..3).map(|_| Slot::new(&load, b)).collect();
        assert!(a.admit()); // 4 active: limit 2
        let mut c = Slot::new(&load, b);
        assert!(c.admit()); // 5 active: limit 2, 2 retries
        drop(others); // 2 active: limit 1, 2 retries in flight
        assert!(!a.admit(), "over the limit: the slot is given up");
        assert_eq!(load.retries(), 1);
        assert!(c.admit(), "1 retry in flight, limit 1");
        drop((a, c));
        assert_eq!((load.active(), load.retries()), (0, 0));
    }

    #[test]
    fn workers_at_once_never_exceed_the_limit() {
        let load = Load::default();
        let b = RetryBudget {
            percent: 10,
            min: 0,
        };
        // 4 threads x 200 requests in flight at once: 80 retries at most, and 80 taken.
        let ready = std::sync::Barrier::new(4);
        let done = std::sync::Barrier::new(4);
        let got = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let mut mine: Vec<Slot> = (0..200).map(|_| Slot::new(&load, b)).collect();
                    ready.wait();
                    let n = mine.iter_mut().map(|x| x.admit()).filter(|&ok| ok).count();
                    got.fetch_add(n, Ordering::Relaxed);
                    done.wait();
                });
            }
        });
        assert_eq!(got.into_inner(), 80);
        assert_eq!((load.active(), load.retries()), (0, 0));
    }

    #[test]
    fn one_log_line_per_interval() {
        let load = Load::default();
        assert!(load.should_log(100, 10));
        assert!(!load.should_log(105, 10));
        assert!(load.should_log(110, 10));
    }
}
