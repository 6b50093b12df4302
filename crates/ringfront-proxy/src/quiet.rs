//! When a worker has been quiet for a second (no request read, no connection opened or
//! closed, nothing in flight), so that it can give freed memory back to the OS once per
//! quiet period. Decided on wakeups, not on a tick: a one-shot timer per second while the
//! worker is active, and nothing at all once it has released, until the next activity.

use std::time::{Duration, Instant};

/// How long without activity makes a worker quiet.
pub const QUIET: Duration = Duration::from_secs(1);

/// What the worker counts as activity: requests read so far, and connections open now.
pub type Activity = (u64, usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quiet {
    /// Looking at a period that ends at `due`; it began with `seen` and `busy`.
    Armed {
        seen: Activity,
        busy: bool,
        due: Instant,
    },
    /// Memory was released; waiting for the next activity (the worker's main task is
    /// poked when a request ends or a connection closes).
    Released,
}

impl Quiet {
    pub fn new(now: Instant, seen: Activity, busy: usize) -> Quiet {
        Quiet::Armed {
            seen,
            busy: busy > 0,
            due: now + QUIET,
        }
    }

    /// When to look again even without a wakeup (`None`: only activity re-arms it).
    pub fn due(&self) -> Option<Instant> {
        match *self {
            Quiet::Armed { due, .. } => Some(due),
            Quiet::Released => None,
        }
    }

    /// Whether the worker's main task wants to hear about the next activity.
    pub fn watching(&self) -> bool {
        *self == Quiet::Released
    }

    /// Called after every wakeup of the worker's main task; `poked`: activity was reported
    /// while released. True when memory should be released now (once per quiet period):
    /// a full period passed with the same counters and nothing in flight at either end.
    /// A worker quiets 1 to 2 periods after its last activity.
    pub fn update(&mut self, now: Instant, seen: Activity, busy: usize, poked: bool) -> bool {
        match *self {
            Quiet::Armed {
                seen: s,
                busy: b,
                due,
            } => {
                if now < due {
                    return false;
                }
                if s == seen && !b && busy == 0 {
                    *self = Quiet::Released;
                    return true;
                }
                *self = Quiet::new(now, seen, busy);
                false
            }
            Quiet::Released => {
                if poked {
                    *self = Quiet::new(now, seen, busy);
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn a_second_without_activity_releases_once() {
        let t0 = Instant::now();
        let mut q = Quiet::new(t0, (5, 2), 0);
        assert_eq!(q.due(), Some(ms(t0, 1000)));
        // Woken early (a reload): nothing yet.
        assert!(!q.update(ms(t0, 400), (5, 2), 0, false));
        assert!(q.update(ms(t0, 1000), (5, 2), 0, false));
        assert!(q.watching());
        assert_eq!(q.due(), None, "no timer once released");
        // Other wakeups without activity do not release again.
        assert!(!q.update(ms(t0, 5000), (5, 2), 0, false));
        assert_eq!(q, Quiet::Released);
    }

    #[test]
    fn activity_in_the_period_starts_another() {
        let t0 = Instant::now();
        let mut q = Quiet::new(t0, (5, 2), 0);
        assert!(
            !q.update(ms(t0, 1001), (9, 2), 0, false),
            "requests were read"
        );
        assert_eq!(q.due(), Some(ms(t0, 2001)));
        assert!(
            !q.update(ms(t0, 2001), (9, 3), 0, false),
            "a connection opened"
        );
        assert!(
            !q.update(ms(t0, 3001), (9, 3), 1, false),
            "a request in flight"
        );
        assert!(
            !q.update(ms(t0, 4001), (9, 3), 0, false),
            "it was in flight at the start"
        );
        assert!(q.update(ms(t0, 5001), (9, 3), 0, false));
    }

    #[test]
    fn after_a_release_the_next_activity_rearms() {
        let t0 = Instant::now();
        let mut q = Quiet::Released;
        assert!(!q.update(ms(t0, 0), (7, 1), 0, true));
        assert_eq!(q.due(), Some(ms(t0, 1000)));
        assert!(!q.watching());
        assert!(q.update(ms(t0, 1000), (7, 1), 0, false));
    }
}
