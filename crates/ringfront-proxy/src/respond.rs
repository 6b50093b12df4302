//! Responses ringfront makes itself: `return`, error statuses with nginx-style pages, and
//! `error_page` (static files from `root`, read when the configuration loaded).

use ringfront_http::{error_body, HeadWriter};

use crate::snapshot::LocationRt;

/// Whether the status gets a redirect page and a `Location` header.
pub fn is_redirect(code: u16) -> bool {
    matches!(code, 301 | 302 | 303 | 307 | 308)
}

/// Appends a complete response. Returns the number of body bytes (sent unless `head_only`).
pub fn build(
    out: &mut Vec<u8>,
    status: u16,
    content_type: &str,
    extra: &[(&str, &[u8])],
    body: &[u8],
    keep_alive: bool,
    head_only: bool,
) -> u64 {
    let mut h = HeadWriter::response(out, status);
    h.header(b"Server", b"ringfront");
    if !body.is_empty() || status >= 200 && status != 204 && status != 304 {
        h.header(b"Content-Type", content_type.as_bytes())
            .header_num(b"Content-Length", body.len() as u64);
    }
    for (n, v) in extra {
        h.header(n.as_bytes(), v);
    }
    h.header(
        b"Connection",
        if keep_alive { b"keep-alive" } else { b"close" },
    );
    h.finish();
    if head_only {
        return 0;
    }
    out.extend_from_slice(body);
    body.len() as u64
}

/// An error status for this location, honouring `error_page`. Returns (status sent, body bytes).
pub fn error(
    out: &mut Vec<u8>,
    loc: Option<&LocationRt>,
    status: u16,
    keep_alive: bool,
    head_only: bool,
) -> (u16, u64) {
    if let Some(page) = loc.and_then(|l| l.error_pages.iter().find(|p| p.codes.contains(&status))) {
        if let Some(body) = &page.body {
            let sent = page.overwrite.unwrap_or(status);
            let n = build(
                out,
                sent,
                page.content_type,
                &[],
                body,
                keep_alive,
                head_only,
            );
            return (sent, n);
        }
    }
    let body = error_body(status);
    let n = build(
        out,
        status,
        "text/html",
        &[],
        body.as_bytes(),
        keep_alive,
        head_only,
    );
    (status, n)
}
