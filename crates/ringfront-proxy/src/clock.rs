//! Clocks: a process-wide monotonic epoch for failure accounting (whole seconds, as nginx's
//! `ngx_time()`), and wall-clock formatting for logs (`$time_local`, error-log stamps) in UTC.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Monotonic time since the process started, plus a constant (the exchange machine's and
/// the failure accounting's clock: `mono().as_secs()` is `now_secs()`).
pub fn mono() -> std::time::Duration {
    epoch().elapsed() + std::time::Duration::from_secs(1_000_000)
}

/// Monotonic whole seconds since the process started, plus a constant so that "0" (the
/// board's initial `checked`) is always far in the past.
pub fn now_secs() -> u64 {
    epoch().elapsed().as_secs() + 1_000_000
}

/// Monotonic milliseconds since the process started, plus a constant (never 0).
pub fn now_ms() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX) + 1_000_000
}

#[allow(unsafe_code)]
fn clock_ms(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes to it.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// `CLOCK_MONOTONIC_COARSE` in milliseconds: a few ns (no clock-source read), the time of
/// the last kernel tick, so behind `precise_ms` by less than `coarse_slack_ms`.
pub fn coarse_ms() -> u64 {
    clock_ms(libc::CLOCK_MONOTONIC_COARSE)
}

/// `CLOCK_MONOTONIC` in milliseconds (truncated), the clock `Instant` reads.
pub fn precise_ms() -> u64 {
    clock_ms(libc::CLOCK_MONOTONIC)
}

/// How far `coarse_ms` can be behind the real time, in whole ms: its resolution rounded up,
/// plus one for the truncation to milliseconds.
#[allow(unsafe_code)]
pub fn coarse_slack_ms() -> u64 {
    static SLACK: OnceLock<u64> = OnceLock::new();
    *SLACK.get_or_init(|| {
        let mut res = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `res` is a valid, writable timespec; clock_getres only writes to it.
        let ok = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) } == 0;
        let ns = if ok {
            res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64
        } else {
            10_000_000
        };
        ns.div_ceil(1_000_000) + 1
    })
}

/// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
pub(crate) fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Broken-down UTC wall time.
pub struct Wall {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    pub millis: u32,
    pub unix_secs: u64,
}

/// Wall-clock milliseconds since the Unix epoch (status pages, state-change times).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub fn wall() -> Wall {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (year, month, day) = civil((secs / 86_400) as i64);
    let rem = secs % 86_400;
    Wall {
        year,
        month,
        day,
        hour: (rem / 3600) as u32,
        min: (rem % 3600 / 60) as u32,
        sec: (rem % 60) as u32,
        millis: d.subsec_millis(),
        unix_secs: secs,
    }
}

pub(crate) const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Wall {
    /// `29/Nov/2026:18:43:33 +0000`, as nginx's `$time_local`.
    pub fn time_local(&self) -> String {
        format!(
            "{:02}/{}/{}:{:02}:{:02}:{:02} +0000",
            self.day,
            MONTHS[(self.month as usize).saturating_sub(1) % 12],
            self.year,
            self.hour,
            self.min,
            self.sec
        )
    }

    /// `2026-11-29T18:43:33+00:00`, as `$time_iso8601`.
    pub fn iso8601(&self) -> String {
        format!(
            "{}-{:02}-{:02}T{:02}:{:02}:{:02}+00:00",
            self.year, self.month, self.day, self.hour, self.min, self.sec
        )
    }

    /// `2026/11/29 18:43:33`, the error log's stamp.
    pub fn error_stamp(&self) -> String {
        format!(
            "{}/{:02}/{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.min, self.sec
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_786), (2026, 11, 29));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
