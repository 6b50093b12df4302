//! The `Date` field's value in IMF-fixdate (RFC 9110 §5.6.7, `Sun, 06 Nov 1994 08:49:37 GMT`),
//! formatted at most once per second per worker thread and copied (29 bytes) into each head,
//! as nginx formats its cached time once per event-loop turn, never per response.

use std::cell::Cell;

use crate::clock::{civil, MONTHS};

/// Length of an IMF-fixdate.
pub const LEN: usize = 29;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

thread_local! {
    /// (the whole second it was formatted for, the text); `u64::MAX` = not yet.
    static CACHE: Cell<(u64, [u8; LEN])> = const { Cell::new((u64::MAX, [0; LEN])) };
}

/// The current time as a `Date` value: one coarse clock read (`CLOCK_REALTIME_COARSE`, a
/// few ns; it lags by at most a kernel tick, as nginx's cached time lags by a loop turn),
/// formatting only when the second changed since this thread last asked.
pub fn now() -> [u8; LEN] {
    let secs = crate::clock::coarse_unix_secs();
    CACHE.with(|c| {
        let (at, text) = c.get();
        if at == secs {
            return text;
        }
        let text = imf_fixdate(secs);
        c.set((secs, text));
        text
    })
}

/// The `Date` field line of `date` (`Date: ...\r\n`), to write in one copy.
pub fn line(date: &[u8; LEN]) -> [u8; LINE_LEN] {
    let mut line = *b"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n";
    line[6..6 + LEN].copy_from_slice(date);
    line
}

/// Length of a `Date` field line.
pub const LINE_LEN: usize = LEN + 8;

fn two(out: &mut [u8], n: u32) {
    out[0] = b'0' + (n / 10 % 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

/// `secs` since the Unix epoch as an IMF-fixdate (years 0..=9999; others are clamped).
pub fn imf_fixdate(secs: u64) -> [u8; LEN] {
    let days = (secs / 86_400) as i64;
    let (year, month, day) = civil(days);
    let rem = (secs % 86_400) as u32;
    let mut t = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    t[..3].copy_from_slice(DAYS[(days % 7) as usize].as_bytes());
    two(&mut t[5..7], day);
    t[8..11].copy_from_slice(MONTHS[(month as usize).saturating_sub(1) % 12].as_bytes());
    let year = year.clamp(0, 9999) as u32;
    two(&mut t[12..14], year / 100);
    two(&mut t[14..16], year % 100);
    two(&mut t[17..19], rem / 3600);
    two(&mut t[20..22], rem % 3600 / 60);
    two(&mut t[23..25], rem % 60);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    fn text(secs: u64) -> String {
        String::from_utf8(imf_fixdate(secs).to_vec()).unwrap()
    }

    #[test]
    fn a_date_line_is_the_field_written_out() {
        let line = line(&imf_fixdate(784_111_777));
        assert_eq!(&line[..], b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
    }

    #[test]
    fn formats_as_rfc_9110() {
        assert_eq!(text(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // RFC 9110's own example.
        assert_eq!(text(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(text(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(text(1_796_083_199), "Mon, 30 Nov 2026 23:59:59 GMT");
    }

    #[test]
    fn cached_value_is_current() {
        let a = now();
        let b = now();
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(a == b || b == imf_fixdate(secs));
        assert!([imf_fixdate(secs), imf_fixdate(secs - 1)].contains(&b));
    }
}
