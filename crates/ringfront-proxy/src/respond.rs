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
    let mut h = HeadWriter::response(out, status);
    a.decor.first(&mut h);
    if !body.is_empty() || status >= 200 && status != 204 && status != 304 {
        h.header(b"Content-Type", content_type.as_bytes())
            .header_num(b"Content-Length", body.len() as u64);
    }
    for (n, v) in extra {
        h.header(n.as_bytes(), v);
    }
    h.header(
        b"Connection",
        if a.keep_alive {
            b"keep-alive"
        } else {
            b"close"
        },
    );
    a.decor.last(&mut h, status);
    h.finish();
    if a.head_only {
        return 0;
    }
    out.extend_from_slice(body);
    body.len() as u64
}

/// An error status for this location, honouring `error_page`. Returns (status sent, body bytes).
pub fn error(
    out: &mut Vec<u8>,
    a: &Answer<'_>,
    loc: Option<&LocationRt>,
    status: u16,
) -> (u16, u64) {
    if let Some(page) = loc.and_then(|l| l.error_pages.iter().find(|p| p.codes.contains(&status))) {
        if let Some(body) = &page.body {
            let sent = page.overwrite.unwrap_or(status);
            let n = build(out, a, sent, page.content_type, &[], body);
            return (sent, n);
        }
    }
    let body = error_body(status, a.decor.version());
    let n = build(out, a, status, "text/html", &[], body.as_bytes());
    // nginx's internal 494..=497 go out, and are logged (`err_status`), as 400.
    let shown = if (494..=497).contains(&status) {
        400
    } else {
        status
    };
    (shown, n)
}
