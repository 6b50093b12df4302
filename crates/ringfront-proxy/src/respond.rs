//! Responses ringfront makes itself: `return`, error statuses with nginx-style pages
//! (`error_page` redirects are error_redirect.rs's). Every head gets `Server` and `Date`
//! first and the location's `add_header`s last, as in nginx. A normal response to a request
//! an `error_page` redirected goes out with the error's status (nginx's `r->err_status`);
//! special ones (errors, redirects) with their own.

use ringfront_http::{error_body, HeadWriter};

use crate::req::Cx;
use crate::response_headers::Decor;

/// How ringfront's own answers to one request are written.
pub struct Answer<'a> {
    pub decor: Decor<'a>,
    pub keep_alive: bool,
    /// HEAD: answers carry no body.
    pub head_only: bool,
    /// nginx's `r->err_status` after an `error_page` redirect (`None`: none, or `=`).
    pub err_status: Option<u16>,
    /// The erring redirect's `Location`, which a normal answer after an `error_page`
    /// redirect sends (made absolute as this location says).
    pub location: Option<Vec<u8>>,
    /// An intercepted upstream 401's `WWW-Authenticate` (after an `error_page` redirect).
    pub authenticate: &'a [Vec<u8>],
    /// What an upstream's `X-Accel-Redirect` left (its `Content-Type`, `Set-Cookie`...).
    pub accel: Option<&'a crate::accel_redirect::Carried>,
}

impl<'a> Answer<'a> {
    /// For a request read whole, answered in its location.
    pub fn of(cx: &'a Cx<'_>) -> Self {
        Answer {
            decor: Decor::new(cx.settings(), Some(cx.req)).with_snap(cx.snap),
            keep_alive: cx.req.keep_alive,
            head_only: cx.req.head_only,
            err_status: cx.req.rw.and_then(|r| r.error.status).filter(|&s| s != 0),
            location: cx
                .req
                .rw
                .and_then(|r| r.error_location.clone())
                .map(|url| crate::location_url::absolute(cx, url)),
            authenticate: cx.req.rw.map_or(&[], |r| &r.error_authenticate),
            accel: cx.req.rw.and_then(|r| r.accel.as_deref()),
        }
    }

    /// The status a normal response made with `status` goes out with.
    pub fn sent(&self, status: u16) -> u16 {
        self.err_status.unwrap_or(status)
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

/// Appends a complete normal response (with [`Answer::sent`]'s status). Returns the number
/// of body bytes (sent unless `head_only`).
pub fn build(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    status: u16,
    content_type: &str,
    extra: &[(&str, &[u8])],
    body: &[u8],
) -> u64 {
    build_with(out, a, (status, true), content_type, (extra, &[]), body)
}

/// Appends a complete special response (a redirect page): its own status.
pub fn special(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    status: u16,
    extra: &[(&str, &[u8])],
    body: &[u8],
) -> u64 {
    build_with(out, a, (status, false), "text/html", (extra, &[]), body)
}

/// Header fields to add: (name, value).
type Extra<'f> = &'f [(&'f str, &'f [u8])];

/// [`build`] with fields before `Connection` and after the `add_header`s (the range
/// filter's `Content-Range` of a 416). `normal`: a normal response ([`head`]), else a
/// special one with its own status.
fn build_with(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    (status, normal): (u16, bool),
    content_type: &str,
    (extra, last): (Extra<'_>, Extra<'_>),
    body: &[u8],
) -> u64 {
    let sent = if normal { a.sent(status) } else { status };
    let typed = !body.is_empty() || sent >= 200 && sent != 204 && sent != 304;
    let chunked = typed && a.trailers(sent);
    let fields = Fields {
        content_type: typed.then_some(content_type),
        length: typed.then_some(body.len() as u64),
        before: extra,
        after: &[],
        last,
        chunked,
    };
    let head_start = out.len();
    match normal {
        true => head(out, a, status, &fields),
        false => write_head(out, a, status, &fields, true),
    }
    if a.head_only {
        return 0;
    }
    let from = out.len();
    out.extend_from_slice(body);
    if chunked {
        let mut end = Vec::new();
        let sent = crate::vars_response::head_of(&out[head_start..from]);
        a.decor.last_chunk(status, sent, &mut end);
        crate::trailers::frame(out, from, Some(&end));
    }
    (out.len() - from) as u64
}

/// The fields of a head besides `Server`, `Date`, `Connection` and `add_header`, in
/// nginx's order: `Content-Type`, `Content-Length`, `before` (nginx's header filter's own:
/// `Last-Modified`, `Location`), `Connection`, `after` (the handler's list: `ETag`, the
/// headers module's), the `add_header`s, then `last` (the range filter's).
#[derive(Clone, Copy)]
pub struct Fields<'f> {
    pub content_type: Option<&'f str>,
    pub length: Option<u64>,
    pub before: &'f [(&'f str, &'f [u8])],
    pub after: &'f [(&'f str, &'f [u8])],
    pub last: &'f [(&'f str, &'f [u8])],
    /// `Transfer-Encoding: chunked` instead of `Content-Length` (`add_trailer`).
    pub chunked: bool,
}

/// Appends a normal response's head (with [`Answer::sent`]'s status).
pub fn head(out: &mut Vec<u8>, a: &Answer<'_>, status: u16, f: &Fields<'_>) {
    // An `X-Accel-Redirect`ing upstream's type is the answer's (nginx sets no other).
    let carried_type = a
        .accel
        .and_then(|c| c.content_type.as_deref())
        .and_then(|t| std::str::from_utf8(t).ok());
    let typed;
    let f = match (f.content_type, carried_type) {
        (Some(_), Some(t)) => {
            typed = Fields {
                content_type: Some(t),
                ..*f
            };
            &typed
        }
        _ => f,
    };
    let Some(url) = &a.location else {
        return write_head(out, a, a.sent(status), f, false);
    };
    let mut before = f.before.to_vec();
    before.push(("Location", url));
    let f = Fields {
        before: &before,
        ..*f
    };
    write_head(out, a, a.sent(status), &f, false);
}

/// `special`: a special response's built-in page.
fn write_head(out: &mut Vec<u8>, a: &Answer<'_>, status: u16, f: &Fields<'_>, special: bool) {
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
    a.decor.connection(&mut h, a.keep_alive);
    for (n, v) in a.accel.map_or(&[][..], |c| &c.fields) {
        // A built-in special page clears `Accept-Ranges` (`ngx_http_clear_accept_ranges`).
        if special && n.eq_ignore_ascii_case(b"accept-ranges") {
            continue;
        }
        h.header(n, v);
    }
    for v in a.authenticate {
        h.header(b"WWW-Authenticate", v);
    }
    for (n, v) in f.after {
        h.header(n.as_bytes(), v);
    }
    a.decor.last(&mut h, status);
    for (n, v) in f.last {
        h.header(n.as_bytes(), v);
    }
    h.finish();
}

/// nginx's built-in page for an error status (its `error_page` decided by the caller).
/// Returns (status logged, body bytes).
pub fn error(out: &mut Vec<u8>, a: &Answer<'_>, status: u16) -> (u16, u64) {
    error_with(out, a, status, &[])
}

/// [`error`] with fields after the `add_header`s.
pub fn error_with(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    status: u16,
    last: &[(&str, &[u8])],
) -> (u16, u64) {
    let body = error_body(status, a.decor.version());
    // After an error_page redirect, the erring redirect's `Location` (nginx keeps it).
    let carried: &[(&str, &[u8])] = match &a.location {
        Some(url) => &[("Location", url)],
        None => &[],
    };
    let n = build_with(
        out,
        a,
        (status, false),
        "text/html",
        (carried, last),
        body.as_bytes(),
    );
    // nginx's internal 494..=497 go out, and are logged (`err_status`), as 400.
    let shown = if (494..=497).contains(&status) {
        400
    } else {
        status
    };
    (shown, n)
}
