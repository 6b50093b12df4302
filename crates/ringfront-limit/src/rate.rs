//! The leaky bucket of `limit_req`, as nginx counts it: a state holds `excess` in
//! milli-requests and `last`, the millisecond it was last updated; a request adds 1000 and
//! the time since `last` drains `rate` (milli-requests per second) times its seconds.

/// `rate=Nr/s` or `rate=Nr/m`, held as nginx holds it: milli-requests per second
/// (`N * 1000 / 60` for per minute, rounded down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate(pub u64);

impl Rate {
    /// `rate=` `per_unit` requests per second (`scale` 1) or per minute (`scale` 60).
    pub fn new(per_unit: u64, scale: u64) -> Rate {
        Rate(per_unit.saturating_mul(1000) / scale.max(1))
    }

    /// Milliseconds since `last` as nginx reads them (`now - last` as a signed number):
    /// up to a minute in the past (another worker's clock ran ahead) counts as 0; further
    /// back as 1.
    pub fn elapsed(now: u32, last: u32) -> i64 {
        let ms = i64::from(now.wrapping_sub(last) as i32);
        if ms < -60_000 {
            1
        } else {
            ms.max(0)
        }
    }

    /// The excess after one more request `ms` milliseconds after a state holding `excess`:
    /// `excess - rate * ms / 1000 + 1000`, not below 0.
    pub fn excess(self, excess: u64, ms: i64) -> u64 {
        let drained = i128::from(self.0) * i128::from(ms) / 1000;
        let e = i128::from(excess) - drained + 1000;
        u64::try_from(e.max(0)).unwrap_or(u64::MAX)
    }

    /// How long a request with `excess` waits when the limit lets `delay` milli-requests
    /// through at once: `(excess - delay) * 1000 / rate` milliseconds, 0 within `delay`.
    pub fn delay(self, excess: u64, delay: u64) -> u64 {
        if excess <= delay || self.0 == 0 {
            return 0;
        }
        (excess - delay).saturating_mul(1000) / self.0
    }

    /// nginx's test for a state it may expire: untouched for a minute and drained.
    pub fn stale(self, excess: u64, ms: i64) -> bool {
        let ms = ms.abs();
        ms >= 60_000 && i128::from(excess) - i128::from(self.0) * i128::from(ms) / 1000 <= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_as_nginx_holds_them() {
        assert_eq!(Rate::new(1, 1), Rate(1000));
        assert_eq!(Rate::new(30, 60), Rate(500));
        assert_eq!(Rate::new(1, 60), Rate(16));
    }

    #[test]
    fn excess_drains_with_time() {
        let r = Rate(2000);
        // Two requests 100 ms apart at 2r/s: 1000 - 200 + 1000.
        assert_eq!(r.excess(1000, 100), 1800);
        assert_eq!(r.excess(0, 0), 1000);
        assert_eq!(r.excess(500, 100), 1300);
        assert_eq!(r.excess(0, 1_000_000), 0, "drained below zero stays 0");
        // 1r/m: 16 milli-requests per second.
        assert_eq!(Rate(16).excess(1000, 1000), 1984);
    }

    #[test]
    fn elapsed_reads_a_signed_difference() {
        assert_eq!(Rate::elapsed(1500, 1000), 500);
        assert_eq!(Rate::elapsed(1000, 1500), 0);
        assert_eq!(Rate::elapsed(1000, 1000 + 60_001), 1);
        assert_eq!(Rate::elapsed(5, u32::MAX - 4), 10, "wraps");
    }

    #[test]
    fn delays() {
        let r = Rate(1000);
        assert_eq!(r.delay(1000, 0), 1000);
        assert_eq!(r.delay(2500, 2000), 500);
        assert_eq!(r.delay(2000, 2000), 0);
        assert_eq!(Rate(500).delay(1000, 0), 2000);
    }

    #[test]
    fn stale_after_a_minute_drained() {
        let r = Rate(1000);
        assert!(r.stale(0, 60_000));
        assert!(!r.stale(0, 59_999));
        assert!(!r.stale(70_000_000, 60_000));
        assert!(Rate(16).stale(960, 60_000));
    }
}
