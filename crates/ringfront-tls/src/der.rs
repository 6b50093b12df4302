//! The few DER primitives OCSP needs (decision 0016): reading one tag-length-value at a
//! time without panicking on any input, and writing one.

/// One element: its tag byte, its contents, and the whole encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tlv<'a> {
    pub tag: u8,
    pub body: &'a [u8],
    pub whole: &'a [u8],
}

pub(crate) const SEQUENCE: u8 = 0x30;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const ENUMERATED: u8 = 0x0a;
pub(crate) const OID: u8 = 0x06;
pub(crate) const BIT_STRING: u8 = 0x03;
pub(crate) const GENERALIZED_TIME: u8 = 0x18;

/// The first element of `input` and what follows it; `None` if it is cut short or its
/// length is not in DER's short or long form (single-byte tags only, as OCSP's are).
pub(crate) fn next(input: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &b| (a << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    let tlv = Tlv {
        tag,
        body: &rest[..len],
        whole: &input[..header + len],
    };
    Some((tlv, &rest[len..]))
}

/// The first element of `input` if its tag is `tag`.
pub(crate) fn expect(input: &[u8], tag: u8) -> Option<(Tlv<'_>, &[u8])> {
    next(input).filter(|(t, _)| t.tag == tag)
}

/// Every element of `input` in order; `None` if any is malformed.
pub(crate) fn all(mut input: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let (t, rest) = next(input)?;
        out.push(t);
        input = rest;
    }
    Some(out)
}

/// `tag`, the DER length of `body`, and `body`.
pub(crate) fn write(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(body);
    out
}

/// A `GeneralizedTime` (`YYYYMMDDHHMMSS[.f]Z`) as seconds since the epoch.
pub(crate) fn generalized_time(body: &[u8]) -> Option<i64> {
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = std::str::from_utf8(body.get(r)?).ok()?;
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if body.last() != Some(&b'Z') {
        return None;
    }
    let (y, m, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (h, mi, s) = (digits(8..10)?, digits(10..12)?, digits(12..14)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_and_truncation_is_refused() {
        for n in [0usize, 5, 127, 128, 300, 70000] {
            let body = vec![7u8; n];
            let enc = write(SEQUENCE, &body);
            let (t, rest) = next(&enc).unwrap();
            assert_eq!((t.tag, t.body.len(), rest.len()), (SEQUENCE, n, 0));
            assert!(next(&enc[..enc.len() - 1]).is_none() || n == 0);
        }
        assert!(next(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_none());
        assert!(next(&[0x30]).is_none());
    }

    #[test]
    fn generalized_times() {
        assert_eq!(generalized_time(b"19700101000000Z"), Some(0));
        assert_eq!(generalized_time(b"20240229120000Z"), Some(1709208000));
        assert_eq!(generalized_time(b"20240229120000"), None);
        assert_eq!(generalized_time(b"2024022912000xZ"), None);
    }
}
