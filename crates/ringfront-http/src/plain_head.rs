//! The common head, scanned without httparse. Nearly every head a proxy sees is plain: its
//! lines end in CRLF, its start line is single-spaced, and its names, values, target and
//! reason hold only printable ASCII. For such a head this scan finds exactly what httparse
//! finds (the same spans, version, status code and head length), for less: httparse
//! dispatches to its SIMD code afresh for every name and value, about 220 instructions a
//! field on a small response, where this scan reads names through a byte table and values
//! and the target eight bytes at a time (docs/benchmarks.md, 2026-12-08). Anything else — a
//! bare LF, a tab, a byte below 0x20 or above 0x7E, an empty value or reason, a leading
//! empty line, more than `MAX_HEADERS` fields, a head not yet whole — makes the scan answer
//! `None`, and the caller parses the head with httparse, which then decides (and words any
//! error) as it always has. The tests hold the scan to httparse on generated and mutated
//! heads.

use crate::ascii::{splat, zero_bytes};
use crate::known::Known;
use crate::request::MAX_HEADERS;
use crate::span::{Header, Span};

/// A plain request line's parts.
pub(crate) struct RequestLine {
    pub method: Span,
    pub target: Span,
    pub minor: u8,
}

/// A plain status line's parts.
pub(crate) struct StatusLine {
    pub minor: u8,
    pub code: u16,
    pub reason: Span,
}

/// Byte classes. `METHOD`: what nginx 1.22 takes in a method (`A`-`Z`, `_`, `-`), all of
/// them tokens to httparse. `TOKEN`: RFC 9110's tchar (httparse's field-name bytes).
/// `VALUE`: printable ASCII and the space (a target is that but the space).
const METHOD: u8 = 1;
const TOKEN: u8 = 2;
const VALUE: u8 = 4;

const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0x20;
    while b <= 0x7e {
        let c = b as u8;
        let tchar = c.is_ascii_alphanumeric() || matches!(c, b'!' | b'#'..=b'\'' | b'*' | b'+');
        let tchar = tchar || matches!(c, b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~');
        let method = c.is_ascii_uppercase() || c == b'_' || c == b'-';
        t[b] = VALUE | if tchar { TOKEN } else { 0 } | if method { METHOD } else { 0 };
        b += 1;
    }
    t
};

/// A head's start line `L` and length; `None`: the head is not whole yet.
pub(crate) type Found<L> = Option<(L, usize)>;

/// The scan of one kind of plain head, its fields into the list.
pub(crate) type Scan<L> = fn(&[u8], &mut Vec<Header>) -> Found<L>;

/// httparse's parse of one kind of head, its fields into the list.
pub(crate) type Parse<L, E> = fn(&[u8], &mut Vec<Header>) -> Result<Found<L>, E>;

/// The scan's answer when the head is plain, else httparse's (`out` cleared of what the
/// scan had pushed first).
pub(crate) fn or_else<L, E>(
    buf: &[u8],
    out: &mut Vec<Header>,
    plain: Scan<L>,
    any: Parse<L, E>,
) -> Result<Found<L>, E> {
    if let Some(found) = plain(buf, out) {
        return Ok(Some(found));
    }
    out.clear();
    any(buf, out)
}

/// The request line and fields of the whole plain head at the start of `buf`, the fields
/// appended to `out`; the head's length. `None`: not plain, or not whole yet (then `out` may
/// hold some fields: the caller clears it).
pub(crate) fn request(buf: &[u8], out: &mut Vec<Header>) -> Found<RequestLine> {
    u32::try_from(buf.len()).ok()?;
    let method_end = run(buf, 0, METHOD);
    let target_start = after_space(buf, 0, method_end)?;
    let target_end = until(buf, target_start, b' ');
    let version = after_space(buf, target_start, target_end)?;
    let minor = match buf.get(version..version + 10)? {
        b"HTTP/1.1\r\n" => 1,
        b"HTTP/1.0\r\n" => 0,
        _ => return None,
    };
    let line = RequestLine {
        method: span(0, method_end),
        target: span(target_start, target_end),
        minor,
    };
    Some((line, fields(buf, version + 10, out)?))
}

/// The status line and fields of the whole plain head at the start of `buf`, as
/// [`request`].
pub(crate) fn response(buf: &[u8], out: &mut Vec<Header>) -> Found<StatusLine> {
    u32::try_from(buf.len()).ok()?;
    let minor = match buf.get(..9)? {
        b"HTTP/1.1 " => 1,
        b"HTTP/1.0 " => 0,
        _ => return None,
    };
    let &[a, b, c, b' '] = buf.get(9..13)? else {
        return None;
    };
    let mut code = 0u16;
    for d in [a, b, c] {
        if !d.is_ascii_digit() {
            return None;
        }
        code = code * 10 + u16::from(d - b'0');
    }
    let reason_end = value_end(buf, 13);
    if reason_end == 13 || buf.get(reason_end..reason_end + 2)? != b"\r\n" {
        return None;
    }
    let line = StatusLine {
        minor,
        code,
        reason: span(13, reason_end),
    };
    Some((line, fields(buf, reason_end + 2, out)?))
}

/// The field lines from `at` to the empty line that ends the head; the head's length.
fn fields(buf: &[u8], mut at: usize, out: &mut Vec<Header>) -> Option<usize> {
    crate::span::ready(out);
    loop {
        if buf.get(at..at + 2)? == b"\r\n" {
            return Some(at + 2);
        }
        let name_end = run(buf, at, TOKEN);
        let name = buf.get(at..name_end)?;
        if name.is_empty() || *buf.get(name_end)? != b':' {
            return None;
        }
        let mut start = name_end + 1;
        while buf.get(start) == Some(&b' ') {
            start += 1;
        }
        let line_end = value_end(buf, start);
        if line_end == start || buf.get(line_end..line_end + 2)? != b"\r\n" {
            return None;
        }
        // The first byte is no space, so the trim stops there at the latest.
        let value = buf.get(start..line_end)?;
        let kept = match value.last() {
            Some(b' ') => value.iter().rposition(|&b| b != b' ')? + 1,
            _ => value.len(),
        };
        if out.len() == MAX_HEADERS {
            return None;
        }
        out.push(Header {
            name: span(at, name_end),
            value: span(start, start + kept),
            known: Known::of(name),
        });
        at = line_end + 2;
    }
}

/// Where the run of bytes of `class` starting at `from` ends.
fn run(buf: &[u8], from: usize, class: u8) -> usize {
    let mut i = from;
    while let Some(&b) = buf.get(i) {
        if CLASS[usize::from(b)] & class == 0 {
            break;
        }
        i += 1;
    }
    i
}

/// Where the run of `VALUE` bytes starting at `from` ends.
fn value_end(buf: &[u8], from: usize) -> usize {
    stop_at(buf, from, unusual, |b| CLASS[usize::from(b)] & VALUE == 0)
}

/// Where the first `stop` or byte outside `VALUE` from `from` is: the end of a target when
/// it is the space after it.
fn until(buf: &[u8], from: usize, stop: u8) -> usize {
    stop_at(
        buf,
        from,
        |w| unusual(w) | zero_bytes(w ^ splat(stop)),
        |b| b == stop || CLASS[usize::from(b)] & VALUE == 0,
    )
}

/// The first byte from `from` that `stops`, eight bytes at a time while eight are left
/// (`word_stops` marks such bytes, exactly up to the first) and then a byte at a time. Each
/// caller gets its own copy: values scanned by `until` with a CR as the stop cost about
/// 1,000 more instructions per browser-like request.
#[inline(always)]
fn stop_at(
    buf: &[u8],
    from: usize,
    word_stops: impl Fn(u64) -> u64,
    stops: impl Fn(u8) -> bool,
) -> usize {
    let mut i = from;
    while let Some(w) = word(buf, i) {
        let m = word_stops(w);
        if m != 0 {
            return i + first(m);
        }
        i += 8;
    }
    while let Some(&b) = buf.get(i) {
        if stops(b) {
            break;
        }
        i += 1;
    }
    i
}

/// The eight bytes of `buf` from `at`, little-endian (`None` when fewer are left).
fn word(buf: &[u8], at: usize) -> Option<u64> {
    let w: [u8; 8] = buf.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// The index of the first byte whose high bit is set in `m` (not zero).
fn first(m: u64) -> usize {
    (m.trailing_zeros() / 8) as usize
}

/// 0x80 in the bytes of `w` below 0x20 or above 0x7e; exact up to the first such byte
/// (above it a byte may be marked falsely), which is all [`first`] reads. Below: the
/// classic "has a byte less than n" test, whose borrow only starts at such a byte. Above:
/// the high bit, or a low seven bits of 0x7f, which the added one carries into the high
/// bit without leaving the byte.
const fn unusual(w: u64) -> u64 {
    let below = w.wrapping_sub(splat(0x20)) & !w;
    let above = w | ((w & splat(0x7f)) + splat(0x01));
    (below | above) & splat(0x80)
}

/// The position after the single space at `end`, when the run from `start` is not empty.
fn after_space(buf: &[u8], start: usize, end: usize) -> Option<usize> {
    (end > start && *buf.get(end)? == b' ').then_some(end + 1)
}

/// The span `start..end` of a buffer that `request` or `response` found short enough for
/// `u32` offsets (so the casts keep every bit).
fn span(start: usize, end: usize) -> Span {
    Span {
        start: start as u32,
        end: end as u32,
    }
}

#[cfg(test)]
#[path = "plain_head_tests.rs"]
mod tests;
