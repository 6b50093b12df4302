//! Clocks: a process-wide monotonic epoch for failure accounting (whole seconds, as nginx's
//! `ngx_time()`), and wall-clock formatting for logs (`$time_local`, error-log stamps) in UTC.
//!
//! Cached time, as nginx's `ngx_time_update` once per event-loop wake-up: inside a task
//! polled through `Fresh` (every client connection's), `now()` reads the clock once per
//! poll, and every later read in the same poll gets that value; each wake-up is a new poll,
//! so the time is never older than the CPU time of one poll. Outside `Fresh` every read is
//! the clock's.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

struct Cache {
    /// Inside a `Fresh` poll.
    scoped: Cell<bool>,
    at: Cell<Option<Instant>>,
    /// Nanoseconds since the epoch, once asked for in the poll (the failure accounting and
    /// the deadlines ask several times a request): read from the monotonic clock as a plain
    /// number, so that neither a read nor the arithmetic goes through `Instant`'s timespec
    /// subtraction.
    since_ns: Cell<Option<u64>>,
}

thread_local! {
    static CACHE: Cache = const {
        Cache {
            scoped: Cell::new(false),
            at: Cell::new(None),
            since_ns: Cell::new(None),
        }
    };
}

/// The monotonic time, read once per `Fresh` poll (see the module's doc). Inside one it is
/// made from the poll's one clock read (`since_epoch_ns`), so a poll that asks for both an
/// `Instant` and the time since the epoch reads the clock once.
pub fn now() -> Instant {
    CACHE.with(|c| {
        if !c.scoped.get() {
            return Instant::now();
        }
        match c.at.get() {
            Some(t) => t,
            None => {
                let t = epoch().1 + std::time::Duration::from_nanos(since_epoch_ns());
                c.at.set(Some(t));
                t
            }
        }
    })
}

pin_project_lite::pin_project! {
    /// Polls `fut` with the cached clock: one clock read per poll at most.
    pub struct Fresh<F> {
        #[pin]
        fut: F,
    }
}

impl<F> Fresh<F> {
    pub fn new(fut: F) -> Self {
        Fresh { fut }
    }
}

impl<F: Future> Future for Fresh<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let outer = CACHE.with(|c| {
            c.at.set(None);
            c.since_ns.set(None);
            c.scoped.replace(true)
        });
        let r = self.project().fut.poll(cx);
        CACHE.with(|c| {
            c.at.set(None);
            c.since_ns.set(None);
            c.scoped.set(outer);
        });
        r
    }
}

/// The monotonic clock when the process first asked, in nanoseconds and as an `Instant`
/// read just after: an `Instant` made from it is ahead of `Instant::now()` by at most the
/// moment between the two reads, never behind (a deadline set from it is never early).
fn epoch() -> (u64, Instant) {
    static EPOCH: OnceLock<(u64, Instant)> = OnceLock::new();
    *EPOCH.get_or_init(|| {
        let ns = monotonic_ns();
        (ns, Instant::now())
    })
}

/// Nanoseconds since the epoch, read once per `Fresh` poll (every read outside one).
#[inline]
fn since_epoch_ns() -> u64 {
    CACHE.with(|c| match (c.scoped.get(), c.since_ns.get()) {
        (true, Some(ns)) => ns,
        _ => read_since_epoch_ns(c),
    })
}

/// The clock read behind `since_epoch_ns`, kept out of line (once per poll).
#[inline(never)]
fn read_since_epoch_ns(c: &Cache) -> u64 {
    let ns = monotonic_ns().saturating_sub(epoch().0);
    if c.scoped.get() {
        c.since_ns.set(Some(ns));
    }
    ns
}

const OFFSET_SECS: u64 = 1_000_000;

/// Monotonic time since the process started, plus a constant (the exchange machine's and
/// the failure accounting's clock: `mono().as_secs()` is `now_secs()`).
pub fn mono() -> std::time::Duration {
    std::time::Duration::from_nanos(since_epoch_ns()) + std::time::Duration::from_secs(OFFSET_SECS)
}

/// Monotonic whole seconds since the process started, plus a constant so that "0" (the
/// board's initial `checked`) is always far in the past.
pub fn now_secs() -> u64 {
    since_epoch_ns() / 1_000_000_000 + OFFSET_SECS
}

/// Monotonic milliseconds since the process started, plus a constant (never 0).
#[inline]
pub fn now_ms() -> u64 {
    since_epoch_ns() / 1_000_000 + OFFSET_SECS * 1000
}

/// `CLOCK_MONOTONIC` (the clock `Instant` reads) in nanoseconds.
#[allow(unsafe_code)]
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes to it.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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

/// Whole seconds since the Unix epoch from `CLOCK_REALTIME_COARSE` (at most a kernel tick
/// behind `SystemTime::now()`).
pub fn coarse_unix_secs() -> u64 {
    clock_ms(libc::CLOCK_REALTIME_COARSE) / 1000
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
    wall_at(d.as_secs(), d.subsec_millis())
}

/// The broken-down UTC time of `secs` since the Unix epoch (and `millis`).
fn wall_at(secs: u64, millis: u32) -> Wall {
    let (year, month, day) = civil((secs / 86_400) as i64);
    let rem = secs % 86_400;
    Wall {
        year,
        month,
        day,
        hour: (rem / 3600) as u32,
        min: (rem % 3600 / 60) as u32,
        sec: (rem % 60) as u32,
        millis,
        unix_secs: secs,
    }
}

thread_local! {
    /// `$time_local` of the second it was last made for (nginx's cached log time).
    static TIME_LOCAL: Cell<(u64, [u8; 26])> = const { Cell::new((u64::MAX, [0; 26])) };
}

/// Appends `$time_local` of now: made once a second per thread, as nginx caches its log
/// time, from the coarse wall clock (at most a kernel tick behind).
pub fn push_time_local(out: &mut Vec<u8>) {
    let secs = coarse_unix_secs();
    TIME_LOCAL.with(|c| {
        let (at, text) = c.get();
        if at == secs {
            return out.extend_from_slice(&text);
        }
        let made = wall_at(secs, 0).time_local();
        out.extend_from_slice(made.as_bytes());
        // Four-digit years (always, until 9999): other lengths are made every time.
        if let Ok(text) = made.as_bytes().try_into() {
            c.set((secs, text));
        }
    });
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
    use crate::boxed::tests::block_on;

    #[test]
    fn cached_time_local_is_the_seconds_own() {
        let before = coarse_unix_secs();
        let mut a = Vec::new();
        push_time_local(&mut a);
        push_time_local(&mut a);
        let after = coarse_unix_secs();
        let (first, second) = a.split_at(26);
        let made = |s| wall_at(s, 0).time_local().into_bytes();
        for text in [first, second] {
            assert!((before..=after).any(|s| made(s) == text), "{a:?}");
        }
        assert_eq!(made(1_764_441_813), b"29/Nov/2025:18:43:33 +0000");
    }

    /// A future that reads a clock twice per poll, 2 ms apart, and is ready on its 2nd poll.
    struct ReadsOf<T>(Vec<(T, T)>, fn() -> T);

    fn reads() -> ReadsOf<Instant> {
        ReadsOf(Vec::new(), now)
    }

    impl<T: Unpin> Future for ReadsOf<T> {
        type Output = Vec<(T, T)>;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let a = (self.1)();
            std::thread::sleep(std::time::Duration::from_millis(2));
            let b = (self.1)();
            self.0.push((a, b));
            if self.0.len() == 2 {
                return Poll::Ready(std::mem::take(&mut self.0));
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    #[test]
    fn fresh_reads_the_clock_once_per_poll() {
        let polls = block_on(Fresh::new(reads()));
        assert_eq!(polls[0].0, polls[0].1, "one poll, one time");
        assert!(polls[1].0 >= polls[0].0 + std::time::Duration::from_millis(2));
        // Outside `Fresh`, each read is the clock's, and a `Fresh` poll leaves no cache.
        let plain = block_on(reads());
        assert!(plain[0].1 >= plain[0].0 + std::time::Duration::from_millis(2));
    }

    #[test]
    fn fresh_keeps_the_time_since_the_epoch_for_the_poll() {
        let two = std::time::Duration::from_millis(2);
        let polls = block_on(Fresh::new(ReadsOf(Vec::new(), mono)));
        assert_eq!(polls[0].0, polls[0].1, "one poll, one time");
        assert!(polls[1].0 >= polls[0].0 + two, "the next poll reads again");
        let plain = block_on(ReadsOf(Vec::new(), mono));
        assert!(plain[0].1 >= plain[0].0 + two);
    }

    /// Within one poll the three readings of the time since the epoch are one time.
    #[test]
    fn mono_now_ms_and_now_secs_agree_within_a_poll() {
        let read = std::future::poll_fn(|_| Poll::Ready((mono(), now_ms(), now_secs())));
        let (m, ms, secs) = block_on(Fresh::new(read));
        assert_eq!(m.as_millis(), u128::from(ms));
        assert_eq!(m.as_secs(), secs);
        assert!(secs >= OFFSET_SECS);
    }

    /// The poll's `Instant`, made from its clock read, is never behind the clock read
    /// before it (deadlines set from it are never early).
    #[test]
    fn the_polls_instant_is_never_behind_the_clock() {
        let read = || {
            std::future::poll_fn(|_| {
                let before = Instant::now();
                let t = now();
                Poll::Ready((before, t, now()))
            })
        };
        for _ in 0..1000 {
            let (before, t, again) = block_on(Fresh::new(read()));
            assert!(t >= before, "{t:?} behind {before:?}");
            assert_eq!(t, again, "one time per poll");
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_786), (2026, 11, 29));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
