//! The request sent to every peer tried: the client's method and target (the matched prefix
//! replaced by `proxy_pass`'s URI), its headers minus hop-by-hop ones, `proxy_set_header`
//! applied, the body framed by Content-Length. Built once per request, resent on retries;
//! the head and the body go out in one `writev` from where they are, the body never copied.

use std::cell::RefCell;
use std::rc::Rc;

use ringfront_config::LocationMatch;
use ringfront_http::{BodyFraming, HeadWriter, Known};

use crate::req::{Cx, Req};
use crate::vars;

/// The URI sent upstream: unchanged, or with the matched prefix replaced by proxy_pass's URI;
/// `vars_uri`, the URI part of a `proxy_pass` with variables, replaces it whole (nginx).
fn upstream_uri(cx: &Cx<'_>, out: &mut Vec<u8>, vars_uri: Option<&[u8]>) {
    if let Some(uri) = vars_uri {
        return out.extend_from_slice(uri);
    }
    let req = cx.req;
    if let Some(rw) = req.rw.filter(|rw| rw.rebuild) {
        return rewritten_uri(cx, rw, out);
    }
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
    // A fragment is not sent with the arguments (nginx's `$args` stop at `#`).
    let args = args.map(|a| &a[..a.iter().position(|&b| b == b'#').unwrap_or(a.len())]);
    match &cx.loc.matcher {
        Some(LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p))
            if req.path.starts_with(p.as_str()) =>
        {
            out.extend_from_slice(uri.as_bytes());
            let rest = &req.path.as_bytes()[p.len()..];
            // A decoded URI goes out escaped again (nginx: `r->quoted_uri`).
            match req.rw.is_some_and(|rw| rw.quoted) {
                true => crate::static_path::escape_uri(out, rest),
                false => out.extend_from_slice(rest),
            }
        }
        _ => out.extend_from_slice(uri.as_bytes()),
    }
    if let Some(a) = args {
        out.extend_from_slice(a);
    }
}

/// After a rewrite or `set $args` nginx builds the request line from `$uri` and `$args`
/// (`ngx_http_proxy_create_request`): `proxy_pass`'s URI part replaces the location's
/// prefix, unless `rewrite ... break` (or `break` after a change) stayed in the location,
/// when the URI goes whole. The URI is decoded, so it is escaped again (`NGX_ESCAPE_URI`).
fn rewritten_uri(cx: &Cx<'_>, rw: &crate::rewrite_state::RwState, out: &mut Vec<u8>) {
    let req = cx.req;
    let mut uri = req.path.as_bytes();
    let part = cx
        .settings()
        .proxy_pass
        .as_ref()
        .and_then(|p| p.uri.as_ref());
    if let (Some(part), false) = (part, rw.location_invalid) {
        out.extend_from_slice(part.as_bytes());
        let prefix = match &cx.loc.matcher {
            Some(
                LocationMatch::Prefix(p)
                | LocationMatch::PrefixNoRegex(p)
                | LocationMatch::Exact(p),
            ) => p.len(),
            _ => 0,
        };
        uri = uri.get(prefix..).unwrap_or_default();
    }
    crate::static_path::escape_uri(out, uri);
    let args = match &rw.args {
        Some(a) => &a[..],
        None => {
            let target = vars::origin_path(req.head.target.get(req.buf));
            let q = target.iter().position(|&b| b == b'?');
            q.map_or(&b""[..], |i| &target[i + 1..])
        }
    };
    if !args.is_empty() {
        out.push(b'?');
        out.extend_from_slice(args);
    }
}

/// The request: its head, the client's body, and where the URI sits in the head.
pub struct Outbound {
    head: Vec<u8>,
    body: Vec<u8>,
    /// The client's body when `body` is not it (`proxy_set_body`, `proxy_pass_request_body
    /// off`): an `X-Accel-Redirect` passes it on.
    client_body: Option<Vec<u8>>,
    /// Both parts from their first byte (`Request`'s vector).
    iov: [libc::iovec; 2],
    pub uri: std::ops::Range<usize>,
}

/// The unsent rest of both parts, from byte `from` of the whole request on.
fn iovecs(head: &[u8], body: &[u8], from: usize) -> ([libc::iovec; 2], usize) {
    let part = |v: &[u8], skip: usize| {
        let rest = v.get(skip.min(v.len())..).unwrap_or_default();
        libc::iovec {
            iov_base: rest.as_ptr().cast_mut().cast(),
            iov_len: rest.len(),
        }
    };
    let (h, b) = (
        part(head, from),
        part(body, from.saturating_sub(head.len())),
    );
    match (h.iov_len, b.iov_len) {
        (0, _) => ([b, h], usize::from(b.iov_len > 0)),
        (_, 0) => ([h, b], 1),
        _ => ([h, b], 2),
    }
}

impl Outbound {
    fn new(head: Vec<u8>, body: Vec<u8>, uri: std::ops::Range<usize>) -> Self {
        let (iov, _) = iovecs(&head, &body, 0);
        Outbound {
            iov,
            head,
            body,
            client_body: None,
            uri,
        }
    }

    /// The client's request body (for the request an `X-Accel-Redirect` redirects).
    pub fn client_body(&self) -> &[u8] {
        self.client_body.as_deref().unwrap_or(&self.body)
    }

    /// A request of these bytes (the URI range empty).
    #[cfg(test)]
    pub fn for_test(head: Vec<u8>, body: Vec<u8>) -> Self {
        Outbound::new(head, body, 0..0)
    }

    /// The URI sent (for log lines).
    pub fn uri(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.uri_bytes())
    }

    /// The URI sent, as bytes.
    pub fn uri_bytes(&self) -> &[u8] {
        self.head.get(self.uri.clone()).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    /// The body bytes it holds (sent with the head).
    pub fn body_len(&self) -> usize {
        self.body.len()
    }
}

/// The whole request as the ring writes it: shared, so a retry resends the same bytes, and
/// owned by the write operation, so a cancelled write never outlives the bytes it reads.
#[derive(Clone)]
pub struct Request(pub Rc<Outbound>);

/// Spare requests kept per thread (one per request in flight on a busy worker), how many
/// `trim_spares` leaves, and the largest head capacity one keeps.
const SPARES: usize = 1024;
const QUIET_SPARES: usize = 32;
const SPARE_HEAD: usize = 8192;

thread_local! {
    /// Requests whose last `Request` ended, kept for the next ones on this thread: their
    /// `Rc` and their head's capacity (bodies are dropped), so that building a request
    /// allocates neither once the worker is warm. Only this list holds each of them.
    static SPARE: RefCell<Vec<Rc<Outbound>>> = const { RefCell::new(Vec::new()) };
}

/// Keeps only a quiet worker's share of the spare requests (after a busy period).
pub fn trim_spares() {
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.truncate(QUIET_SPARES);
            s.shrink_to_fit();
        }
    });
}

/// An empty head buffer of at least `cap` bytes: a spare request's, else a new one.
fn head_buf(cap: usize) -> Vec<u8> {
    let spare = SPARE.try_with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        let m = Rc::get_mut(s.last_mut()?)?;
        Some(std::mem::take(&mut m.head))
    });
    let mut head = spare.ok().flatten().unwrap_or_default();
    head.clear();
    head.reserve(cap);
    head
}

impl Request {
    /// The request for `outbound`, in a spare request's allocation when there is one.
    pub fn new(outbound: Outbound) -> Request {
        let spare = SPARE
            .try_with(|s| s.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        match spare {
            Some(mut rc) => match Rc::get_mut(&mut rc) {
                Some(m) => {
                    *m = outbound;
                    Request(rc)
                }
                None => Request(Rc::new(outbound)),
            },
            None => Request(Rc::new(outbound)),
        }
    }
}

impl Drop for Request {
    /// The last handle of a request (no write holds it) keeps it as a spare: its body
    /// dropped, its head emptied (one that grew past `SPARE_HEAD` is not kept).
    fn drop(&mut self) {
        let Some(m) = Rc::get_mut(&mut self.0) else {
            return;
        };
        if m.head.capacity() > SPARE_HEAD {
            return;
        }
        m.body = Vec::new();
        m.client_body = None;
        m.head.clear();
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if s.len() < SPARES {
                    s.push(Rc::clone(&self.0));
                }
            }
        });
    }
}

/// What a short write left: the rest of the request from some byte on (rare: a request
/// larger than the socket's send buffer). The vector is boxed so that its address holds
/// while the ring owns it.
pub struct Rest {
    _req: Rc<Outbound>,
    iov: Box<[libc::iovec; 2]>,
    count: usize,
}

impl Request {
    /// The bytes not yet written once `from` were.
    pub fn rest(&self, from: usize) -> Rest {
        let (iov, count) = iovecs(&self.0.head, &self.0.body, from);
        Rest {
            _req: self.0.clone(),
            iov: Box::new(iov),
            count,
        }
    }
}

// SAFETY: the iovecs point into `head` and `body`, which the `Outbound` owns and never
// changes after `Outbound::new` while a `Request` holds it (only a spare, held by nothing
// but the spare list, is changed: emptied, then replaced whole); the `Rc` keeps both and
// the array alive, at a fixed address, for as long as the runtime holds this value. The
// count is the number of non-empty parts, within the array's length.
#[allow(unsafe_code)]
unsafe impl monoio::buf::IoVecBuf for Request {
    fn read_iovec_ptr(&self) -> *const libc::iovec {
        self.0.iov.as_ptr()
    }

    fn read_iovec_len(&self) -> usize {
        if self.0.body.is_empty() {
            1
        } else {
            2
        }
    }
}

/// A request without a body, written as one buffer: the ring's `send` rather than its
/// `writev` (no iovec to import, no file-write path in the kernel; most proxied requests
/// have no body).
pub struct HeadOnly(Request);

impl Request {
    /// The request as one buffer, when it has no body.
    pub fn head_only(&self) -> Option<HeadOnly> {
        self.0.body.is_empty().then(|| HeadOnly(self.clone()))
    }
}

// SAFETY: the pointer is the `head` of the `Outbound` this value keeps alive through its
// `Rc`, which nothing changes while a `Request` holds it (as for `Request`'s iovecs).
#[allow(unsafe_code)]
unsafe impl monoio::buf::IoBuf for HeadOnly {
    fn read_ptr(&self) -> *const u8 {
        self.0 .0.head.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.0 .0.head.len()
    }
}

// SAFETY: as for `Request`: the iovecs point into the `Outbound` this value keeps alive
// through its `Rc`, and the array is boxed, so its address does not move with the value.
#[allow(unsafe_code)]
unsafe impl monoio::buf::IoVecBuf for Rest {
    fn read_iovec_ptr(&self) -> *const libc::iovec {
        self.iov.as_ptr()
    }

    fn read_iovec_len(&self) -> usize {
        self.count
    }
}

/// Builds the request head; the body is kept as it is.
pub fn build(
    cx: &Cx<'_>,
    proxy_host: &str,
    body: Vec<u8>,
    vars_uri: Option<&[u8]>,
    streamed: Option<&crate::body_stream::BodyStream>,
    file_len: Option<u64>,
) -> Outbound {
    let (s, req) = (cx.settings(), cx.req);
    let mut v = req.vars(proxy_host, None, Some(cx.snap));
    v.proxy_tls = cx.loc.upstream_tls.is_some();
    let client_body = (s.proxy_set_body.is_some() || !s.proxy_pass_request_body)
        .then(|| body.clone())
        .filter(|b| !b.is_empty());
    let (body, length) = match (streamed, file_len) {
        // The body follows the head as it comes: its declared length, or chunked.
        (Some(_), _) => match req.head.framing {
            BodyFraming::Length(n) => (body, Some(n)),
            _ => (body, None),
        },
        // The body follows the head from its file.
        (None, Some(n)) => (body, Some(n)),
        (None, None) => body_sent(cx, &v, body),
    };
    let rendered;
    let method: &[u8] = match &s.proxy_method {
        Some(t) => {
            let mut m = Vec::new();
            vars::render(&mut m, t, &v, false);
            rendered = m;
            &rendered
        }
        None => req.method(),
    };
    let mut out = head_buf(req.head.head_len + 128);
    let http10 = s.proxy_http_version == "1.0";
    let uri_start = method.len() + 1;
    let mut uri_end = uri_start;
    let mut h = HeadWriter::request(
        &mut out,
        method,
        |o| {
            upstream_uri(cx, o, vars_uri);
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
    if !overridden(b"connection") {
        h.line(b"Connection: close\r\n");
    }
    for (name, t) in set {
        h.header_with(name.as_bytes(), |o| vars::render(o, t, &v, false));
    }
    if s.proxy_pass_request_headers {
        client_headers(req, &mut h, overridden);
    }
    if let Some(n) = length.filter(|_| !overridden(b"content-length")) {
        h.header_num(b"Content-Length", n);
    }
    if streamed.is_some_and(|st| st.chunked()) && !overridden(b"transfer-encoding") {
        h.header(b"Transfer-Encoding", b"chunked");
    }
    h.finish();
    Outbound {
        client_body,
        ..Outbound::new(out, body, uri_start..uri_end)
    }
}

/// The body sent upstream and the Content-Length announced: `proxy_set_body`'s; with
/// `proxy_pass_request_body off` none, yet the client's declared length (as nginx, which is
/// why configurations add `proxy_set_header Content-Length ""`); else the client's.
fn body_sent(cx: &Cx<'_>, v: &vars::Vars<'_>, body: Vec<u8>) -> (Vec<u8>, Option<u64>) {
    let s = cx.settings();
    if let Some(t) = &s.proxy_set_body {
        let mut out = Vec::new();
        vars::render(&mut out, t, v, false);
        let n = out.len() as u64;
        return (out, Some(n));
    }
    let declared = match cx.req.head.framing {
        BodyFraming::Length(n) => Some(n),
        BodyFraming::None => None,
        _ => Some(body.len() as u64),
    };
    if !s.proxy_pass_request_body {
        return (
            Vec::new(),
            declared.filter(|_| cx.req.head.framing != BodyFraming::Chunked),
        );
    }
    let n = body.len() as u64;
    (body, (n > 0 || declared.is_some()).then_some(n))
}

/// The client's header fields, minus hop-by-hop ones, those ringfront sets itself and
/// those `proxy_set_header` overrides.
fn client_headers(req: &Req<'_>, h: &mut HeadWriter<'_>, overridden: impl Fn(&[u8]) -> bool) {
    let connection = req.head.known(req.buf, Known::Connection);
    let conn = ringfront_http::ConnectionList::new(connection.unwrap_or(b""));
    for f in &req.head.headers {
        let name = f.name.get(req.buf);
        if conn.hop_by_hop(f.known, name)
            || matches!(f.known, Known::ContentLength | Known::Expect | Known::Host)
            || overridden(name)
        {
            continue;
        }
        h.field(req.buf, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(iov: &[libc::iovec]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in iov {
            // Test-only view of what the ring would send.
            #[allow(unsafe_code)]
            // SAFETY: the iovec was made from a live slice of `head` or `body` below.
            let part = unsafe { std::slice::from_raw_parts(v.iov_base.cast::<u8>(), v.iov_len) };
            out.extend_from_slice(part);
        }
        out
    }

    #[test]
    fn short_writes_resume_where_they_stopped() {
        let head = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        let body = b"0123456789".to_vec();
        let whole = [&head[..], &body[..]].concat();
        for from in 0..=whole.len() {
            let (iov, n) = iovecs(&head, &body, from);
            assert_eq!(bytes(&iov[..n]), whole[from..], "from {from}");
        }
        let (_, n) = iovecs(&head, &[], 0);
        assert_eq!(n, 1);
        let req = Request(Rc::new(Outbound::new(head.clone(), body, 4..5)));
        assert_eq!(req.0.uri(), "/");
        assert_eq!(req.0.len(), whole.len());
        let rest = req.rest(head.len() + 3);
        assert_eq!(bytes(&rest.iov[..rest.count]), b"3456789");
    }

    #[test]
    fn a_request_without_a_body_is_one_buffer_of_its_head() {
        use monoio::buf::IoBuf;
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
        let bare = Request(Rc::new(Outbound::new(head.clone(), Vec::new(), 4..5)));
        let one = bare.head_only().expect("no body: one buffer");
        // SAFETY: the pointer and length are the head's, kept alive by `one`.
        #[allow(unsafe_code)]
        let sent = unsafe { std::slice::from_raw_parts(one.read_ptr(), one.bytes_init()) };
        assert_eq!(sent, &head[..]);
        let with_body = Request(Rc::new(Outbound::new(head, b"x".to_vec(), 4..5)));
        assert!(
            with_body.head_only().is_none(),
            "a body goes with the head in a writev"
        );
    }
}
