//! One client connection: read a request head (zero-copy, parsed in place), read the body
//! under nginx's limits, route it, answer it (locally or through the upstream loop), log it,
//! and go round again for keepalive and pipelined requests, answered in order.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

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
        self.0.busy.set(self.0.busy.get() - 1);
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

/// Above this many open connections on a worker, idle keepalive connections wait without
/// buffers (about 8 KiB less each); below it they keep them for the next request's read.
const LEAN_IDLE_ABOVE: usize = 256;

/// Serves one client connection until it closes.
pub async fn serve(w: &Rc<Worker>, mut stream: TcpStream, client: SocketAddr, local: SocketAddr) {
    let conn_id = w
        .shared
        .next_conn
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut head = RequestHead::new();
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    let mut requests: u64 = 0;
    let mut keepalive_wait = std::time::Duration::ZERO;
    let idle = Rc::new(crate::idle::IdleSignal::default());
    loop {
        let snap = w.snapshot();
        let candidates = snap.servers_for(local);
        let Some(default) = candidates.first().and_then(|&i| snap.servers.get(i)) else {
            return;
        };
        let base = &default.fallback.settings;
        let (hdr_bufs, hdr_size) = base.large_client_header_buffers;
        let max_head = hdr_bufs.saturating_mul(hdr_size).max(1024);
        // Read until a whole head is in: the first byte within keepalive_timeout (the last
        // request's location's), then the whole head within client_header_timeout (counted
        // from accept on a fresh connection, as nginx does).
        let mut busy = None;
        let mut deadline: Option<Instant> = None;
        // Set once a lean idle wait saw data coming: read it now.
        let mut readable = false;
        let head_len = loop {
            if !buf.is_empty() {
                if busy.is_none() {
                    busy = Some(Busy::new(w));
                }
                let parsed = head.parse(&buf);
                let complete = matches!(parsed, Ok(Some(_)));
                if let Some(status) = head_limits(&buf, &head, complete, hdr_size, max_head) {
                    reject(&mut stream, status, base.send_timeout).await;
                    return;
                }
                match parsed {
                    Ok(Some(n)) => break n,
                    Ok(None) => {}
                    Err(e) => {
                        reject(&mut stream, e.status(), base.send_timeout).await;
                        return;
                    }
                }
            } else if w.stopping() {
                return;
            }
            let limit = if buf.is_empty() && requests > 0 {
                keepalive_wait
            } else {
                let d =
                    *deadline.get_or_insert_with(|| Instant::now() + base.client_header_timeout);
                d.saturating_duration_since(Instant::now())
            };
            if limit.is_zero() {
                return;
            }
            let r = if buf.is_empty() && requests > 0 && !readable {
                // Idle between requests: the worker may ask us to close to make room.
                w.idle.push(&idle);
                if w.conns.get() > LEAN_IDLE_ABOVE {
                    // Many open connections: wait for readability holding no buffers (as
                    // nginx frees its buffers on idle keepalive connections), at the cost of
                    // one more ring operation per request.
                    buf = Vec::new();
                    out = Vec::new();
                    let ready = monoio::select! {
                        r = monoio::time::timeout(limit, stream.readable(false)) => matches!(r, Ok(Ok(()))),
                        _ = idle.closed() => false,
                    };
                    idle.busy();
                    if !ready {
                        return;
                    }
                    readable = true;
                    continue;
                }
                let read = read_more(&mut stream, buf, 4096, limit);
                let r = monoio::select! {
                    r = read => Some(r),
                    _ = idle.closed() => None,
                };
                idle.busy();
                match r {
                    Some((r, b)) => {
                        buf = b;
                        r
                    }
                    None => return,
                }
            } else {
                let (r, b) = read_more(&mut stream, buf, 4096, limit).await;
                buf = b;
                r
            };
            match r {
                Ok(0) | Err(_) => return,
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
            let Some(server) = crate::route::server(&snap, candidates, host) else {
                return;
            };
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
                return;
            }
        }
        let mut decoded: Vec<u8> = Vec::new();
        let (read, b) = body::read(&mut stream, buf, &head, head_len, s, &mut decoded).await;
        buf = b;
        let (body, consumed) = match read {
            Ok(ok) => ok,
            Err(BodyError::Closed) => return,
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
                return;
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
            out.clear();
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
            // Boxed: the upstream exchange's state is large, and inline it would be part of
            // every idle keepalive connection's footprint too.
            Box::pin(crate::proxy::run(
                w,
                &snap,
                loc,
                up,
                &req,
                body,
                stream,
                std::mem::take(&mut out),
            ))
            .await
        } else {
            let reply = local_error(&mut stream, &mut out, loc, 404, keep_alive, head_only).await;
            (reply, Some(stream))
        };
        access_log(w, &snap, loc, &req, &reply);
        let Some(s2) = back else { return };
        stream = s2;
        if out.capacity() == 0 {
            out = Vec::with_capacity(4096);
        }
        if !reply.reusable {
            return;
        }
        keepalive_wait = s.keepalive_timeout;
        drop(_busy);
        buf.drain(..consumed.min(buf.len()));
    }
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
