//! nginx's response rate limit (`limit_rate`, `limit_rate_after`, `$limit_rate`) as a pure
//! rule: how many bytes may go to the client now, and how long to wait before the next write
//! (ngx_http_write_filter_module.c). The clock is passed in (milliseconds), so the rule is
//! tested with injected time.

/// One request's pacing: its rate, the free bytes, when it started and what it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    /// Bytes per second (`r->limit_rate`; never 0 here: 0 means no pacer at all).
    rate: u64,
    /// Bytes sent before the limit applies (`limit_rate_after`).
    after: u64,
    /// The request's start, in the clock's milliseconds (nginx's `r->start_sec`, seconds).
    start_ms: u64,
    /// Bytes of this response sent so far (nginx's `c->sent`, head included).
    sent: u64,
    /// No write before this time: the delay nginx sets after a write (`c->write->delayed`).
    ready_ms: u64,
}

/// What a write may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allow {
    /// Up to this many bytes may be written.
    Send(u64),
    /// Nothing may go before this many milliseconds passed.
    Wait(u64),
}

impl Pacer {
    /// A pacer for `rate` bytes per second after `after` free bytes; `None` for rate 0 (no
    /// limit, as nginx).
    pub fn new(rate: u64, after: u64, start_ms: u64) -> Option<Pacer> {
        (rate > 0).then_some(Pacer {
            rate,
            after,
            start_ms,
            sent: 0,
            ready_ms: 0,
        })
    }

    /// nginx: `limit = rate * (ngx_time() - start_sec + 1) - (sent - after)`; a positive
    /// limit cuts the write, otherwise the write waits `-limit * 1000 / rate + 1` ms.
    pub fn allow(&self, now_ms: u64) -> Allow {
        if now_ms < self.ready_ms {
            return Allow::Wait(self.ready_ms - now_ms);
        }
        let secs = (now_ms / 1000).saturating_sub(self.start_ms / 1000);
        let budget = i128::from(self.rate) * (i128::from(secs) + 1);
        let used = i128::from(self.sent) - i128::from(self.after);
        let limit = budget - used;
        if limit > 0 {
            return Allow::Send(u64::try_from(limit).unwrap_or(u64::MAX));
        }
        let wait = (-limit) * 1000 / i128::from(self.rate) + 1;
        Allow::Wait(u64::try_from(wait).unwrap_or(u64::MAX))
    }

    /// Counts `n` bytes written at `now_ms` and delays the next write as nginx does: by
    /// their time at the rate, counting only bytes past `limit_rate_after`.
    pub fn wrote(&mut self, n: u64, now_ms: u64) {
        let before = self.sent.saturating_sub(self.after);
        self.sent = self.sent.saturating_add(n);
        let paced = self.sent.saturating_sub(self.after) - before;
        let delay = paced.saturating_mul(1000) / self.rate;
        if delay > 0 {
            self.ready_ms = now_ms.saturating_add(delay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_rate_is_no_limit() {
        assert_eq!(Pacer::new(0, 100, 5_000), None);
    }

    #[test]
    fn the_first_second_allows_rate_plus_after() {
        let p = Pacer::new(1000, 256, 10_400).unwrap();
        assert_eq!(p.allow(10_400), Allow::Send(1256));
        // The second is nginx's whole-second clock: 10.999 s is still the first second.
        assert_eq!(p.allow(10_999), Allow::Send(1256));
        assert_eq!(p.allow(11_000), Allow::Send(2256));
    }

    #[test]
    fn an_exhausted_budget_waits_as_nginx_computes() {
        let mut p = Pacer::new(1000, 0, 20_000).unwrap();
        p.wrote(1500, 20_000);
        // The write's own delay first: 1500 bytes at 1000/s.
        assert_eq!(p.allow(20_100), Allow::Wait(1400));
        // limit = 1000 * 2 - 1500 = 500 once the second turned.
        assert_eq!(p.allow(21_500), Allow::Send(500));
        p.wrote(500, 21_500);
        // Past the delay, still in the same second: limit = 2000 - 2000 = 0 waits 1 ms.
        assert_eq!(p.allow(21_999), Allow::Wait(1));
    }

    #[test]
    fn free_bytes_add_no_delay() {
        let mut p = Pacer::new(2000, 1000, 0).unwrap();
        p.wrote(600, 0);
        assert_eq!(p.allow(0), Allow::Send(2400));
        // 400 free, 600 paced: 600 * 1000 / 2000 ms.
        p.wrote(1000, 0);
        assert_eq!(p.allow(0), Allow::Wait(300));
        assert_eq!(p.allow(300), Allow::Send(1400));
    }

    #[test]
    fn exactly_used_budget_waits_one_ms() {
        let mut p = Pacer::new(1000, 0, 0).unwrap();
        p.wrote(1000, 0);
        assert_eq!(p.allow(1000), Allow::Send(1000));
        p.wrote(1000, 1000);
        assert_eq!(p.allow(1999), Allow::Wait(1));
        assert_eq!(p.allow(2000), Allow::Send(1000));
    }
}
