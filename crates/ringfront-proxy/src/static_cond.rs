//! What a file's answer is, given the request's conditional and range fields, as nginx's
//! not_modified filter (`If-Unmodified-Since`, `If-Match` -> 412; `If-Modified-Since`
//! exactly equal (nginx's default `if_modified_since exact`), `If-None-Match` -> 304) and
//! range filter (`Range: bytes=...` -> 206 with `Content-Range`, 416 when unsatisfiable;
//! `If-Range`) decide it.

use ringfront_config::IfModifiedSince;

use crate::req::Req;

/// The status and the part of the file to send.
pub struct Plan {
    pub status: u16,
    pub start: u64,
    pub len: u64,
    /// `Content-Range` of a 206 or 416.
    pub content_range: Option<String>,
    /// `Accept-Ranges: bytes` (a 200 that could have been ranged).
    pub accept_ranges: bool,
    /// Several ranges, `[start, end)` each: a `multipart/byteranges` 206.
    pub parts: Vec<(u64, u64)>,
}

/// The plan for a file of `size` bytes modified at `mtime` with `etag` (none with `etag
/// off`: then `If-Match` and a quoted `If-Range` never hold, as nginx's), under the
/// location's `if_modified_since` and `max_ranges`.
pub fn plan(
    req: &Req<'_>,
    files: &ringfront_config::Files,
    size: u64,
    mtime: i64,
    etag: Option<&str>,
) -> Plan {
    let ims_rule = files.if_modified_since;
    let field = |name| req.head.header(req.buf, name);
    let plan = Plan {
        status: 200,
        start: 0,
        len: size,
        content_range: None,
        accept_ranges: true,
        parts: Vec::new(),
    };
    let time = |v: &[u8]| crate::http_time::parse(v).unwrap_or(-1);
    if let Some(v) = field("If-Unmodified-Since") {
        if time(v) < mtime {
            return failed();
        }
    }
    if let Some(v) = field("If-Match") {
        if !matches_etag(v, etag, false) {
            return failed();
        }
    }
    let (ims, inm) = (field("If-Modified-Since"), field("If-None-Match"));
    if ims.is_some() || inm.is_some() {
        // nginx's `ngx_http_test_if_modified`.
        let modified = ims.is_some_and(|v| match ims_rule {
            IfModifiedSince::Off => true,
            IfModifiedSince::Exact => time(v) != mtime,
            IfModifiedSince::Before => time(v) != mtime && time(v) < mtime,
        });
        let differs = inm.is_some_and(|v| !matches_etag(v, etag, true));
        if !modified && !differs {
            return Plan {
                status: 304,
                len: 0,
                accept_ranges: false,
                ..plan
            };
        }
    }
    // `max_ranges 0`: no range filter at all, not even `Accept-Ranges`.
    if files.max_ranges == Some(0) {
        return Plan {
            accept_ranges: false,
            ..plan
        };
    }
    let Some(range) = field("Range") else {
        return plan;
    };
    if range.len() < 7 || !range[..6].eq_ignore_ascii_case(b"bytes=") {
        return plan;
    }
    if let Some(v) = field("If-Range") {
        let holds = match v.last() {
            Some(b'"') if v.len() >= 2 => etag.is_some_and(|e| v == e.as_bytes()),
            _ => time(v) == mtime,
        };
        if !holds {
            return plan;
        }
    }
    match ranges(&range[6..], size, files.max_ranges) {
        Ranged::One(start, end) => Plan {
            status: 206,
            start,
            len: end - start,
            content_range: Some(format!("bytes {start}-{}/{size}", end - 1)),
            accept_ranges: false,
            parts: Vec::new(),
        },
        Ranged::Unsatisfiable => Plan {
            status: 416,
            len: 0,
            content_range: Some(format!("bytes */{size}")),
            accept_ranges: false,
            ..plan
        },
        Ranged::Many(parts) => Plan {
            status: 206,
            accept_ranges: false,
            parts,
            ..plan
        },
        Ranged::Whole => plan,
    }
}

/// 412: nginx's special response (no `Accept-Ranges`).
fn failed() -> Plan {
    Plan {
        status: 412,
        start: 0,
        len: 0,
        content_range: None,
        accept_ranges: false,
        parts: Vec::new(),
    }
}

/// nginx's `ngx_http_test_if_match`: `*` (even without an ETag, `etag off`), or one of the
/// comma-separated tags is exactly `etag` (with `weak`, a `W/` prefix is skipped first).
fn matches_etag(header: &[u8], etag: Option<&str>, weak: bool) -> bool {
    if header == b"*" {
        return true;
    }
    let Some(etag) = etag else {
        return false;
    };
    let etag = etag.as_bytes();
    let mut p = header;
    while !p.is_empty() {
        if weak && p.len() > 2 && p.starts_with(b"W/") {
            p = &p[2..];
        }
        if etag.len() > p.len() {
            return false;
        }
        if p.starts_with(etag) {
            let rest = &p[etag.len()..];
            let rest = rest.trim_ascii_start();
            if rest.is_empty() || rest[0] == b',' {
                return true;
            }
        }
        let next = p.iter().position(|&b| b == b',').unwrap_or(p.len());
        p = &p[next..];
        let skip = p
            .iter()
            .position(|&b| !matches!(b, b' ' | b'\t' | b','))
            .unwrap_or(p.len());
        p = &p[skip..];
    }
    false
}

/// What a `Range: bytes=` value asks of a file of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
enum Ranged {
    /// One range, `[start, end)`.
    One(u64, u64),
    Unsatisfiable,
    /// Several ranges.
    Many(Vec<(u64, u64)>),
    /// Ignore the field: ranges that add up past the size, or one starting at 0 of an
    /// empty file.
    Whole,
}

/// nginx's `ngx_http_range_parse`; more satisfiable ranges than `limit` is the whole file.
fn ranges(v: &[u8], size: u64, limit: Option<u64>) -> Ranged {
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let (mut p, mut found, mut total) = (0, Vec::new(), 0u64);
    let max = i64::MAX as u64;
    let number = |p: &mut usize| -> Option<u64> {
        let mut n: u64 = 0;
        while at(*p).is_ascii_digit() {
            n = n.checked_mul(10)?.checked_add(u64::from(at(*p) - b'0'))?;
            if n > max {
                return None;
            }
            *p += 1;
        }
        Some(n)
    };
    let spaces = |p: &mut usize| {
        while at(*p) == b' ' {
            *p += 1;
        }
    };
    loop {
        let (mut start, end);
        spaces(&mut p);
        if at(p) != b'-' {
            if !at(p).is_ascii_digit() {
                return Ranged::Unsatisfiable;
            }
            let Some(n) = number(&mut p) else {
                return Ranged::Unsatisfiable;
            };
            start = n;
            spaces(&mut p);
            if at(p) != b'-' {
                return Ranged::Unsatisfiable;
            }
            p += 1;
            spaces(&mut p);
            if matches!(at(p), b',' | 0) {
                end = size;
            } else {
                let Some(e) = last(&mut p, &number, &spaces, &at) else {
                    return Ranged::Unsatisfiable;
                };
                end = if e >= size { size } else { e + 1 };
            }
        } else {
            p += 1;
            let Some(suffix) = last(&mut p, &number, &spaces, &at) else {
                return Ranged::Unsatisfiable;
            };
            start = size.saturating_sub(suffix);
            end = size;
            if size == 0 {
                start = 0;
            }
        }
        if start < end {
            found.push((start, end));
            total = total.saturating_add(end - start);
            if limit.is_some_and(|m| found.len() as u64 > m) {
                return Ranged::Whole;
            }
        } else if start == 0 {
            return Ranged::Whole;
        }
        if at(p) != b',' {
            break;
        }
        p += 1;
    }
    match found.as_slice() {
        [] => Ranged::Unsatisfiable,
        _ if total > size => Ranged::Whole,
        [(s, e)] => Ranged::One(*s, *e),
        _ => Ranged::Many(found),
    }
}

/// The end of a range: digits, spaces, then `,` or the end of the value.
fn last(
    p: &mut usize,
    number: &impl Fn(&mut usize) -> Option<u64>,
    spaces: &impl Fn(&mut usize),
    at: &impl Fn(usize) -> u8,
) -> Option<u64> {
    let before = *p;
    let n = number(p)?;
    if *p == before {
        return None;
    }
    spaces(p);
    matches!(at(*p), b',' | 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_ranges_declines_past_the_limit() {
        assert_eq!(
            ranges(b"0-1,5-6", 100, Some(2)),
            Ranged::Many(vec![(0, 2), (5, 7)])
        );
        assert_eq!(ranges(b"0-1,5-6,9-", 100, Some(2)), Ranged::Whole);
        assert_eq!(ranges(b"0-1", 100, Some(1)), Ranged::One(0, 2));
        assert_eq!(ranges(b"0-1,3-4", 100, Some(1)), Ranged::Whole);
    }

    #[test]
    fn ranges_as_nginx_reads_them() {
        assert_eq!(ranges(b"0-9", 100, None), Ranged::One(0, 10));
        assert_eq!(ranges(b"90-", 100, None), Ranged::One(90, 100));
        assert_eq!(ranges(b"-10", 100, None), Ranged::One(90, 100));
        assert_eq!(ranges(b"-200", 100, None), Ranged::One(0, 100));
        assert_eq!(ranges(b"50-500", 100, None), Ranged::One(50, 100));
        assert_eq!(ranges(b" 1 - 2 ", 100, None), Ranged::One(1, 3));
        assert_eq!(ranges(b"100-", 100, None), Ranged::Unsatisfiable);
        assert_eq!(ranges(b"200-300", 100, None), Ranged::Unsatisfiable);
        assert_eq!(ranges(b"x", 100, None), Ranged::Unsatisfiable);
        assert_eq!(ranges(b"5-2", 100, None), Ranged::Unsatisfiable);
        assert_eq!(
            ranges(b"0-0,5-6", 100, None),
            Ranged::Many(vec![(0, 1), (5, 7)])
        );
        assert_eq!(ranges(b"0-60,50-99", 100, None), Ranged::Whole);
        assert_eq!(ranges(b"0-", 0, None), Ranged::Whole);
        assert_eq!(ranges(b"1-2x", 100, None), Ranged::Unsatisfiable);
    }

    #[test]
    fn etag_lists() {
        let e = Some("\"5-a\"");
        assert!(matches_etag(b"*", e, false));
        assert!(matches_etag(b"*", None, false));
        assert!(!matches_etag(b"\"5-a\"", None, true));
        assert!(matches_etag(b"\"x\", \"5-a\"", e, false));
        assert!(matches_etag(b"W/\"5-a\"", e, true));
        assert!(!matches_etag(b"W/\"5-a\"", e, false));
        assert!(!matches_etag(b"\"5-ab\"", e, false));
    }
}
