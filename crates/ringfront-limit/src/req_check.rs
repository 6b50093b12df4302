//! nginx's `ngx_http_limit_req_handler` over a location's limits: each limit is looked up
//! in order; only the last is accounted at once, the others once every limit passed (so a
//! later limit's rejection leaves the earlier ones as they were); the request waits for
//! the longest delay any limit asks.

use crate::hash::KeyHash;
use crate::rate::Rate;
use crate::req::{Lookup, ReqTable};

/// One `limit_req` with this request's key (`None`: empty or too long, not accounted).
#[derive(Clone, Copy)]
pub struct Limit<'a> {
    pub table: &'a ReqTable,
    /// The zone's `rate=`.
    pub rate: Rate,
    pub key: Option<KeyHash>,
    /// `burst=` in milli-requests.
    pub burst: u64,
    /// `delay=` in milli-requests (`nodelay`: the largest).
    pub delay: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No limit had a key.
    Declined,
    Passed,
    /// Wait `ms`; `excess` and `limit` (index) for nginx's "delaying request" line.
    Delayed {
        ms: u64,
        excess: u64,
        limit: usize,
    },
    /// Over `limit`'s burst (`excess` for the log line), or `excess` is `None` when no state
    /// could be made (nginx logs no "limiting requests" line then).
    Rejected {
        excess: Option<u64>,
        limit: usize,
    },
}

/// Evaluates `limits` for one request at `now` (milliseconds).
pub fn check(limits: &[Limit<'_>], now: u64) -> Verdict {
    check_each(limits.len(), |n| limits.get(n).copied(), now)
}

/// Evaluates `count` limits for one request at `now`, asking `limit` for each in order
/// (once each; `None`: no limit there, as an empty key). Allocates nothing for up to
/// `INLINE` limits that pass before the last.
pub fn check_each<'a>(
    count: usize,
    mut limit: impl FnMut(usize) -> Option<Limit<'a>>,
    now: u64,
) -> Verdict {
    let mut pending = Pending::default();
    let mut last = None;
    for n in 0..count {
        let Some(l) = limit(n) else { continue };
        let Some(key) = l.key else { continue };
        match l
            .table
            .lookup_hashed(key, now, l.rate, l.burst, n + 1 == count)
        {
            Lookup::Busy(excess) => {
                return Verdict::Rejected {
                    excess: Some(excess),
                    limit: n,
                }
            }
            Lookup::Error => {
                return Verdict::Rejected {
                    excess: None,
                    limit: n,
                }
            }
            Lookup::Again(slot) => pending.push((n, slot, l)),
            Lookup::Ok(excess) => last = Some((n, excess, l)),
        }
    }
    if pending.is_empty() && last.is_none() {
        return Verdict::Declined;
    }
    // nginx starts from the last limit's own delay (none when its key was empty), then
    // accounts the earlier ones, last first, keeping the longest.
    let mut best = match last {
        Some((n, excess, l)) => (l.rate.delay(excess, l.delay), excess, n),
        None => (0, 0, count - 1),
    };
    pending.each_rev(|&(n, slot, l)| {
        let excess = l.table.account(slot, now, l.rate);
        let ms = l.rate.delay(excess, l.delay);
        if ms > best.0 {
            best = (ms, excess, n);
        }
    });
    match best {
        (0, _, _) => Verdict::Passed,
        (ms, excess, limit) => Verdict::Delayed { ms, excess, limit },
    }
}

/// Limits of a location before which a request's state is kept on the stack.
pub const INLINE: usize = 8;

/// A limit looked up and not accounted yet: its index, its slot, the limit.
type Looked<'a> = (usize, usize, Limit<'a>);

/// The limits looked up and not accounted yet, in order: the first `INLINE` on the
/// stack, any further ones (a location with more `limit_req`s) on the heap.
#[derive(Default)]
struct Pending<'a> {
    inline: [Option<Looked<'a>>; INLINE],
    more: Vec<Looked<'a>>,
}

impl<'a> Pending<'a> {
    fn push(&mut self, l: Looked<'a>) {
        match self.inline.iter_mut().find(|s| s.is_none()) {
            Some(free) => *free = Some(l),
            None => self.more.push(l),
        }
    }

    fn is_empty(&self) -> bool {
        self.inline[0].is_none()
    }

    fn each_rev(&self, mut f: impl FnMut(&Looked<'a>)) {
        self.more.iter().rev().for_each(&mut f);
        self.inline.iter().rev().flatten().for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Zone = (ReqTable, Rate);

    fn zone(rate: u64) -> Zone {
        (ReqTable::new(1 << 20), Rate(rate))
    }

    fn limit<'a>(z: &'a Zone, key: &'a [u8], burst: u64, delay: u64) -> Limit<'a> {
        Limit {
            table: &z.0,
            rate: z.1,
            key: Some(KeyHash::of(key)),
            burst: burst * 1000,
            delay: delay * 1000,
        }
    }

    #[test]
    fn burst_delays_and_nodelay() {
        let t = zone(1000);
        let one = [limit(&t, b"a", 2, 0)];
        assert_eq!(check(&one, 10_000), Verdict::Passed);
        assert_eq!(
            check(&one, 10_000),
            Verdict::Delayed {
                ms: 1000,
                excess: 1000,
                limit: 0
            }
        );
        assert_eq!(
            check(&one, 10_000),
            Verdict::Delayed {
                ms: 2000,
                excess: 2000,
                limit: 0
            }
        );
        assert_eq!(
            check(&one, 10_000),
            Verdict::Rejected {
                excess: Some(3000),
                limit: 0
            }
        );
        let u = zone(1000);
        let nodelay = [limit(&u, b"a", 2, u64::MAX / 2000)];
        for _ in 0..3 {
            assert_eq!(check(&nodelay, 10_000), Verdict::Passed);
        }
        assert!(matches!(check(&nodelay, 10_000), Verdict::Rejected { .. }));
        // delay=1: the first excess request passes, the next waits.
        let v = zone(1000);
        let two_stage = [limit(&v, b"a", 3, 1)];
        assert_eq!(check(&two_stage, 0), Verdict::Passed);
        assert_eq!(check(&two_stage, 0), Verdict::Passed);
        assert!(matches!(
            check(&two_stage, 0),
            Verdict::Delayed { ms: 1000, .. }
        ));
    }

    #[test]
    fn a_later_rejection_leaves_earlier_limits_unaccounted() {
        let loose = zone(1000);
        let strict = zone(1000);
        let both = [limit(&loose, b"k", 10, 10), limit(&strict, b"k", 0, 0)];
        assert_eq!(check(&both, 1_000), Verdict::Passed);
        for _ in 0..5 {
            assert_eq!(
                check(&both, 1_000),
                Verdict::Rejected {
                    excess: Some(1000),
                    limit: 1
                }
            );
        }
        // The loose zone counted only the first request.
        let alone = [limit(&loose, b"k", 0, 0)];
        assert_eq!(
            check(&alone, 1_000),
            Verdict::Rejected {
                excess: Some(1000),
                limit: 0
            }
        );
    }

    #[test]
    fn the_longest_delay_wins() {
        let fast = zone(2000);
        let slow = zone(500);
        let both = [limit(&slow, b"k", 5, 0), limit(&fast, b"k", 5, 0)];
        assert_eq!(check(&both, 0), Verdict::Passed);
        // slow: 1000 excess at 0.5 r/s = 2000 ms; fast: 1000 at 2 r/s = 500 ms.
        assert_eq!(
            check(&both, 0),
            Verdict::Delayed {
                ms: 2000,
                excess: 1000,
                limit: 0
            }
        );
    }

    #[test]
    fn empty_keys_are_not_accounted() {
        let t = zone(1000);
        let none = [Limit {
            table: &t.0,
            rate: t.1,
            key: None,
            burst: 0,
            delay: 0,
        }];
        assert_eq!(check(&none, 0), Verdict::Declined);
        assert!(t.0.is_empty());
        // The last limit's key empty: the first is accounted after all.
        let u = zone(1000);
        let first = [
            limit(&u, b"k", 0, 0),
            Limit {
                table: &t.0,
                rate: t.1,
                key: None,
                burst: 0,
                delay: 0,
            },
        ];
        assert_eq!(check(&first, 0), Verdict::Passed);
        assert!(matches!(
            check(&first, 0),
            Verdict::Rejected { limit: 0, .. }
        ));
    }

    #[test]
    fn more_limits_than_the_stack_holds() {
        // Twelve zones, each rate 1 r/s: the second request is 1000 over in every one;
        // zone 0 (delay 0) asks the longest wait, and every zone counted both requests.
        let zones: Vec<Zone> = (0..12).map(|_| zone(1000)).collect();
        let limits: Vec<Limit<'_>> = zones
            .iter()
            .enumerate()
            .map(|(i, z)| limit(z, b"k", 5, u64::from(i > 0)))
            .collect();
        assert!(limits.len() > INLINE);
        assert_eq!(check(&limits, 0), Verdict::Passed);
        assert_eq!(
            check(&limits, 0),
            Verdict::Delayed {
                ms: 1000,
                excess: 1000,
                limit: 0
            }
        );
        for z in &zones {
            let alone = [limit(z, b"k", 1, 0)];
            assert!(
                matches!(check(&alone, 0), Verdict::Rejected { .. }),
                "accounted twice"
            );
        }
    }

    #[test]
    fn a_missing_limit_counts_as_an_empty_key() {
        let t = zone(1000);
        let only = limit(&t, b"k", 0, 0);
        let each = |n: usize| (n == 0).then_some(only);
        assert_eq!(check_each(2, each, 0), Verdict::Passed);
        assert!(matches!(
            check_each(2, each, 0),
            Verdict::Rejected { limit: 0, .. }
        ));
    }
}
