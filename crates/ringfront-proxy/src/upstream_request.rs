//! The request sent to every peer tried: the client's method and target (the matched prefix
//! replaced by `proxy_pass`'s URI), its headers minus hop-by-hop ones, `proxy_set_header`
//! applied, the body framed by Content-Length. Built once per request, resent on retries.

use ringfront_config::LocationMatch;
use ringfront_http::{BodyFraming, HeadWriter};

use crate::req::Cx;
use crate::vars;

/// The URI sent upstream: unchanged, or with the matched prefix replaced by proxy_pass's URI.
fn upstream_uri(cx: &Cx<'_>, out: &mut Vec<u8>) {
    let req = cx.req;
    let target = vars::origin_path(req.head.target.get(req.buf));
    let Some(uri) = cx
        .settings()
        .proxy_pass
        .as_ref()
        .and_then(|p| p.uri.as_ref())
    else {
        out.extend_from_slice(target);
        return;
    };
    let args = target.iter().position(|&b| b == b'?').map(|i| &target[i..]);
    match &cx.loc.matcher {
        Some(LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p))
            if req.path.starts_with(p.as_str()) =>
        {
            out.extend_from_slice(uri.as_bytes());
            out.extend_from_slice(&req.path.as_bytes()[p.len()..]);
        }
        _ => out.extend_from_slice(uri.as_bytes()),
    }
    if let Some(a) = args {
        out.extend_from_slice(a);
    }
}

/// The request's bytes and where its URI sits in them (for log lines).
pub struct Outbound {
    pub bytes: Vec<u8>,
    pub uri: std::ops::Range<usize>,
}

/// Builds the request head and appends the body.
pub fn build(cx: &Cx<'_>, proxy_host: &str, keepalive: bool, body: &[u8]) -> Outbound {
    let (s, req) = (cx.settings(), cx.req);
    let mut out = Vec::with_capacity(req.head.head_len + 128 + body.len());
    let http10 = s.proxy_http_version == "1.0";
    let method = req.head.method.get(req.buf);
    let uri_start = method.len() + 1;
    let mut uri_end = uri_start;
    let mut h = HeadWriter::request(
        &mut out,
        method,
        |o| {
            upstream_uri(cx, o);
            uri_end = o.len();
        },
        http10,
    );
    let set = &s.proxy_set_header;
    let overridden = |name: &[u8]| {
        set.iter()
            .any(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
    };
    if !overridden(b"host") {
        h.header(b"Host", proxy_host.as_bytes());
    }
    if (!keepalive || http10) && !overridden(b"connection") {
        h.header(b"Connection", b"close");
    }
    let v = req.vars(proxy_host, None, None);
    for (name, t) in set {
        h.header_with(name.as_bytes(), |o| vars::render(o, t, &v, false));
    }
    let conn_hdr = req.head.header(req.buf, "connection").unwrap_or(b"");
    for f in &req.head.headers {
        let name = f.name.get(req.buf);
        if ringfront_http::is_hop_by_hop(name)
            || name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"expect")
            || name.eq_ignore_ascii_case(b"host")
            || overridden(name)
            || ringfront_http::connection_lists(conn_hdr, name)
        {
            continue;
        }
        h.header(name, f.value.get(req.buf));
    }
    if !body.is_empty() || !matches!(req.head.framing, BodyFraming::None) {
        h.header_num(b"Content-Length", body.len() as u64);
    }
    h.finish();
    out.extend_from_slice(body);
    Outbound {
        bytes: out,
        uri: uri_start..uri_end,
    }
}
