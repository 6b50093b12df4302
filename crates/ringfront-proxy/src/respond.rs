//! Responses ringfront makes itself: `return`, error statuses with nginx-style pages, and
//! `error_page` (static files from `root`, read when the configuration loaded). Every head
//! gets `Server` and `Date` first and the location's `add_header`s last, as in nginx.

use ringfront_http::{error_body, HeadWriter};

use crate::req::Cx;
use crate::response_headers::Decor;
use crate::snapshot::LocationRt;

/// How ringfront's own answers to one request are written.
pub struct Answer<'a> {
    pub decor: Decor<'a>,
    pub keep_alive: bool,
    /// HEAD: answers carry no body.
    pub head_only: bool,
}

impl<'a> Answer<'a> {
    /// For a request read whole, answered in its location.
    pub fn of(cx: &'a Cx<'_>) -> Self {
        Answer {
            decor: Decor::new(cx.settings(), Some(cx.req)).with_snap(cx.snap),
            keep_alive: cx.req.keep_alive,
            head_only: cx.req.head_only,
        }
    }

    /// Whether the answer with `status` goes chunked to carry `add_trailer` fields.
    pub fn trailers(&self, status: u16) -> bool {
        self.decor.trailers_apply(status)
            && self
                .decor
                .req()
                .is_some_and(|r| crate::trailers::possible(r.head.minor_version, self.head_only))
    }
}

/// Whether the status gets a redirect page and a `Location` header.
pub fn is_redirect(code: u16) -> bool {
    matches!(code, 301 | 302 | 303 | 307 | 308)
}

/// Appends a complete response. Returns the number of body bytes (sent unless `head_only`).
pub fn build(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    status: u16,
    content_type: &str,
    extra: &[(&str, &[u8])],
    body: &[u8],
) -> u64 {
    build_with(out, a, status, content_type, (extra, &[]), body)
}

/// Header fields to add: (name, value).
type Extra<'f> = &'f [(&'f str, &'f [u8])];

/// [`build`] with fields before `Connection` and after the `add_header`s (the range
/// filter's `Content-Range` of a 416).
fn build_with(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    status: u16,
    content_type: &str,
    (extra, last): (Extra<'_>, Extra<'_>),
    body: &[u8],
) -> u64 {
    let typed = !body.is_empty() || status >= 200 && status != 204 && status != 304;
    let chunked = typed && a.trailers(status);
    let fields = Fields {
        content_type: typed.then_some(content_type),
        length: typed.then_some(body.len() as u64),
        before: extra,
        after: &[],
        last,
        chunked,
    };
    head(out, a, status, &fields);
    if a.head_only {
        return 0;
    }
    let from = out.len();
    out.extend_from_slice(body);
    if chunked {
        let mut end = Vec::new();
        a.decor.last_chunk(status, &mut end);
        crate::trailers::frame(out, from, Some(&end));
    }
    (out.len() - from) as u64
}

/// The fields of a head besides `Server`, `Date`, `Connection` and `add_header`, in
/// nginx's order: `Content-Type`, `Content-Length`, `before` (nginx's header filter's own:
/// `Last-Modified`, `Location`), `Connection`, `after` (the handler's list: `ETag`, the
/// headers module's), the `add_header`s, then `last` (the range filter's).
pub struct Fields<'f> {
    pub content_type: Option<&'f str>,
    pub length: Option<u64>,
    pub before: &'f [(&'f str, &'f [u8])],
    pub after: &'f [(&'f str, &'f [u8])],
    pub last: &'f [(&'f str, &'f [u8])],
    /// `Transfer-Encoding: chunked` instead of `Content-Length` (`add_trailer`).
    pub chunked: bool,
}

/// Appends a response head.
pub fn head(out: &mut Vec<u8>, a: &Answer<'_>, status: u16, f: &Fields<'_>) {
    let mut h = HeadWriter::response(out, status);
    a.decor.first(&mut h);
    if let Some(t) = f.content_type {
        h.header(b"Content-Type", t.as_bytes());
    }
    if let Some(n) = f.length.filter(|_| !f.chunked) {
        h.header_num(b"Content-Length", n);
    }
    for (n, v) in f.before {
        h.header(n.as_bytes(), v);
    }
    if f.chunked {
        h.header(b"Transfer-Encoding", b"chunked");
    }
    h.header(
        b"Connection",
        if a.keep_alive {
            b"keep-alive"
        } else {
            b"close"
        },
    );
    for (n, v) in f.after {
        h.header(n.as_bytes(), v);
    }
    a.decor.last(&mut h, status);
    for (n, v) in f.last {
        h.header(n.as_bytes(), v);
    }
    h.finish();
}

/// An error status for this location, honouring `error_page`. Returns (status sent, body bytes).
pub fn error(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    loc: Option<&LocationRt>,
    status: u16,
) -> (u16, u64) {
    error_with(out, a, loc, status, &[])
}

/// [`error`] with fields after the `add_header`s.
pub fn error_with(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    loc: Option<&LocationRt>,
    status: u16,
    last: &[(&str, &[u8])],
) -> (u16, u64) {
    if let Some(page) = loc.and_then(|l| l.error_pages.iter().find(|p| p.codes.contains(&status))) {
        if let Some(body) = &page.body {
            let sent = page.overwrite.unwrap_or(status);
            let n = build_with(out, a, sent, page.content_type, (&[], last), body);
            return (sent, n);
        }
    }
    let body = error_body(status, a.decor.version());
    let n = build_with(out, a, status, "text/html", (&[], last), body.as_bytes());
    // nginx's internal 494..=497 go out, and are logged (`err_status`), as 400.
    let shown = if (494..=497).contains(&status) {
        400
    } else {
        status
    };
    (shown, n)
}
