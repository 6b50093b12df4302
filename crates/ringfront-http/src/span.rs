//! Zero-copy positions into the caller's read buffer: a parsed head stores `Span`s,
//! never borrowed slices, so it can be kept (and reused) while the buffer is refilled.

use crate::ascii::eq_ignore_case;
use crate::known::Known;

/// Byte range `start..end` into the buffer a head was parsed from.
///
/// `u32` offsets keep `Header` at 20 bytes (two spans and the name's kind); heads are
/// limited to a few KiB anyway (nginx's `large_client_header_buffers`), and buffers past
/// 4 GiB are refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// First byte (inclusive).
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The bytes this span covers; empty when the span does not fit `buf`
    /// (a span used with the wrong buffer must not panic).
    pub fn get<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }

    /// True when the span covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// Number of bytes covered.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    /// Position of `part` inside `buf`, computed from pointer addresses (no `unsafe`).
    ///
    /// An empty `part` that does not point into `buf` maps to the empty span at 0
    /// (httparse hands out `""` literals for missing reason phrases). `None` when a
    /// non-empty `part` is not inside `buf` or an offset does not fit `u32`.
    pub(crate) fn within(buf: &[u8], part: &[u8]) -> Option<Span> {
        let start = (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
        let end = start.checked_add(part.len());
        match end {
            Some(end) if start <= buf.len() && end <= buf.len() => Some(Span {
                start: u32::try_from(start).ok()?,
                end: u32::try_from(end).ok()?,
            }),
            _ if part.is_empty() => Some(Span::default()),
            _ => None,
        }
    }
}

/// One header field as name and value spans (the value without surrounding whitespace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Field name, as sent (case preserved).
    pub name: Span,
    /// Field value, leading and trailing whitespace removed by httparse.
    pub value: Span,
    /// The name's kind, recognised when the head was parsed (known.rs).
    pub known: Known,
}

impl Header {
    /// Is this header called `name` (ASCII case-insensitive)?
    pub fn is(&self, buf: &[u8], name: &str) -> bool {
        eq_ignore_case(self.name.get(buf), name.as_bytes())
    }

    /// The field's bytes from its name to the end of its value, when they are exactly
    /// `name: value` (one space between the colon and a non-empty value).
    pub fn as_written<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        let (name_end, value_start) = (self.name.end as usize, self.value.start as usize);
        let one_space = value_start == name_end + 2 && !self.value.is_empty();
        match one_space && buf.get(name_end..value_start) == Some(b": ") {
            true => buf.get(self.name.start as usize..self.value.end as usize),
            false => None,
        }
    }
}

/// Convert httparse's borrowed headers into spans, appending to `out`.
/// `None` when a header does not lie inside `buf` (cannot happen with httparse).
pub(crate) fn push_headers(
    buf: &[u8],
    raw: &[httparse::Header<'_>],
    out: &mut Vec<Header>,
) -> Option<()> {
    ready(out);
    out.reserve(raw.len());
    for h in raw {
        out.push(Header {
            name: Span::within(buf, h.name.as_bytes())?,
            value: Span::within(buf, h.value)?,
            known: Known::of(h.name.as_bytes()),
        });
    }
    Some(())
}

/// Gives `out` a spare list's room when it has none (spare_headers.rs).
pub(crate) fn ready(out: &mut Vec<Header>) {
    if out.capacity() == 0 {
        *out = crate::spare_headers::take();
    }
}

/// First header of the kind `known`, as a value slice of `buf`: a byte compare a field.
pub(crate) fn find_known<'a>(headers: &[Header], buf: &'a [u8], known: Known) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|h| h.known == known)
        .map(|h| h.value.get(buf))
}

/// First header called `name` (ASCII case-insensitive), as a value slice of `buf`.
pub(crate) fn find<'a>(headers: &[Header], buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|h| h.is(buf, name))
        .map(|h| h.value.get(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_in_and_out_of_range() {
        let buf = b"hello world";
        let s = Span { start: 6, end: 11 };
        assert_eq!(s.get(buf), b"world");
        assert_eq!(s.len(), 5);
        assert!(!s.is_empty());
        assert_eq!(Span { start: 6, end: 12 }.get(buf), b"");
        assert_eq!(Span { start: 9, end: 3 }.get(buf), b"");
        assert!(Span { start: 9, end: 3 }.is_empty());
        assert_eq!(Span { start: 9, end: 3 }.len(), 0);
        assert_eq!(Span::default().get(buf), b"");
    }

    #[test]
    fn within_computes_offsets() {
        let buf = b"GET / HTTP/1.1";
        let part = &buf[4..5];
        assert_eq!(Span::within(buf, part), Some(Span { start: 4, end: 5 }));
        assert_eq!(
            Span::within(buf, &buf[14..]),
            Some(Span { start: 14, end: 14 })
        );
        let other = b"elsewhere";
        assert_eq!(Span::within(buf, other), None);
        assert_eq!(Span::within(buf, b""), Some(Span::default()));
    }

    #[test]
    fn header_lookup_is_case_insensitive() {
        let buf = b"Host: a\r\nX-Y: b\r\nx-y: c";
        let headers = [
            Header {
                name: Span { start: 0, end: 4 },
                value: Span { start: 6, end: 7 },
                known: Known::Host,
            },
            Header {
                name: Span { start: 9, end: 12 },
                value: Span { start: 14, end: 15 },
                known: Known::Other,
            },
            Header {
                name: Span { start: 17, end: 20 },
                value: Span { start: 22, end: 23 },
                known: Known::Other,
            },
        ];
        assert_eq!(find(&headers, buf, "host"), Some(&b"a"[..]));
        assert_eq!(find(&headers, buf, "x-Y"), Some(&b"b"[..]));
        assert_eq!(find(&headers, buf, "missing"), None);
        assert_eq!(find_known(&headers, buf, Known::Host), Some(&b"a"[..]));
        assert_eq!(find_known(&headers, buf, Known::Date), None);
    }
}
