//! nginx's value syntaxes: times (`ngx_parse_time`: `ms s m h d w M y`, combinable in
//! decreasing order, a bare number meaning seconds), sizes (`ngx_parse_size`: bytes, `k`, `m`,
//! `g`) and plain numbers (`ngx_atoi`: digits only).

use std::time::Duration;

/// How a directive reads a time, as nginx's two flavours of `ngx_parse_time` do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeMode {
    /// Millisecond slots (`proxy_read_timeout`, `keepalive_timeout`, ...): `y` and `M` are
    /// refused, `ms` allowed.
    Msec,
    /// Second slots (`fail_timeout=`, keepalive's header timeout): `ms` refused.
    Sec,
    /// The public [`parse_time`]: every unit.
    Any,
}

const MS_PER_S: i64 = 1000;

/// Parses an nginx time (`30s`, `1m30s`, `500ms`, `2h`, bare `10` = 10 seconds).
pub fn parse_time(s: &str) -> Option<Duration> {
    parse_time_mode(s, TimeMode::Any)
}

/// Position of each unit in the order they must appear in (`1h30m`, never `30m1h`).
fn unit_rank(unit: &str) -> Option<(u8, i64)> {
    const S: i64 = MS_PER_S;
    Some(match unit {
        "y" => (1, 365 * 24 * 3600 * S),
        "M" => (2, 30 * 24 * 3600 * S),
        "w" => (3, 7 * 24 * 3600 * S),
        "d" => (4, 24 * 3600 * S),
        "h" => (5, 3600 * S),
        "m" => (6, 60 * S),
        "s" => (7, S),
        "ms" => (8, 1),
        _ => return None,
    })
}

pub(crate) fn parse_time_mode(s: &str, mode: TimeMode) -> Option<Duration> {
    let bytes = s.as_bytes();
    let mut total: i64 = 0;
    let mut value: i64 = 0;
    let mut valid = false;
    let mut rank = 0u8;
    let mut i = 0;
    while i < bytes.len() {
        let ch = bytes[i];
        if ch.is_ascii_digit() {
            value = value.checked_mul(10)?.checked_add(i64::from(ch - b'0'))?;
            valid = true;
            i += 1;
            continue;
        }
        let unit = if ch == b'm' && bytes.get(i + 1) == Some(&b's') {
            "ms"
        } else {
            s.get(i..i + 1)?
        };
        i += unit.len();
        let (unit_rank, scale) = match unit {
            // A space after a bare number ends it as seconds; nothing but digits may follow.
            " " => (9, MS_PER_S),
            _ => unit_rank(unit)?,
        };
        let refused = match mode {
            TimeMode::Msec => unit == "y" || unit == "M",
            TimeMode::Sec => unit == "ms",
            TimeMode::Any => false,
        };
        if refused || unit_rank <= rank {
            return None;
        }
        rank = unit_rank;
        total = total.checked_add(value.checked_mul(scale)?)?;
        value = 0;
        while bytes.get(i) == Some(&b' ') {
            i += 1;
        }
    }
    if !valid {
        return None;
    }
    total = total.checked_add(value.checked_mul(MS_PER_S)?)?;
    let ms = u64::try_from(total).ok()?;
    Some(Duration::from_millis(ms))
}

/// Parses an nginx size: `512`, `8k`/`8K`, `1m`/`1M`, `1g`/`1G` (powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let size = parse_number(digits)?.checked_mul(scale)?;
    // nginx keeps sizes in off_t/ssize_t.
    (size <= i64::MAX as u64).then_some(size)
}

/// `ngx_atoi`: one or more ASCII digits, no sign, no overflow past `i64::MAX`.
pub(crate) fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = s.parse().ok()?;
    (n <= i64::MAX as u64).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("10"), ms(10_000));
        assert_eq!(parse_time("0"), ms(0));
        assert_eq!(parse_time("500ms"), ms(500));
        assert_eq!(parse_time("2s"), ms(2000));
        assert_eq!(parse_time("1m30s"), ms(90_000));
        assert_eq!(parse_time("1m 30s"), ms(90_000));
        assert_eq!(parse_time("1h"), ms(3_600_000));
        assert_eq!(parse_time("1d"), ms(86_400_000));
        assert_eq!(parse_time("1w"), ms(604_800_000));
        assert_eq!(parse_time("1M"), ms(2_592_000_000));
        assert_eq!(parse_time("1y"), ms(31_536_000_000));
        assert_eq!(parse_time("1s500ms"), ms(1500));
        assert_eq!(parse_time("1h1"), ms(3_601_000));
    }

    #[test]
    fn bad_times() {
        for bad in [
            "",
            "s",
            "1.5s",
            "30s1m",
            "1x",
            "-1",
            "1ss",
            "1m1m",
            "99999999999999999999",
            "1 s",
            "é",
        ] {
            assert_eq!(parse_time(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn modes() {
        assert_eq!(parse_time_mode("1y", TimeMode::Msec), None);
        assert_eq!(parse_time_mode("1M", TimeMode::Msec), None);
        assert_eq!(parse_time_mode("5ms", TimeMode::Msec), ms(5));
        assert_eq!(parse_time_mode("5ms", TimeMode::Sec), None);
        assert_eq!(parse_time_mode("1y", TimeMode::Sec), ms(31_536_000_000));
        assert_eq!(parse_time_mode("40s", TimeMode::Sec), ms(40_000));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("8k"), Some(8192));
        assert_eq!(parse_size("8K"), Some(8192));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        for bad in ["", "k", "1.5m", "-1", "1t", "1kb", "99999999999g", " 1"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("42"), Some(42));
        assert_eq!(parse_number("+1"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("99999999999999999999"), None);
    }
}
