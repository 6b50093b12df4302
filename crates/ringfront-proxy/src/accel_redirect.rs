//! An upstream's `X-Accel-Redirect` (nginx's `ngx_http_upstream_process_headers`): unless
//! `proxy_ignore_headers` names it, the response is not relayed; the request is redirected
//! internally to the URI (or `@name`) it gives, through error_redirect.rs's machinery. The
//! value is checked and unescaped as `ngx_http_parse_unsafe_uri` does (a `?` splits off the
//! arguments), the method becomes GET (HEAD stays), the fields nginx's header table marks
//! for a redirect (`Content-Type`, `Set-Cookie`, `Content-Disposition`, `Cache-Control`,
//! `Expires`, `Accept-Ranges`) go out with the redirected request's answer, and
//! `X-Accel-Limit-Rate` stays the request's rate. The first upstream's head stays readable
//! as `$upstream_http_*` until another upstream answers.

use ringfront_config::IgnoreHeaders;
use ringfront_http::ResponseHead;

use crate::req::Cx;
use crate::response_headers::Decor;

/// What the response that redirected leaves on the request (`RwState::accel`).
#[derive(Debug, Default, Clone)]
pub struct Carried {
    /// The upstream's head, for `$upstream_http_*` and `$upstream_cookie_*`.
    pub upstream_head: Vec<u8>,
    /// Its last `Content-Type`: a normal answer's type.
    pub content_type: Option<Vec<u8>>,
    /// The other kept fields, in the upstream's order (`Set-Cookie` as `proxy_cookie_*`
    /// rewrite it).
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The fields besides `Content-Type` nginx copies on a redirect.
const KEPT: [&str; 5] = [
    "set-cookie",
    "content-disposition",
    "cache-control",
    "expires",
    "accept-ranges",
];

/// The upstream's (first) `X-Accel-Redirect`, unless `proxy_ignore_headers` names it.
pub fn value<'b>(cx: &Cx<'_>, head: &ResponseHead, rbuf: &'b [u8]) -> Option<&'b [u8]> {
    let s = cx.settings();
    if s.proxy_headers.ignores(IgnoreHeaders::XA_REDIRECT) {
        return None;
    }
    head.header(rbuf, "x-accel-redirect")
}

/// The upstream's `X-Accel-Limit-Rate` as a rate (digits only, as `ngx_atoi`), unless
/// ignored.
pub fn limit_rate(cx: &Cx<'_>, head: &ResponseHead, rbuf: &[u8]) -> Option<u64> {
    if cx
        .settings()
        .proxy_headers
        .ignores(IgnoreHeaders::XA_LIMIT_RATE)
    {
        return None;
    }
    let v = head.header(rbuf, "x-accel-limit-rate")?;
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// What the redirected request keeps of the upstream's response.
pub fn carried(cx: &Cx<'_>, head: &ResponseHead, rbuf: &[u8]) -> Carried {
    let decor = Decor::new(cx.settings(), Some(cx.req)).with_snap(cx.snap);
    let mut c = Carried {
        upstream_head: rbuf.get(..head.head_len).unwrap_or_default().to_vec(),
        ..Carried::default()
    };
    for f in &head.headers {
        let (name, value) = (f.name.get(rbuf), f.value.get(rbuf));
        if name.eq_ignore_ascii_case(b"content-type") {
            c.content_type = Some(value.to_vec());
            continue;
        }
        if !KEPT.iter().any(|k| name.eq_ignore_ascii_case(k.as_bytes())) {
            continue;
        }
        let edited = crate::proxy_redirect::edited(&decor, f.known, value);
        let value = edited.unwrap_or_else(|| value.to_vec());
        c.fields.push((name.to_vec(), value));
    }
    c
}

/// Where a redirect goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Goal {
    /// The unescaped URI and the arguments.
    Uri(Vec<u8>, Vec<u8>),
    /// `@name`.
    Named(Vec<u8>),
}

/// `ngx_http_parse_unsafe_uri` on the value: the URI (unescaped) and its arguments, or the
/// URI as nginx logs it in `unsafe URI "..." was detected`.
pub fn parse(value: &[u8]) -> Result<Goal, Vec<u8>> {
    if value.first() == Some(&b'@') {
        return Ok(Goal::Named(value.to_vec()));
    }
    if value.is_empty() || value[0] == b'?' || dotdot_first(value) {
        return Err(value.to_vec());
    }
    let (uri, args) = match value.iter().position(|&b| b == b'?') {
        Some(i) => (&value[..i], &value[i + 1..]),
        None => (value, &[][..]),
    };
    // nginx looks past the `?` for the dots after a `/` before it.
    if unsafe_bytes(value, uri.len()) {
        return Err(uri.to_vec());
    }
    if !uri.contains(&b'%') {
        return Ok(Goal::Uri(uri.to_vec(), args.to_vec()));
    }
    let decoded = unescape(uri);
    if decoded.is_empty() || dotdot_first(&decoded) || unsafe_bytes(&decoded, decoded.len()) {
        return Err(decoded);
    }
    Ok(Goal::Uri(decoded, args.to_vec()))
}

/// `..` or `../` at the start.
fn dotdot_first(p: &[u8]) -> bool {
    p.len() > 1 && p[0] == b'.' && p[1] == b'.' && (p.len() == 2 || p[2] == b'/')
}

/// A NUL, or a `/..` segment (`/../`, or `/..` at the end), among the first `end` bytes.
fn unsafe_bytes(p: &[u8], end: usize) -> bool {
    p.iter()
        .take(end)
        .enumerate()
        .any(|(i, &ch)| ch == 0 || (ch == b'/' && p.get(i + 1..).is_some_and(dotdot_first)))
}

/// `ngx_unescape_uri` without a type: every `%XX` decoded; a `%` with a bad first digit
/// is dropped, one with a bad second digit drops all three.
fn unescape(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        if src[i] != b'%' {
            out.push(src[i]);
            i += 1;
            continue;
        }
        let Some(hi) = src.get(i + 1).and_then(|&c| hex(c)) else {
            // The invalid quoted character itself is kept.
            if let Some(&c) = src.get(i + 1) {
                out.push(c);
            }
            i += 2;
            continue;
        };
        if let Some(lo) = src.get(i + 2).and_then(|&c| hex(c)) {
            out.push((hi << 4) | lo);
        }
        i += 3;
    }
    out
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(u: &str, a: &str) -> Result<Goal, Vec<u8>> {
        Ok(Goal::Uri(u.as_bytes().to_vec(), a.as_bytes().to_vec()))
    }

    #[test]
    fn values_parse_as_nginx_checks_them() {
        assert_eq!(parse(b"/index.html"), uri("/index.html", ""));
        assert_eq!(parse(b"/foo?bar"), uri("/foo", "bar"));
        assert_eq!(parse(b"/foo%20bar"), uri("/foo bar", ""));
        assert_eq!(parse(b"/a?b/../c"), uri("/a", "b/../c"));
        assert_eq!(parse(b"@named"), Ok(Goal::Named(b"@named".to_vec())));
        assert_eq!(parse(b"/foo/..."), uri("/foo/...", ""));
        // As nginx: the dots before a `?` are not a segment of their own.
        assert_eq!(parse(b"/..?x"), uri("/..", "x"));
        for bad in [
            &b".."[..],
            b"../foo",
            b"/foo/..",
            b"/foo/../bar",
            b"",
            b"?a",
            b"/a\0b",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse(b"/foo/.%2e"), Err(b"/foo/..".to_vec()));
        assert_eq!(parse(b"/x%00"), Err(b"/x\0".to_vec()));
        assert_eq!(parse(b"%2e%2e/x"), Err(b"../x".to_vec()));
    }

    #[test]
    fn bad_escapes_drop_as_nginx() {
        assert_eq!(unescape(b"/a%zz"), b"/azz");
        assert_eq!(unescape(b"/a%2z"), b"/a");
        assert_eq!(unescape(b"/a%"), b"/a");
        assert_eq!(unescape(b"/%41%62"), b"/Ab");
    }
}
