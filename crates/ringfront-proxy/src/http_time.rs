//! nginx's `ngx_parse_http_time`: the three HTTP date formats (RFC 1123 `Sun, 06 Nov 1994
//! 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, asctime `Sun Nov  6 08:49:37
//! 1994`), read as leniently as nginx reads them (the zone is not checked).

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

#[derive(PartialEq, Clone, Copy)]
enum Fmt {
    Rfc822,
    Rfc850,
    Isoc,
}

/// Seconds since the epoch, or `None` where nginx returns `NGX_ERROR`.
pub fn parse(v: &[u8]) -> Option<i64> {
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let digit = |i: usize| at(i).is_ascii_digit().then(|| i64::from(at(i) - b'0'));
    let two = |i: usize| Some(digit(i)? * 10 + digit(i + 1)?);
    let mut fmt = Fmt::Rfc822;
    let mut p = 0;
    while p < v.len() {
        if v[p] == b',' {
            break;
        }
        if v[p] == b' ' {
            fmt = Fmt::Isoc;
            break;
        }
        p += 1;
    }
    p += 1;
    while p < v.len() && v[p] == b' ' {
        p += 1;
    }
    if v.len().saturating_sub(p) < 18 {
        return None;
    }
    let mut day = 0;
    if fmt != Fmt::Isoc {
        day = two(p)?;
        p += 2;
        fmt = match at(p) {
            b' ' => Fmt::Rfc822,
            b'-' => Fmt::Rfc850,
            _ => return None,
        };
        p += 1;
    }
    let month = MONTHS
        .iter()
        .position(|m| v.get(p..p + 3) == Some(&m[..]))?;
    p += 3;
    if (fmt == Fmt::Rfc822 && at(p) != b' ') || (fmt == Fmt::Rfc850 && at(p) != b'-') {
        return None;
    }
    p += 1;
    let mut year = 0;
    match fmt {
        Fmt::Rfc822 => {
            year = two(p)? * 100 + two(p + 2)?;
            p += 4;
        }
        Fmt::Rfc850 => {
            year = two(p)?;
            year += if year < 70 { 2000 } else { 1900 };
            p += 2;
        }
        Fmt::Isoc => {
            if at(p) == b' ' {
                p += 1;
            }
            day = digit(p)?;
            p += 1;
            if at(p) != b' ' {
                day = day * 10 + digit(p)?;
                p += 1;
            }
        }
    }
    if at(p) != b' ' {
        return None;
    }
    p += 1;
    let hour = two(p)?;
    if at(p + 2) != b':' {
        return None;
    }
    let min = two(p + 3)?;
    if at(p + 5) != b':' {
        return None;
    }
    let sec = two(p + 6)?;
    p += 8;
    if fmt == Fmt::Isoc {
        if at(p) != b' ' {
            return None;
        }
        year = two(p + 1)? * 100 + two(p + 3)?;
    }
    if hour > 23 || min > 59 || sec > 59 {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let mdays = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day < 1 || day > mdays[month] {
        return None;
    }
    Some(days_from_civil(year, month as i64 + 1, day) * 86_400 + hour * 3600 + min * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn the_three_formats() {
        let t = Some(784_111_777);
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT"), t);
        assert_eq!(parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), t);
        assert_eq!(parse(b"Sun Nov  6 08:49:37 1994"), t);
        assert_eq!(parse(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37"), t, "zone not checked");
        assert_eq!(parse(b"Sun, 31 Nov 1994 08:49:37 GMT"), None);
        assert_eq!(parse(b"Sun, 06 Nov 1994 24:49:37 GMT"), None);
        assert_eq!(parse(b"yesterday"), None);
        assert_eq!(parse(b""), None);
    }
}
