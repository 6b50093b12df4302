//! Message body framing (RFC 9112 6): `Content-Length` values and `Transfer-Encoding`
//! codings, parsed strictly so a request or response is never framed two ways.

use crate::ascii::eq_ignore_case;
use crate::fields::{list_elements, trim_ows};

/// How the body of a message is delimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body at all.
    #[default]
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`; decode with [`crate::ChunkedDecoder`].
    Chunked,
    /// Responses only: the body ends when the upstream closes the connection.
    UntilClose,
}

/// Largest accepted `Content-Length` and chunk size: nginx stores lengths in a signed
/// `off_t`, so anything above `i64::MAX` is refused there as well.
pub const MAX_BODY_LENGTH: u64 = i64::MAX as u64;

/// Why a `Content-Length` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LengthError {
    /// Not plain ASCII digits, or too large.
    Invalid,
    /// A second `Content-Length` with a different value.
    Conflict,
}

/// Parse a `Content-Length` value: OWS-trimmed, one or more ASCII digits, nothing else
/// (no sign, no hex, no list), at most [`MAX_BODY_LENGTH`].
pub fn parse_content_length(value: &[u8]) -> Option<u64> {
    let digits = trim_ows(value);
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    (n <= MAX_BODY_LENGTH).then_some(n)
}

/// Folds every `Content-Length` header of one message into one length; identical repeats
/// are accepted (RFC 9110 8.6), differing ones are an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ContentLength(pub Option<u64>);

impl ContentLength {
    pub(crate) fn add(&mut self, value: &[u8]) -> Result<(), LengthError> {
        let n = parse_content_length(value).ok_or(LengthError::Invalid)?;
        match self.0 {
            Some(prev) if prev != n => Err(LengthError::Conflict),
            _ => {
                self.0 = Some(n);
                Ok(())
            }
        }
    }
}

/// Is a request's `Transfer-Encoding` value exactly `chunked`? nginx answers 501 to any
/// other value (`gzip, chunked`, `chunked, identity`, ...), and so do we. Only spaces are
/// trimmed: nginx 1.22 keeps a tab as part of the value (`\tchunked` is 501 there), and a
/// request nginx refuses must not be forwarded by us.
pub(crate) fn is_exactly_chunked(value: &[u8]) -> bool {
    let start = value.iter().position(|b| *b != b' ').unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| *b != b' ')
        .map_or(start, |i| i + 1);
    value
        .get(start..end)
        .is_some_and(|v| eq_ignore_case(v, b"chunked"))
}

/// Walks the transfer codings of a response, over every `Transfer-Encoding` header in
/// order (RFC 9112 6.1: the list is the concatenation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TransferCodings {
    /// At least one `Transfer-Encoding` header was seen.
    pub present: bool,
    /// The last coding seen so far is `chunked`.
    pub last_chunked: bool,
    /// `chunked` appeared before another coding (RFC 9112 6.1: MUST NOT).
    pub chunked_not_last: bool,
}

impl TransferCodings {
    pub(crate) fn add(&mut self, value: &[u8]) {
        self.present = true;
        for coding in list_elements(value) {
            if self.last_chunked {
                self.chunked_not_last = true;
            }
            self.last_chunked = eq_ignore_case(coding, b"chunked");
        }
    }

    /// Chunked framing is usable: the final coding is `chunked` and only that one is.
    pub(crate) fn is_chunked(&self) -> bool {
        self.last_chunked && !self.chunked_not_last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_accepts_plain_digits() {
        assert_eq!(parse_content_length(b"0"), Some(0));
        assert_eq!(parse_content_length(b"42"), Some(42));
        assert_eq!(parse_content_length(b" 007 "), Some(7));
        assert_eq!(
            parse_content_length(b"9223372036854775807"),
            Some(MAX_BODY_LENGTH)
        );
    }

    #[test]
    fn content_length_rejects_everything_else() {
        for bad in [
            &b""[..],
            b" ",
            b"+5",
            b"-5",
            b"0x5",
            b"5 5",
            b"5,5",
            b"5, 5",
            b"5a",
            b"\xff",
            b"9223372036854775808",
            b"18446744073709551616",
            b"99999999999999999999999999",
        ] {
            assert_eq!(parse_content_length(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn repeated_content_length() {
        let mut cl = ContentLength::default();
        assert_eq!(cl.add(b"5"), Ok(()));
        assert_eq!(cl.add(b"05"), Ok(()));
        assert_eq!(cl.0, Some(5));
        assert_eq!(cl.add(b"6"), Err(LengthError::Conflict));
        assert_eq!(cl.add(b"x"), Err(LengthError::Invalid));
    }

    #[test]
    fn exactly_chunked() {
        assert!(is_exactly_chunked(b"chunked"));
        assert!(is_exactly_chunked(b"  ChUnKeD "));
        assert!(!is_exactly_chunked(b"\tchunked"));
        assert!(!is_exactly_chunked(b"chunked\t"));
        for bad in [
            &b"chunked, identity"[..],
            b"gzip, chunked",
            b"xchunked",
            b"chunked;a=b",
            b"",
        ] {
            assert!(!is_exactly_chunked(bad), "{bad:?}");
        }
    }

    fn codings(values: &[&[u8]]) -> TransferCodings {
        let mut t = TransferCodings::default();
        for v in values {
            t.add(v);
        }
        t
    }

    #[test]
    fn transfer_codings_final_chunked() {
        assert!(codings(&[b"chunked"]).is_chunked());
        assert!(codings(&[b"gzip, chunked"]).is_chunked());
        assert!(codings(&[b"gzip", b"Chunked"]).is_chunked());
        assert!(!codings(&[b"chunked, gzip"]).is_chunked());
        assert!(!codings(&[b"chunked", b"chunked"]).is_chunked());
        assert!(!codings(&[b"gzip"]).is_chunked());
        assert!(!codings(&[b""]).is_chunked());
        assert!(codings(&[b""]).present);
        assert!(!codings(&[]).present);
    }
}
