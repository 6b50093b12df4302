//! One client connection: read a request head (zero-copy, parsed in place), read the body
//! under nginx's limits, route it, answer it (locally or through the upstream loop), log it,
//! and go round again for keepalive and pipelined requests, answered in order.

use std::borrow::Cow;
use std::cell::RefCell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use crate::idle_policy;
use crate::stream::ClientStream;
use monoio::buf::IoBufMut;
use monoio::io::AsyncReadRent;
use ringfront_config::LogLevel;
use ringfront_http::RequestHead;

use crate::body::{self, BodyError};
use crate::body_stream::BodyStream;
use crate::head_refusal::Ended;
use crate::io::{read_more, write_all, IoFail};
use crate::req::{log_context, Cx, Req};
use crate::respond;
use crate::rewrite::Outcome;
use crate::rewrite_state::RwState;
use crate::vars;
use crate::worker::Worker;

/// A request in flight, from its first byte to its last response byte; `reading` until its
/// head is in (the counts `stub_status` shows).
struct Busy<'a> {
    w: &'a Worker,
    reading: bool,
    /// Still counted by `stub_status` (writing).
    counted: bool,
}

impl<'a> Busy<'a> {
    fn new(w: &'a Worker) -> Self {
        w.request_started();
        Busy {
            w,
            reading: true,
            counted: true,
        }
    }

    fn head_read(&mut self) {
        if std::mem::take(&mut self.reading) {
            self.w.head_read();
        }
    }

    /// Over as nginx counts it: nginx frees the request (writing, minus one) once its log
    /// line is written, before it closes the connection; only a lingering close keeps it.
    fn answered(&mut self) {
        self.head_read();
        if std::mem::take(&mut self.counted) {
            self.w.request_answered();
        }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.head_read();
        self.w.request_done(self.counted);
    }
}

/// Sends a locally made error and reports it; the connection is closed after. `s`: the
/// settings in effect (the default server's before routing), for `server_tokens`.
async fn reject(
    stream: &mut ClientStream,
    status: u16,
    s: &ringfront_config::LocationSettings,
) -> Ended {
    let mut out = Vec::with_capacity(512);
    let answer = respond::Answer {
        decor: crate::response_headers::Decor::new(s, None),
        keep_alive: false,
        head_only: false,
        err_status: None,
        location: None,
        authenticate: &[],
        accel: None,
    };
    let (shown, body) = respond::error(&mut out, &answer, status);
    let sent = out.len() as u64;
    if write_all(stream, out, s.send_timeout).await.0.is_ok() {
        close_notify(stream, s.send_timeout).await;
    }
    Ended::Answered {
        status: shown,
        body,
        sent,
    }
}

/// A TLS connection closed after a response ends with close_notify, as nginx's
/// `SSL_shutdown` (clients see a clean end, not a truncation), within `send_timeout`.
async fn close_notify(stream: &mut ClientStream, limit: std::time::Duration) {
    if let crate::stream::Stream::Tls(t) = stream {
        let _ = crate::deadline::timeout(limit, t.close()).await;
    }
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
    // A whole head no longer than one buffer has no line longer than one (nearly all heads).
    if complete && head.head_len <= size {
        return None;
    }
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
    pub(crate) open: Open,
    pub(crate) stream: ClientStream,
    pub(crate) id: u64,
    pub(crate) requests: u64,
    /// When it was accepted (`clock::now_ms`), for `keepalive_time`.
    pub(crate) opened_ms: u64,
    /// Bytes of the next (pipelined) request already read; no allocation while idle.
    pub(crate) buf: Vec<u8>,
    pub(crate) idle: Rc<crate::idle::IdleSignal>,
    /// What the TLS handshake settled (`listen ... ssl`).
    pub(crate) tls: Option<Box<ringfront_tls::Info>>,
    /// The status every request on this connection gets instead of an answer: 497 (plain
    /// HTTP on a TLS port), 495/496 (`ssl_verify_client` not satisfied).
    pub(crate) refuse: Option<u16>,
    /// The client's address and the socket's own, read once at the accept; on a `listen
    /// unix:` they are `UNIX_CLIENT` and the listen's key (`ringfront_config::unix_addr`).
    pub(crate) peer: SocketAddr,
    pub(crate) local: SocketAddr,
    /// What the PROXY protocol header said (`listen ... proxy_protocol`).
    pub(crate) proxy_protocol: Option<Box<ringfront_http::ProxyHeader>>,
    /// The client watch the upstream's waits share (client_gone.rs).
    pub(crate) standing: crate::client_gone::Standing,
}

/// Counts the connection in the worker's open connections for as long as it is open.
pub(crate) struct Open(pub(crate) Rc<Worker>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.conn_closed();
    }
}

impl Conn {
    /// A freshly accepted connection from `peer` (the accept's address); its local address
    /// is `local` (the listener's own) or read from the socket for a wildcard listen.
    /// `None` when it is already gone (its address cannot be read).
    pub fn new(
        w: Rc<Worker>,
        stream: monoio::net::TcpStream,
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Option<Self> {
        let local = match local {
            Some(a) => a,
            None => stream.local_addr().ok()?,
        };
        Some(Self::open(w, stream.into(), [peer, local]))
    }

    /// A connection accepted on the `listen unix:` keyed `key`.
    pub fn new_unix(w: Rc<Worker>, stream: monoio::net::UnixStream, key: SocketAddr) -> Self {
        let addrs = [ringfront_config::unix_addr::UNIX_CLIENT, key];
        Self::open(w, crate::stream::Stream::Unix(stream), addrs)
    }

    fn open(w: Rc<Worker>, stream: ClientStream, [peer, local]: [SocketAddr; 2]) -> Self {
        let id = w
            .shared
            .next_conn
            .0
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        w.conn_opened();
        Conn {
            open: Open(w),
            stream,
            id,
            requests: 0,
            opened_ms: crate::clock::now_ms(),
            buf: Vec::new(),
            idle: Rc::default(),
            tls: None,
            refuse: None,
            peer,
            local,
            proxy_protocol: None,
            standing: Default::default(),
        }
    }

    /// The socket's own address (a unix listen's key).
    pub(crate) fn local(&self) -> SocketAddr {
        self.local
    }
}

/// The room a head's read makes in the connection's buffer: a small request body (a POST's
/// form or JSON, up to about 8 KiB with its head) comes in the same read as its head, not in
/// one more (nginx's default `client_body_buffer_size` is 8k here). A GET's read takes only
/// what came, whatever the room.
const HEAD_READ: usize = crate::worker::BUF_SIZE;

/// Serves one client connection until it closes.
#[allow(clippy::manual_async_fn)] // an `async fn` would store its argument twice
pub fn serve(mut conn: Conn) -> impl std::future::Future<Output = ()> {
    async move {
        let (tls, pp) = {
            let snap = conn.open.0.snapshot();
            let l = snap.listen_of(conn.local());
            (
                l.is_some_and(|l| l.ssl),
                l.is_some_and(|l| l.proxy_protocol),
            )
        };
        if pp {
            conn = match Box::pin(crate::proxy_protocol::read(conn, tls)).await {
                Some(c) => c,
                None => return,
            };
        }
        if tls {
            conn = match Box::pin(crate::handshake::run(conn)).await {
                Some(c) => c,
                None => return,
            };
            if conn.tls.as_ref().is_some_and(|i| i.ocsp_pending()) {
                Box::pin(crate::handshake::ocsp(&mut conn)).await;
            }
        }
        // A new connection has no history: past the threshold its first wait is lean.
        let mut quick = false;
        let w = conn.open.0.clone();
        loop {
            // In a block of its own per request (future_blocks.rs): taken when a request's
            // first bytes are in (the first request's at once, read within
            // client_header_timeout from accept), given back when it is answered, so a
            // request works in the memory the last one left (warm in cache), whichever
            // connection it serves, and an idle connection holds none.
            conn = match w.request_blocks.pinned(|| request(conn)).await {
                Some(c) => c,
                None => return,
            };
            // Pipelined bytes of the next request are in already.
            if !conn.buf.is_empty() {
                continue;
            }
            let since = crate::clock::now_ms();
            if !idle_wait(&mut conn, quick).await {
                return;
            }
            quick = idle_policy::quick(since, crate::clock::now_ms());
        }
    }
}

/// Waits for an idle keepalive connection's next bytes (idle_policy.rs): fat, with a read
/// posted into a buffer, or lean, for readability only. False: close the connection.
async fn idle_wait(conn: &mut Conn, quick: bool) -> bool {
    let w = &conn.open.0;
    if idle_policy::waits_fat(w.conns(), w.fat_idle.get(), quick) {
        let buf = w.take_buf();
        // In a block: the posted read's future is larger than all the rest of the
        // connection's, which an idle connection waiting lean holds.
        let read = w
            .wait_blocks
            .pinned(|| first_bytes(w, &mut conn.stream, buf, &conn.idle));
        return match read.await {
            Some(buf) => {
                conn.buf = buf;
                true
            }
            None => false,
        };
    }
    conn.stream.release_buffers();
    let ready = IdleWait {
        readable: conn.stream.readable(),
        sig: &conn.idle,
    }
    .await;
    w.idle.leave(&conn.idle);
    ready
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

/// Reads, answers and logs one request. The connection back when it may serve another,
/// registered as idle unless pipelined bytes of the next request are in.
async fn request(conn: Conn) -> Option<Conn> {
    let Conn {
        open,
        mut stream,
        id: conn_id,
        mut requests,
        opened_ms,
        buf,
        idle,
        tls,
        refuse,
        peer,
        local,
        proxy_protocol,
        standing,
    } = conn;
    let w = &open.0;
    let client = peer;
    let mut buf = if buf.capacity() == 0 {
        w.take_buf()
    } else {
        buf
    };
    let mut head = RequestHead::new();
    let snap = w.snapshot();
    let candidates = snap.servers_for(local);
    let default = candidates.first().and_then(|&i| snap.servers.get(i))?;
    let base = &default.fallback.settings;
    head.names = ringfront_http::HeaderNames {
        underscores: base.underscores_in_headers,
        ignore_invalid: base.ignore_invalid_headers,
        max_lines: base.max_headers.min(ringfront_http::MAX_HEADERS),
    };
    let mut busy = None;
    // The first request's head shares one timer from the accept with the PROXY protocol
    // header and the TLS handshake before it, as nginx's.
    let spent = match requests {
        0 => crate::clock::now_ms().saturating_sub(opened_ms),
        _ => 0,
    };
    let read = read_head(
        w,
        &mut stream,
        &mut buf,
        &mut head,
        &default.fallback.settings,
        &mut busy,
        std::time::Duration::from_millis(spent),
    )
    .await;
    let head_len = match read {
        Ok(n) => n,
        Err(ended) => {
            // nginx logs a request whose head came in part or was refused.
            let c = crate::head_refusal::Conn {
                client,
                local,
                conn_id,
                requests: requests + 1,
                opened_ms,
                tls: tls.as_deref(),
                proxy_protocol: proxy_protocol.as_deref(),
                candidates,
                line_limit: default.fallback.settings.large_client_header_buffers.1,
            };
            let before = w.logged.get();
            crate::head_refusal::log(w, &snap, &c, &buf, ended);
            w.logs_written_since(before).await;
            return None;
        }
    };
    // Lines handed to the log thread before this request: a close waits for any after.
    let logged = w.logged.get();
    let mut _busy = busy.unwrap_or_else(|| Busy::new(w));
    _busy.head_read();
    requests += 1;
    let start = crate::clock::now();
    let mut rw = match snap.rewriting {
        true => RwState::new(&snap.variables),
        false => RwState::default(),
    };
    // A URI nginx's parser refuses is its 400 from the listen's default server (nginx
    // checks it before reading the fields that choose one), logged with an empty `$uri`.
    let bad_uri = own_uri(&buf, &head, &mut rw, base.merge_slashes).is_err();
    if bad_uri {
        rw.uri = Some(String::new());
        rw.args = Some(Vec::new());
        rw.refused_uri = true;
    }
    // A `Host` nginx refuses: its 400 from the default server too (unless an absolute
    // target chose one), the URI kept.
    let bad_host = head.invalid_host.is_some();
    let mut chosen = match bad_uri || (bad_host && head.host.is_none()) {
        true => (default, None),
        false => crate::dispatch::server(&snap, candidates, &buf, &head)?,
    };
    let sni = tls.as_deref().and_then(|t| t.server_name.as_deref());
    let misdirected = match bad_uri || bad_host {
        true => None,
        false => crate::misdirected::check(&snap, candidates, sni, (&buf, &head), chosen.0),
    };
    if let Some(negotiated) = misdirected {
        chosen = (negotiated, None);
    }
    let server_name = chosen.0.primary_name.as_str();
    let refusal = match misdirected {
        Some(_) => Some(421),
        // nginx reads the fields (and refuses a bad `Host`) before its 497, 495, 496.
        None if bad_host => Some(400),
        None => refuse.or(bad_uri.then_some(400)),
    };
    let pp = proxy_protocol.as_deref();
    // realip's post-read run, with the server level's settings.
    let mut real = crate::realip::Client::new(client);
    if refusal.is_none() {
        real.apply(chosen.0.fallback.settings.real_ip.as_ref(), &buf, &head, pp);
    }
    let request_id = match snap.uses.request_id {
        true => crate::request_id::draw(),
        false => [0; 16],
    };
    let path = request_path(&buf, &head);
    let pre = Req {
        buf: &buf,
        head: &head,
        client: real.addr,
        local,
        server_name,
        conn_id,
        conn_requests: requests,
        start,
        path: &path,
        keep_alive: false,
        head_only: false,
        pipelined: &[],
        tls: tls.as_deref(),
        rw: None,
        body: &[],
        opened_ms,
        stats: &w.shared.workers,
        length: head_len as u64,
        tries: &[],
        id: request_id,
        body_len: 0,
        proxy_protocol: pp,
        realip_from: real.from,
        client_conn: Some(&stream),
        standing: None,
        body_file: &[],
        body_stream: None,
        spooled: None,
    };
    let (loc, outcome) = if refusal.is_some() {
        // nginx refuses (497, 495, 496) before any location: the server's settings and
        // error pages answer.
        (&chosen.0.fallback, Outcome::Continue)
    } else if let Some(loc) = crate::rewrite::without_phases(&snap, chosen.0, &pre, &rw) {
        (loc, Outcome::Continue)
    } else {
        crate::dispatch::location(w, &snap, chosen, &pre, &mut rw).await
    };
    let s = &loc.settings;
    // realip's preaccess run, with the location's settings (once a location was reached).
    if let Some(decided) = rw.preaccess_client {
        real = decided;
    } else if refusal.is_none() && matches!(outcome, Outcome::Continue) {
        real.apply(s.real_ip.as_ref(), &buf, &head, pp);
    }
    let client = real.addr;
    let age_ms = crate::clock::now_ms().saturating_sub(opened_ms);
    let keep_alive = head.keep_alive
        && refusal.is_none()
        && !w.stopping()
        && keeps_alive(s, requests, age_ms)
        && !crate::user_agent::keepalive_disabled(
            s.keepalive_disable,
            head.method.get(&buf),
            || head.header(&buf, "user-agent"),
        );
    let log = |level, msg: std::fmt::Arguments<'_>, buf: &[u8]| {
        let ctx = log_context(buf, &head, client, server_name, None);
        w.log(&snap, level, conn_id, format_args!("{msg}{ctx}"));
    };
    for h in &head.ignored {
        let end = if h.value.is_empty() {
            h.name.end
        } else {
            h.value.end
        };
        let line = String::from_utf8_lossy(
            buf.get(h.name.start as usize..end as usize)
                .unwrap_or_default(),
        );
        log(
            LogLevel::Info,
            format_args!(
                "client sent invalid header line: \"{line}\" while reading client request headers"
            ),
            &buf,
        );
    }
    if misdirected.is_some() {
        log(
            LogLevel::Info,
            format_args!(
                "client attempted to request the server name different from the one that was negotiated"
            ),
            &buf,
        );
    }
    if let Some(h) = head.headers.last().filter(|_| bad_host) {
        // nginx names the refused value as the request's `host` (not an absolute target's).
        let mut shown = head.clone();
        shown.host = None;
        let ctx = log_context(&buf, &shown, client, server_name, None);
        let host = String::from_utf8_lossy(h.value.get(&buf));
        let msg = format_args!(
            "client sent invalid host header while reading client request headers{ctx}, host: \"{host}\""
        );
        w.log(&snap, LogLevel::Info, conn_id, msg);
    }
    // The access phase ran with the rewrite phases (rewrite.rs); its refusal is a status.
    let denied = rw.access_refused;
    // A denied request's body is not wanted (nor its 100-continue); without framing it has
    // none. An unread body would be taken for the next request: answer (with the
    // location's error_page) and close.
    let mut unread = denied && !matches!(head.framing, ringfront_http::BodyFraming::None);
    let mut refused = refusal;
    let gone = matches!(outcome, Outcome::Status(crate::limits::CLIENT_GONE));
    // `proxy_request_buffering off`: the body goes to the upstream as it comes.
    let streams = refused.is_none()
        && matches!(outcome, Outcome::Continue)
        && streams_body(s, &head, buf.get(head_len..).unwrap_or_default());
    let mut streamed = None;
    // nginx's temporary file: `client_body_in_file_only` reads the body into it; a body
    // longer than `client_body_buffer_size` only gets a name (nginx unlinks that file).
    let read = refused.is_none() && !gone && !streams;
    let proxied = read && matches!(outcome, Outcome::Continue);
    let before = crate::body_file::Placement::of(s, &head, proxied, &[], head_len);
    let mut file = None;
    let (body, consumed) = if refused.is_some() || gone {
        (Vec::new(), head_len)
    } else if streams {
        if head.expect_continue && body::continue_100(&mut stream, s).await.is_err() {
            return None;
        }
        let preread = buf.get(head_len..).unwrap_or_default();
        streamed = Some(RefCell::new(Some(BodyStream::new(&head, preread))));
        (Vec::new(), buf.len())
    } else if before.spools() {
        let keep = before.keep();
        match spool_body(&mut stream, &mut buf, &head, head_len, s, keep, &log).await {
            Ok(f) => file = Some(f),
            Err(status) => {
                unread = true;
                refused = Some(status?);
            }
        }
        (Vec::new(), head_len)
    } else if matches!(head.framing, ringfront_http::BodyFraming::None) && !head.expect_continue {
        // No body: what `read_body` would say, without its future.
        (Vec::new(), head_len)
    } else {
        let (read, b) = read_body(&mut stream, buf, &head, head_len, s, &log).await;
        buf = b;
        match read {
            Ok(read) => read,
            Err(status) => {
                unread = true;
                refused = Some(status?);
                (Vec::new(), head_len)
            }
        }
    };
    let placed = crate::body_file::Placement::of(s, &head, read, &body, head_len);
    if placed.name_only() {
        file = Some(crate::body_file::unlinked(&s.request_body.temp_path));
    }
    if let Some(f) = &file {
        let name = String::from_utf8_lossy(f.name());
        let msg = format_args!("a client request body is buffered to a temporary file {name}");
        log(placed.log_level(), msg, &buf);
    }
    let keep_alive = keep_alive && !unread;
    let path = match bad_uri {
        true => Cow::Borrowed(""),
        false => request_path(&buf, &head),
    };
    // `$request_body` reads a copy: the body itself goes to the upstream.
    let kept_body = match snap.uses.request_body && !placed.in_file {
        true => body.clone(),
        false => Vec::new(),
    };
    // The request as it came, for an error_page's internal redirect.
    let own = Req {
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
        head_only: head.is_head(&buf),
        pipelined: buf.get(consumed..).unwrap_or_default(),
        tls: tls.as_deref(),
        rw: None,
        body: &kept_body,
        opened_ms,
        stats: &w.shared.workers,
        // A sized body was read into its own buffer; a chunked one where the head was.
        length: match head.framing {
            ringfront_http::BodyFraming::Length(n) if refused.is_none() => head_len as u64 + n,
            _ => head.invalid_host.unwrap_or(consumed) as u64,
        },
        tries: &[],
        id: request_id,
        body_len: body.len() as u64,
        proxy_protocol: pp,
        realip_from: real.from,
        client_conn: None,
        standing: Some(&standing),
        body_file: file.as_ref().map_or(&[][..], |f| f.name()),
        body_stream: streamed.as_ref(),
        spooled: file.as_ref().filter(|f| f.file().is_some()),
    };
    let req = Req {
        path: rw.uri.as_deref().unwrap_or(&path),
        // An index or try_files redirect changes the URI without rewrite directives, and a
        // decoded URI is not the target's.
        rw: (snap.rewriting
            || rw.internal
            || rw.uri.is_some()
            || rw.limit_req != 0
            || rw.limit_conn != 0
            || !rw.error_authenticate.is_empty())
        .then_some(&rw),
        ..own
    };
    let cx = Cx {
        w,
        snap: &snap,
        loc,
        req: &req,
    };
    let (reply, back) = crate::dispatch::answer(&cx, refused, outcome, body, stream).await;
    let (reply, back) = match reply.redirect {
        None => {
            crate::access_log::write(&cx, &reply);
            (reply, back)
        }
        Some(_) => {
            let base = crate::error_redirect::Base {
                req: own,
                server: chosen.0,
            };
            // Boxed: the request's future stays the size it is without error pages.
            let follow = || crate::error_redirect::follow(w, &snap, base, &mut rw, reply, back);
            crate::boxed::pinned(follow).await
        }
    };
    if let Some(f) = file {
        f.finish().await;
    }
    let mut stream = back?;
    // A streamed body not read to its end (the upstream failed first) leaves bytes that
    // are no request: close, as nginx (`r->reading_body`: no keepalive).
    let unfinished = streamed
        .as_ref()
        .is_some_and(|c| !c.borrow().as_ref().is_some_and(BodyStream::done));
    if !reply.reusable || unfinished {
        let pending = unread || unfinished || buf.len() > consumed;
        let linger = crate::linger::wanted(s, pending);
        if !linger {
            _busy.answered();
        }
        w.logs_written_since(logged).await;
        w.give_buf(buf);
        close_notify(&mut stream, s.send_timeout).await;
        if linger {
            crate::linger::linger(&mut stream, s).await;
        }
        return None;
    }
    if let Some(st) = streamed.and_then(RefCell::into_inner) {
        buf.extend_from_slice(st.leftover());
    }
    let buf = next_request(w, buf, consumed, &idle, s.keepalive_timeout);
    drop(_busy);
    Some(Conn {
        open,
        stream,
        id: conn_id,
        requests,
        opened_ms,
        buf,
        idle,
        tls,
        refuse,
        peer,
        local,
        proxy_protocol,
        standing,
    })
}

/// Reads the body into its temporary file (`client_body_in_file_only`); else the status
/// to answer (400, 413 logged as a buffered read's; 500 when the file fails, logged
/// critical), or `None` to close the connection.
async fn spool_body(
    stream: &mut ClientStream,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    head_len: usize,
    s: &ringfront_config::LocationSettings,
    keep: bool,
    log: &dyn Fn(LogLevel, std::fmt::Arguments<'_>, &[u8]),
) -> Result<crate::body_file::BodyFile, Option<u16>> {
    use crate::body_spool::SpoolError;
    match crate::body_spool::spool(stream, buf, head, head_len, s, keep).await {
        Ok(f) => Ok(f),
        Err(SpoolError::Body(BodyError::Closed)) => Err(None),
        Err(SpoolError::Body(BodyError::Reject(status))) => {
            if status == 413 {
                let size = match head.framing {
                    ringfront_http::BodyFraming::Length(n) => format!(": {n} bytes"),
                    _ => String::new(),
                };
                let msg = format_args!("client intended to send too large body{size}");
                log(LogLevel::Error, msg, buf);
            }
            Err(Some(status))
        }
        Err(SpoolError::File(e)) => {
            let dir = s.request_body.temp_path.dir.display();
            let msg = format_args!("open() of a temporary file in \"{dir}\" failed ({e})");
            log(LogLevel::Crit, msg, buf);
            Err(Some(500))
        }
    }
}

/// Whether the body is streamed (`proxy_request_buffering off`, nginx's rules); a sized
/// body over `client_max_body_size` is refused first, as buffered.
fn streams_body(
    s: &ringfront_config::LocationSettings,
    head: &RequestHead,
    preread: &[u8],
) -> bool {
    let too_large =
        matches!(head.framing, ringfront_http::BodyFraming::Length(n) if body::too_large(s, n));
    !too_large && BodyStream::wanted(s, head, preread)
}

/// The request's body and how many bytes of `buf` the request used; else nginx's 400/413
/// to answer (413 logged), or `None` to close the connection.
async fn read_body(
    stream: &mut ClientStream,
    buf: Vec<u8>,
    head: &RequestHead,
    head_len: usize,
    s: &ringfront_config::LocationSettings,
    log: &dyn Fn(LogLevel, std::fmt::Arguments<'_>, &[u8]),
) -> (Result<(Vec<u8>, usize), Option<u16>>, Vec<u8>) {
    let (read, buf) = body::read(stream, buf, head, head_len, s).await;
    let status = match read {
        Ok(ok) => return (Ok(ok), buf),
        Err(BodyError::Closed) => return (Err(None), buf),
        Err(BodyError::Reject(status)) => status,
    };
    if status == 413 {
        let size = match head.framing {
            ringfront_http::BodyFraming::Length(n) => format!(": {n} bytes"),
            _ => String::new(),
        };
        log(
            LogLevel::Error,
            format_args!("client intended to send too large body{size}"),
            &buf,
        );
    }
    (Err(Some(status)), buf)
}

/// After a response: bytes of a pipelined request stay with the connection; otherwise it
/// is idle from now on (registered for `keepalive_timeout`) and its buffer goes back to the
/// worker.
fn next_request(
    w: &Worker,
    mut buf: Vec<u8>,
    consumed: usize,
    idle: &Rc<crate::idle::IdleSignal>,
    keepalive_timeout: std::time::Duration,
) -> Vec<u8> {
    buf.drain(..consumed.min(buf.len()));
    if !buf.is_empty() {
        return buf;
    }
    w.give_buf(buf);
    w.idle.push(idle, keepalive_timeout);
    Vec::new()
}

/// Waits on an idle keepalive connection with a read posted into the buffer (a fat wait,
/// idle_policy.rs), no extra readiness step; the reaper's close signal ends it at
/// keepalive_timeout. `None`: close the connection.
async fn first_bytes(
    w: &Worker,
    stream: &mut ClientStream,
    buf: Vec<u8>,
    idle: &crate::idle::IdleSignal,
) -> Option<Vec<u8>> {
    let _fat = idle_policy::FatWait::enter(&w.fat_idle);
    let (len, cap) = (buf.len(), buf.capacity());
    let mut read = std::pin::pin!(stream.read(buf.slice_mut(len..cap)));
    let r = std::future::poll_fn(|cx| match read.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending => idle.poll_closed(cx).map(|()| None),
    })
    .await;
    w.idle.leave(idle);
    let (r, slice) = r?;
    if !matches!(r, Ok(n) if n > 0) {
        // The client closed (or failed) while idle: the buffer serves another connection.
        w.give_buf(slice.into_inner());
        return None;
    }
    Some(slice.into_inner())
}

/// Reads until a whole head is in, within client_header_timeout (counted from accept on a
/// fresh connection: `spent` is gone already; from the first byte on a keepalive one, as
/// nginx does), answering
/// nginx's 400/414/494 to a bad or oversized head. The head's length, or how it ended
/// (the connection is to close). The request counts as busy from its first byte.
async fn read_head<'w>(
    w: &'w Worker,
    stream: &mut ClientStream,
    buf: &mut Vec<u8>,
    head: &mut RequestHead,
    base: &ringfront_config::LocationSettings,
    busy: &mut Option<Busy<'w>>,
    spent: std::time::Duration,
) -> Result<usize, Ended> {
    let (hdr_bufs, hdr_size) = base.large_client_header_buffers;
    let max_head = hdr_bufs.saturating_mul(hdr_size).max(1024);
    let deadline = crate::clock::now() + base.client_header_timeout.saturating_sub(spent);
    loop {
        if !buf.is_empty() {
            if busy.is_none() {
                *busy = Some(Busy::new(w));
            }
            let parsed = head.parse(buf);
            let complete = matches!(parsed, Ok(Some(_)));
            let status = match (head_limits(buf, head, complete, hdr_size, max_head), parsed) {
                (Some(status), _) => status,
                (None, Ok(Some(n))) => return Ok(n),
                (None, Ok(None)) => 0,
                (None, Err(e)) => e.status(),
            };
            if status != 0 {
                return Err(reject(stream, status, base).await);
            }
        } else if w.stopping() {
            return Err(Ended::Quiet);
        }
        let limit = deadline.saturating_duration_since(crate::clock::now());
        if limit.is_zero() {
            return Err(Ended::TimedOut);
        }
        // A timed-out read loses its buffer: the part of a head that came is kept for the
        // 408's log line (a copy only when a head comes in pieces).
        let part = (!buf.is_empty()).then(|| buf.clone());
        let (r, b) = read_more(stream, std::mem::take(buf), HEAD_READ, limit).await;
        *buf = b;
        match r {
            Ok(n) if n > 0 => {}
            Err(IoFail::Timeout) => {
                *buf = part.unwrap_or_default();
                return Err(Ended::TimedOut);
            }
            Ok(_) => return Err(Ended::Closed),
            Err(IoFail::Io(_)) => return Err(Ended::Failed),
        }
    }
}

/// nginx's `ngx_http_update_location_config`: a connection is kept after this response only
/// with a `keepalive_timeout`, below `keepalive_requests` and within `keepalive_time` of its
/// accept (`age_ms`).
fn keeps_alive(s: &ringfront_config::LocationSettings, requests: u64, age_ms: u64) -> bool {
    !s.keepalive_timeout.is_zero()
        && requests < s.keepalive_requests
        && u128::from(age_ms) <= s.keepalive_time.as_millis()
}

/// Reads the request's URI as nginx does (`ringfront_http::uri`: decoded, `.`/`..`/`//`
/// resolved, the fragment cut); when that is not the target's own path, `rw` holds it
/// (and the arguments without a fragment). Err: nginx's 400. A decoded URI that is not
/// UTF-8 is left undecoded.
pub(crate) fn own_uri(
    buf: &[u8],
    head: &RequestHead,
    rw: &mut RwState,
    merge_slashes: bool,
) -> Result<(), ()> {
    let target = path_part(head.target.get(buf));
    let uri = ringfront_http::uri::parse_with(target, merge_slashes).map_err(|_| ())?;
    if let (Cow::Owned(path), false) = (uri.path, rw.uri.is_some()) {
        if let Ok(path) = String::from_utf8(path) {
            rw.uri = Some(path);
            rw.quoted = uri.quoted;
        }
        // `http://h?a`: nginx's empty path; the request line upstream is built anew.
        let empty_path = target.first() != Some(&b'/');
        rw.rebuild |= empty_path;
        if target.contains(&b'#') || empty_path {
            rw.args = Some(uri.args.unwrap_or_default().to_vec());
        }
    }
    Ok(())
}

/// The target from its path on: itself in origin form; after the authority in absolute
/// form (empty, or starting with `?`, when it has no path).
fn path_part(target: &[u8]) -> &[u8] {
    if target.first() == Some(&b'/') {
        return target;
    }
    let after = target
        .windows(3)
        .position(|w| w == b"://")
        .map_or(target.len(), |i| i + 3);
    let rest = &target[after..];
    let start = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?'))
        .unwrap_or(rest.len());
    &rest[start..]
}

/// The path of the request target, without arguments (borrowed when it is valid UTF-8).
pub(crate) fn request_path<'a>(buf: &'a [u8], head: &RequestHead) -> Cow<'a, str> {
    let p = vars::origin_path(head.target.get(buf));
    let end = p.iter().position(|&b| b == b'?').unwrap_or(p.len());
    let p = &p[..end];
    // `from_utf8` first: its ASCII fast path is cheaper than the lossy scan.
    std::str::from_utf8(p).map_or_else(|_| String::from_utf8_lossy(p), Cow::Borrowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_of<A, F: std::future::Future>(_: impl Fn(A) -> F) -> (usize, usize) {
        (std::mem::size_of::<F>(), std::mem::align_of::<F>())
    }

    #[test]
    fn keepalive_limits_with_injected_age() {
        let s = ringfront_config::LocationSettings {
            keepalive_requests: 3,
            keepalive_time: std::time::Duration::from_secs(2),
            ..Default::default()
        };
        assert!(keeps_alive(&s, 1, 0));
        assert!(keeps_alive(&s, 2, 2_000));
        assert!(!keeps_alive(&s, 2, 2_001), "past keepalive_time");
        assert!(!keeps_alive(&s, 3, 0), "keepalive_requests reached");
        let off = ringfront_config::LocationSettings {
            keepalive_timeout: std::time::Duration::ZERO,
            ..s
        };
        assert!(!keeps_alive(&off, 1, 0), "keepalive_timeout 0");
        let d = ringfront_config::LocationSettings::default();
        assert_eq!(d.keepalive_time, std::time::Duration::from_secs(3600));
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
        let (rd, _) =
            future_of::<&'static mut ClientStream, _>(|s: &'static mut ClientStream| s.readable());
        let (req, _) = future_of::<Conn, _>(request);
        eprintln!("readable future: {rd}, request future: {req}");
        assert!(size <= 512, "{size}");
        assert!(align <= 16, "{align}");
    }
}
