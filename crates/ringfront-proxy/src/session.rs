//! One client connection: read a request head (zero-copy, parsed in place), read the body
//! under nginx's limits, route it, answer it (locally or through the upstream loop), log it,
//! and go round again for keepalive and pipelined requests, answered in order.

use std::borrow::Cow;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use monoio::buf::IoBufMut;
use monoio::io::AsyncReadRent;
use monoio::net::TcpStream;
use ringfront_config::{LocationMatch, LogLevel};
use ringfront_http::RequestHead;

use crate::body::{self, Body, BodyError};
use crate::io::{read_more, write_all};
use crate::respond;
use crate::snapshot::{LocationRt, Snapshot};
use crate::vars::{self, TryLog, Vars};
use crate::worker::Worker;

/// What answering one request produced, for the log and the keepalive decision.
pub struct Reply {
    pub status: u16,
    pub body_bytes_sent: u64,
    pub bytes_sent: u64,
    /// The client connection may serve another request.
    pub reusable: bool,
    pub tries: Vec<TryLog>,
}

/// Request facts shared by the proxy loop and the logs.
pub struct Req<'a> {
    pub buf: &'a [u8],
    pub head: &'a RequestHead,
    pub client: SocketAddr,
    pub local: SocketAddr,
    pub server_name: &'a str,
    pub conn_id: u64,
    pub conn_requests: u64,
    pub start: Instant,
    pub path: &'a str,
    /// The client wants and may keep the connection after this response.
    pub keep_alive: bool,
}

impl Req<'_> {
    pub fn vars<'b>(&'b self, proxy_host: &'b str, reply: Option<&'b Reply>) -> Vars<'b> {
        Vars {
            buf: self.buf,
            head: self.head,
            client: self.client,
            local: self.local,
            server_name: self.server_name,
            proxy_host,
            conn_id: self.conn_id,
            conn_requests: self.conn_requests,
            start: self.start,
            status: reply.map_or(0, |r| r.status),
            body_bytes_sent: reply.map_or(0, |r| r.body_bytes_sent),
            bytes_sent: reply.map_or(0, |r| r.bytes_sent),
            tries: reply.map_or(&[], |r| &r.tries),
        }
    }

    /// `, client: ..., server: ..., request: "...", host: "..."` as nginx ends its error lines.
    pub fn log_context(&self, upstream: Option<&str>) -> String {
        log_context(self.buf, self.head, self.client, self.server_name, upstream)
    }
}

/// The tail nginx puts on error-log lines about a request.
fn log_context(
    buf: &[u8],
    head: &RequestHead,
    client: SocketAddr,
    server_name: &str,
    upstream: Option<&str>,
) -> String {
    let mut s = format!(
        ", client: {}, server: {}, request: \"{} {} HTTP/1.{}\"",
        client.ip(),
        server_name,
        String::from_utf8_lossy(head.method.get(buf)),
        String::from_utf8_lossy(head.target.get(buf)),
        head.minor_version
    );
    if let Some(u) = upstream {
        s.push_str(&format!(", upstream: \"{u}\""));
    }
    if let Some(h) = head.host {
        s.push_str(&format!(
            ", host: \"{}\"",
            String::from_utf8_lossy(h.get(buf))
        ));
    }
    s
}

struct Busy<'a>(&'a Worker);

impl<'a> Busy<'a> {
    fn new(w: &'a Worker) -> Self {
        w.busy.set(w.busy.get() + 1);
        w.stats()
            .requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Busy(w)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.request_done();
    }
}

/// Sends a locally made error and reports it; the connection is closed after.
async fn reject(stream: &mut TcpStream, status: u16, limit: std::time::Duration) {
    let mut out = Vec::with_capacity(512);
    respond::error(&mut out, None, status, false, false);
    let _ = write_all(stream, out, limit).await;
}

/// nginx's `large_client_header_buffers`: a request line longer than one buffer is 414; a
/// header line longer than one buffer, or a head larger than all of them, is 400 (nginx's
/// internal 494, "Request Header Or Cookie Too Large").
fn head_limits(
    buf: &[u8],
    head: &RequestHead,
    complete: bool,
    size: usize,
    max: usize,
) -> Option<u16> {
    let line_end = buf.iter().take(size + 2).position(|&b| b == b'\n');
    match line_end {
        None if buf.len() > size => return Some(414),
        Some(n) if n > size + 1 => return Some(414),
        _ => {}
    }
    if complete {
        let long = head
            .headers
            .iter()
            .any(|h| (h.value.end.saturating_sub(h.name.start)) as usize > size);
        if long || head.head_len > max {
            return Some(494);
        }
        return None;
    }
    let long_line = buf
        .split(|&b| b == b'\n')
        .skip(1)
        .any(|l| l.len() > size + 1);
    (long_line || buf.len() > max).then_some(494)
}

/// A client connection between requests: all that an idle keepalive connection holds (a
/// few hundred bytes with its task). Everything a request needs — read buffer, parsed head,
/// timers, the upstream exchange — lives in `request`'s future, boxed and freed when the
/// request is answered, as nginx frees its buffers on idle keepalive connections.
pub struct Conn {
    open: Open,
    /// Also holds the client and local addresses (monoio caches them in the stream).
    stream: TcpStream,
    id: u64,
    requests: u64,
    /// Bytes of the next (pipelined) request already read; no allocation while idle.
    buf: Vec<u8>,
    idle: Rc<crate::idle::IdleSignal>,
}

/// Counts the connection in the worker's open connections for as long as it is open.
struct Open(Rc<Worker>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.conn_closed();
    }
}

impl Conn {
    /// A freshly accepted connection; `None` when it is already gone (its addresses cannot
    /// be read).
    pub fn new(w: Rc<Worker>, stream: TcpStream) -> Option<Self> {
        // Read once here, then served from the stream's cache for every request.
        stream.peer_addr().ok()?;
        stream.local_addr().ok()?;
        let id = w
            .shared
            .next_conn
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        w.conn_opened();
        Some(Conn {
            open: Open(w),
            stream,
            id,
            requests: 0,
            buf: Vec::new(),
            idle: Rc::default(),
        })
    }
}

/// The stream's cached address (read when the connection was accepted).
fn addr(a: std::io::Result<SocketAddr>) -> SocketAddr {
    a.unwrap_or_else(|_| ([0, 0, 0, 0], 0).into())
}

/// Up to this many open connections on a worker, an idle keepalive connection waits with a
/// read posted into its buffer, inside its boxed request future (about 10 KiB together);
/// past it, it only waits for readability, holding neither, at the cost of one more ring
/// operation per request (about 10 % more CPU per request in `loadtest/run.sh`).
const LEAN_IDLE_ABOVE: usize = 64;

/// Serves one client connection until it closes.
#[allow(clippy::manual_async_fn)] // an `async fn` would store its argument twice
pub fn serve(mut conn: Conn) -> impl std::future::Future<Output = ()> {
    async move {
        loop {
            // Boxed: allocated when a request starts (the first is read at once, within
            // client_header_timeout from accept), freed when the connection goes idle past
            // LEAN_IDLE_ABOVE connections; then it waits for readability only.
            conn = match Box::pin(requests(conn)).await {
                Some(c) => c,
                None => return,
            };
            let ready = IdleWait {
                readable: conn.stream.readable(false),
                sig: &conn.idle,
            }
            .await;
            conn.open.0.idle.leave(&conn.idle);
            if !ready {
                return;
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// Waits between requests for the client's next bytes, holding no buffer and no timer:
    /// the worker's reaper closes the connection at `keepalive_timeout`, or earlier to make
    /// room (`worker_connections`). False: close the connection. Hand-written rather than
    /// `select!` so that it adds only a pointer to monoio's readiness future.
    struct IdleWait<'a, F> {
        #[pin]
        readable: F,
        sig: &'a crate::idle::IdleSignal,
    }
}

impl<F: Future<Output = std::io::Result<()>>> Future for IdleWait<'_, F> {
    type Output = bool;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.project();
        match this.readable.poll(cx) {
            Poll::Ready(r) => Poll::Ready(r.is_ok()),
            Poll::Pending => this.sig.poll_closed(cx).map(|()| false),
        }
    }
}

/// Serves requests until the connection closes (`None`) or goes idle while the worker has
/// more than LEAN_IDLE_ABOVE connections.
async fn requests(mut conn: Conn) -> Option<Conn> {
    let mut idle = false;
    loop {
        conn = request(conn, idle).await?;
        // Idle unless pipelined bytes of the next request are already in.
        idle = conn.buf.is_empty();
        if idle && conn.open.0.conns() > LEAN_IDLE_ABOVE {
            return Some(conn);
        }
    }
}

/// Reads, answers and logs one request (first waiting for it with a read posted when `idle`).
/// The connection back when it may serve another, registered as idle unless pipelined bytes
/// of the next request are in.
async fn request(conn: Conn, idle_read: bool) -> Option<Conn> {
    let Conn {
        open,
        mut stream,
        id: conn_id,
        mut requests,
        buf,
        idle,
    } = conn;
    let w = &open.0;
    let client = addr(stream.peer_addr());
    let local = addr(stream.local_addr());
    let mut buf = if buf.capacity() == 0 {
        w.take_buf()
    } else {
        buf
    };
    if idle_read {
        // Idle below LEAN_IDLE_ABOVE: a read posted into the buffer, no extra readiness
        // step; the reaper's close signal ends it at keepalive_timeout.
        let (len, cap) = (buf.len(), buf.capacity());
        let mut read = std::pin::pin!(stream.read(buf.slice_mut(len..cap)));
        let r = std::future::poll_fn(|cx| match read.as_mut().poll(cx) {
            Poll::Ready(r) => Poll::Ready(Some(r)),
            Poll::Pending => idle.poll_closed(cx).map(|()| None),
        })
        .await;
        w.idle.leave(&idle);
        let (r, slice) = r?;
        buf = slice.into_inner();
        if !matches!(r, Ok(n) if n > 0) {
            return None;
        }
    }
    let mut head = RequestHead::new();
    let snap = w.snapshot();
    let candidates = snap.servers_for(local);
    let default = candidates.first().and_then(|&i| snap.servers.get(i))?;
    let base = &default.fallback.settings;
    let (hdr_bufs, hdr_size) = base.large_client_header_buffers;
    let max_head = hdr_bufs.saturating_mul(hdr_size).max(1024);
    // Read until a whole head is in, within client_header_timeout (counted from accept on a
    // fresh connection, from the first byte on a keepalive one, as nginx does).
    let mut busy = None;
    let deadline = Instant::now() + base.client_header_timeout;
    let head_len = loop {
        if !buf.is_empty() {
            if busy.is_none() {
                busy = Some(Busy::new(w));
            }
            let parsed = head.parse(&buf);
            let complete = matches!(parsed, Ok(Some(_)));
            if let Some(status) = head_limits(&buf, &head, complete, hdr_size, max_head) {
                reject(&mut stream, status, base.send_timeout).await;
                return None;
            }
            match parsed {
                Ok(Some(n)) => break n,
                Ok(None) => {}
                Err(e) => {
                    reject(&mut stream, e.status(), base.send_timeout).await;
                    return None;
                }
            }
        } else if w.stopping() {
            return None;
        }
        let limit = deadline.saturating_duration_since(Instant::now());
        if limit.is_zero() {
            return None;
        }
        let (r, b) = read_more(&mut stream, buf, 4096, limit).await;
        buf = b;
        match r {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    };
    let _busy = busy.unwrap_or_else(|| Busy::new(w));
    requests += 1;
    let start = Instant::now();

    let (server, loc) = {
        let path = request_path(&buf, &head);
        // Server names are stored lower-cased; copy the Host only when it is not.
        let host = vars::host(&buf, &head);
        let lowered;
        let host = if host.iter().any(u8::is_ascii_uppercase) {
            lowered = host.to_ascii_lowercase();
            &lowered[..]
        } else {
            host
        };
        let server = crate::route::server(&snap, candidates, host)?;
        (server, crate::route::location(server, &path))
    };
    let s = &loc.settings;
    let server_name = server.names.first().map(String::as_str).unwrap_or("");
    let keep_alive = head.keep_alive
        && !w.stopping()
        && !s.keepalive_timeout.is_zero()
        && requests < s.keepalive_requests;

    // nginx's access phase (allow/deny), before the body is read: the first matching
    // rule decides.
    let denied = s
        .access_rules
        .iter()
        .find(|r| r.matches(client.ip()))
        .is_some_and(|r| !r.allow);
    if denied {
        let ctx = log_context(&buf, &head, client, server_name, None);
        w.log(
            &snap,
            LogLevel::Error,
            conn_id,
            format_args!("access forbidden by rule{ctx}"),
        );
        if !matches!(head.framing, ringfront_http::BodyFraming::None) {
            // The unread body would be taken for the next request: answer and close.
            reject(&mut stream, 403, s.send_timeout).await;
            return None;
        }
    }
    let mut decoded: Vec<u8> = Vec::new();
    let (read, b) = body::read(&mut stream, buf, &head, head_len, s, &mut decoded).await;
    buf = b;
    let (body, consumed) = match read {
        Ok(ok) => ok,
        Err(BodyError::Closed) => return None,
        Err(BodyError::Reject(status)) => {
            if status == 413 {
                let ctx = log_context(&buf, &head, client, server_name, None);
                let size = match head.framing {
                    ringfront_http::BodyFraming::Length(n) => format!(": {n} bytes"),
                    _ => String::new(),
                };
                w.log(
                    &snap,
                    LogLevel::Error,
                    conn_id,
                    format_args!("client intended to send too large body{size}{ctx}"),
                );
            }
            reject(&mut stream, status, s.send_timeout).await;
            return None;
        }
    };

    let path = request_path(&buf, &head);
    let req = Req {
        buf: &buf,
        head: &head,
        client,
        local,
        server_name,
        conn_id,
        conn_requests: requests,
        start,
        path: &path,
        keep_alive,
    };
    let head_only = head.is_head(&buf);
    let mut out = w.take_buf();
    let (reply, back) = if denied {
        let reply = local_error(&mut stream, &mut out, loc, 403, keep_alive, head_only).await;
        (reply, Some(stream))
    } else if s.return_.as_ref().is_some_and(|r| r.code == 444) {
        // nginx's 444: close the connection without a response.
        let reply = Reply {
            status: 444,
            body_bytes_sent: 0,
            bytes_sent: 0,
            reusable: false,
            tries: vec![],
        };
        (reply, None)
    } else if s.return_.is_some() || s.check_status.is_some() || s.api {
        // Answered here: `return`, or the status page / API.
        let reply = match &s.return_ {
            Some(ret) => local_return(&mut out, &req, loc, ret, head_only),
            None => local_status(w, &snap, &mut out, &req, loc, head_only),
        };
        let (r, o) = write_all(&mut stream, std::mem::take(&mut out), s.send_timeout).await;
        out = o;
        let ok = r.is_ok();
        (
            Reply {
                reusable: reply.reusable && ok,
                ..reply
            },
            Some(stream),
        )
    } else if let Some(up) = loc.upstream {
        let body: &[u8] = match &body {
            Body::Decoded => &decoded,
            Body::InBuffer(r) => &buf[r.clone()],
        };
        crate::proxy::run(
            w,
            &snap,
            loc,
            up,
            &req,
            body,
            stream,
            std::mem::take(&mut out),
        )
        .await
    } else {
        let reply = local_error(&mut stream, &mut out, loc, 404, keep_alive, head_only).await;
        (reply, Some(stream))
    };
    access_log(w, &snap, loc, &req, &reply);
    w.give_buf(out);
    let stream = back?;
    if !reply.reusable {
        return None;
    }
    buf.drain(..consumed.min(buf.len()));
    // Pipelined bytes stay with the connection; otherwise it is idle from now on and its
    // buffer goes back to the worker.
    let buf = if buf.is_empty() {
        w.give_buf(buf);
        w.idle.push(&idle, s.keepalive_timeout);
        Vec::new()
    } else {
        buf
    };
    drop(_busy);
    Some(Conn {
        open,
        stream,
        id: conn_id,
        requests,
        buf,
        idle,
    })
}

/// The path of the request target, without arguments (borrowed when it is valid UTF-8).
fn request_path<'a>(buf: &'a [u8], head: &RequestHead) -> Cow<'a, str> {
    let p = vars::origin_path(head.target.get(buf));
    let end = p.iter().position(|&b| b == b'?').unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end])
}

/// Answers with an error status of our own (honouring the location's `error_page`).
async fn local_error(
    stream: &mut TcpStream,
    out: &mut Vec<u8>,
    loc: &LocationRt,
    status: u16,
    keep_alive: bool,
    head_only: bool,
) -> Reply {
    out.clear();
    let (status, n) = respond::error(out, Some(loc), status, keep_alive, head_only);
    let bytes = out.len() as u64;
    let (r, o) = write_all(stream, std::mem::take(out), loc.settings.send_timeout).await;
    *out = o;
    Reply {
        status,
        body_bytes_sent: n,
        bytes_sent: bytes,
        reusable: keep_alive && r.is_ok(),
        tries: vec![],
    }
}

/// `check_status` and `api` locations: the status page or the JSON API, built from the
/// shared board at the time of the request.
fn local_status(
    w: &Worker,
    snap: &Snapshot,
    out: &mut Vec<u8>,
    req: &Req<'_>,
    loc: &LocationRt,
    head_only: bool,
) -> Reply {
    let view = crate::status::collect(snap, &w.shared);
    let target = req.head.target.get(req.buf);
    let query = target
        .iter()
        .position(|&b| b == b'?')
        .and_then(|i| target.get(i + 1..))
        .unwrap_or_default();
    let (status, content_type, body) = if loc.settings.api {
        let method = String::from_utf8_lossy(req.head.method.get(req.buf));
        // The API's own path: what follows the location's prefix (`/api/9/http` -> `/9/http`).
        let path = match &loc.matcher {
            Some(
                LocationMatch::Prefix(p)
                | LocationMatch::PrefixNoRegex(p)
                | LocationMatch::Exact(p),
            ) => req
                .path
                .strip_prefix(p.trim_end_matches('/'))
                .unwrap_or(req.path),
            _ => req.path,
        };
        let r = crate::status::api(&view, &method, path, "");
        (
            r.status,
            crate::status::API_CONTENT_TYPE,
            r.body.into_bytes(),
        )
    } else {
        let format = loc.settings.check_status.unwrap_or_default();
        let r = crate::status::render_query(&view, format, &String::from_utf8_lossy(query));
        (r.status, r.content_type, r.body)
    };
    let n = respond::build(
        out,
        status,
        content_type,
        &[("Cache-Control", b"no-cache")],
        &body,
        req.keep_alive,
        head_only,
    );
    Reply {
        status,
        body_bytes_sent: n,
        bytes_sent: out.len() as u64,
        reusable: req.keep_alive,
        tries: Vec::new(),
    }
}

fn local_return(
    out: &mut Vec<u8>,
    req: &Req<'_>,
    loc: &LocationRt,
    ret: &ringfront_config::Return,
    head_only: bool,
) -> Reply {
    let mut text = Vec::new();
    if let Some(t) = &ret.text {
        vars::render(&mut text, t, &req.vars("", None), false);
    }
    let code = ret.code;
    // absolute_redirect on (nginx's default): a relative URL gets scheme, host and port.
    if respond::is_redirect(code) && text.first() == Some(&b'/') {
        let mut abs = b"http://".to_vec();
        let host = vars::host(req.buf, req.head);
        abs.extend_from_slice(if host.is_empty() {
            req.server_name.as_bytes()
        } else {
            host
        });
        if req.local.port() != 80 {
            abs.extend_from_slice(format!(":{}", req.local.port()).as_bytes());
        }
        abs.extend_from_slice(&text);
        text = abs;
    }
    let (status, body_bytes) = if respond::is_redirect(code) {
        let page = ringfront_http::error_body(code);
        let n = respond::build(
            out,
            code,
            "text/html",
            &[("Location", &text)],
            page.as_bytes(),
            req.keep_alive,
            head_only,
        );
        (code, n)
    } else if ret.text.is_some() {
        let n = respond::build(
            out,
            code,
            "text/plain",
            &[],
            &text,
            req.keep_alive,
            head_only,
        );
        (code, n)
    } else {
        respond::error(out, Some(loc), code, req.keep_alive, head_only)
    };
    Reply {
        status,
        body_bytes_sent: body_bytes,
        bytes_sent: out.len() as u64,
        reusable: req.keep_alive,
        tries: Vec::new(),
    }
}

fn access_log(w: &Worker, snap: &Snapshot, loc: &LocationRt, req: &Req<'_>, reply: &Reply) {
    if loc.access_logs.is_empty() {
        return;
    }
    let proxy_host = loc
        .upstream
        .and_then(|u| snap.groups.get(u))
        .map_or("", |g| g.proxy_host.as_str());
    let v = req.vars(proxy_host, Some(reply));
    for (sink, fmt) in &loc.access_logs {
        let Some(t) = snap.log_formats.get(*fmt) else {
            continue;
        };
        let mut line = Vec::with_capacity(256);
        vars::render(&mut line, t, &v, true);
        line.push(b'\n');
        w.shared
            .logger
            .write(sink, String::from_utf8_lossy(&line).into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_of<A, F: std::future::Future>(_: impl Fn(A) -> F) -> (usize, usize) {
        (std::mem::size_of::<F>(), std::mem::align_of::<F>())
    }

    /// An idle keepalive connection is its task: keep the outer future small (it was
    /// 2,304 bytes, 128-aligned, before requests were boxed and timers left it).
    #[test]
    fn the_connection_future_is_small() {
        let (size, align) = future_of(serve);
        eprintln!(
            "serve future: {size} bytes, align {align}; Conn {} bytes",
            std::mem::size_of::<Conn>()
        );
        let (rd, _) = future_of::<&'static TcpStream, _>(|s: &'static TcpStream| s.readable(false));
        let (req, _) = future_of::<Conn, _>(|c| request(c, true));
        eprintln!("readable future: {rd}, request future: {req}");
        assert!(size <= 512, "{size}");
        assert!(align <= 16, "{align}");
    }
}
