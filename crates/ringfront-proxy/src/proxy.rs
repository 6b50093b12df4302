//! The upstream driver: performs what the exchange machine (`ringfront_upstream::exchange`)
//! asks — connect, send, read the head, relay, answer — with monoio, and reports back what
//! happened. Every decision (moving on, counting failures, pooling) is the machine's; this
//! file only does I/O, logging and the health checker's notifications.

use std::rc::Rc;
use std::sync::atomic::Ordering;

use crate::stream::ClientStream;
use ringfront_config::LogLevel;
use ringfront_upstream::budget::{Load, RetryBudget, Slot};
use ringfront_upstream::exchange::{
    Action, Cause, Event, Exchange, Failure, Freed, Head, NextUpstream, Peers, Phase, Policy,
    SslFault, TryPeer, TryRecord,
};
use ringfront_upstream::{Board, RequestKey, Topology, UpstreamId, CHECKING, UP};

use crate::body_file::BodyFile;
use crate::body_stream::{BodyStream, StreamError};
use crate::client_gone::{self, Gone, Watch};
use crate::clock::mono;
use crate::health;
use crate::relay::{Relay, Relayed};
use crate::req::{Cx, Reply, Req};
use crate::snapshot::GroupConf;
use crate::upstream::{self, Conn, Target};
use crate::upstream_request::{self, Request};
use crate::worker::PeerState;
use crate::{vars, vars_response};

fn next_upstream(n: &ringfront_config::NextUpstream) -> NextUpstream {
    NextUpstream {
        error: n.error,
        timeout: n.timeout,
        invalid_header: n.invalid_header,
        http_500: n.http_500,
        http_502: n.http_502,
        http_503: n.http_503,
        http_504: n.http_504,
        http_403: n.http_403,
        http_404: n.http_404,
        http_429: n.http_429,
        non_idempotent: n.non_idempotent,
        off: n.off,
    }
}

fn policy(cx: &Cx<'_>, g: &GroupConf) -> Policy {
    let s = cx.settings();
    let mut p = Policy::new(cx.req.head.method.get(cx.req.buf));
    p.next = next_upstream(&s.proxy_next_upstream);
    p.tries = s.proxy_next_upstream_tries;
    p.timeout = s.proxy_next_upstream_timeout;
    p.upgrade = cx.req.head.upgrade;
    p.keepalive = g.keepalive;
    p.keepalive_requests = g.keepalive_requests;
    p.http10 = s.proxy_http_version == "1.0";
    p.least_time_last_byte = g.least_time_last_byte;
    p
}

/// What the driver holds between steps of one exchange.
struct Io {
    request: Request,
    /// The peer of the current try (the machine has freed it by the time it says Finish).
    peer: Option<usize>,
    conn: Option<Conn>,
    head: Option<ringfront_http::ResponseHead>,
    rbuf: Vec<u8>,
    out: Vec<u8>,
    client: Option<ClientStream>,
    relayed: Option<Reply>,
    /// `proxy_pass https://`: this request's handshake settings (evaluated once).
    tls: Option<crate::upstream_tls::Handshake>,
    /// The relayed response's head length and body bytes read, for the try's record.
    head_len: u64,
    body_read: u64,
    /// Whether the waits for the upstream watch the client (client_gone.rs), and the
    /// close one of them saw.
    watch: Watch,
    gone: Option<Gone>,
    /// `proxy_request_buffering off`: the body, streamed after the head.
    body: Option<BodyStream>,
    /// The client failed while its body streamed: the request ends with this.
    client_fail: Option<StreamError>,
}

/// The group a request is proxied to and the state it is chosen in: one of the snapshot's,
/// or one made for this request alone (a `proxy_pass` with variables naming an address,
/// nginx's `ngx_http_upstream_create_round_robin_peer`), which pools nothing and tells the
/// health checker nothing.
pub struct Group<'a> {
    pub id: UpstreamId,
    pub topo: &'a Topology,
    pub board: &'a Board,
    pub conf: &'a GroupConf,
    /// The peer state this request started with: it is freed and pooled into the same one
    /// even if a reload publishes another meanwhile.
    pub state: Rc<PeerState>,
    /// `$proxy_host`, the `Host` sent.
    pub proxy_host: &'a str,
    /// `proxy_pass https://` (with variables: the evaluated scheme).
    pub tls: bool,
    /// Made for this request (not in the snapshot).
    pub adhoc: bool,
    /// The evaluated URI part of a `proxy_pass` with variables: the whole URI sent.
    pub uri: Option<&'a [u8]>,
    /// The socket path of each unix-domain peer, by peer id.
    pub unix: &'a [Option<std::path::PathBuf>],
}

/// The snapshot's group `up`, for `run_in` (called straight from the dispatch: one future
/// less around every proxied request). `None` when the snapshot has no such group:
/// answer `no_group`.
pub fn group<'a>(cx: &Cx<'a>, up: UpstreamId) -> Option<Group<'a>> {
    let conf = cx.snap.groups.get(up)?;
    Some(Group {
        id: up,
        topo: &cx.snap.topology,
        board: &cx.snap.board,
        conf,
        state: cx.w.peer_state(cx.snap),
        proxy_host: &conf.proxy_host,
        tls: cx.loc.upstream_tls.is_some(),
        adhoc: false,
        uri: None,
        unix: &cx.snap.unix_paths,
    })
}

/// The answer when the location's group is missing from the snapshot: 502.
pub async fn no_group(
    cx: &Cx<'_>,
    client: ClientStream,
    out: Vec<u8>,
) -> (Reply, Option<ClientStream>) {
    respond_error(cx, 502, client, out, Vec::new()).await
}

/// Proxies one request to `g`.
pub async fn run_in(
    cx: &Cx<'_>,
    g: &Group<'_>,
    body: Vec<u8>,
    client: ClientStream,
    out: Vec<u8>,
) -> (Reply, Option<ClientStream>) {
    let (up, group, state) = (g.id, g.conf, &g.state);
    let mut streamed = cx.req.body_stream.and_then(|c| c.borrow_mut().take());
    let spooled = from_file(cx);
    let body = match streamed.is_none() && spooled.is_none() {
        // A body read whole (or none): nothing to wait for.
        true => body,
        false => match first_body(cx, streamed.as_mut(), body).await {
            Ok(body) => body,
            Err(status) => {
                return Box::pin(respond_error(cx, status, client, out, Vec::new())).await
            }
        },
    };
    let file_len = spooled.map(BodyFile::len);
    let outbound =
        upstream_request::build(cx, g.proxy_host, body, g.uri, streamed.as_ref(), file_len);
    let mut hash_key = Vec::new();
    if let Some(t) = &group.hash_key {
        vars::render(
            &mut hash_key,
            t,
            &cx.req.vars(g.proxy_host, None, Some(cx.snap)),
            false,
        );
    }
    let key = RequestKey {
        client: Some(cx.req.client.ip()),
        hash: &hash_key,
    };
    let peers = Peers {
        topo: g.topo,
        board: g.board,
        worker: &state.peers,
    };
    let mut pol = policy(cx, group);
    if streamed.is_some() {
        // nginx: once sent, an unbuffered request goes to no other peer
        // (`u->request_sent && r->request_body_no_buffering`).
        pol.idempotent = false;
        pol.next.non_idempotent = false;
    }
    let tls = match cx.loc.upstream_tls.as_ref().filter(|_| g.tls) {
        Some(t) => match t.request_handshake(&cx.req.vars(g.proxy_host, None, Some(cx.snap))) {
            Ok(h) => Some(h),
            // Boxed: every connection's task is as large as its largest state, and this
            // rare path must not make a larger one.
            Err(e) => return Box::pin(cert_failed(cx, e, client, out)).await,
        },
        None => None,
    };
    let mut ex = Exchange::new(peers, up, pol, key);
    if let (Some(b), false, Some(load)) = (
        cx.settings().proxy_next_upstream_budget,
        g.adhoc,
        cx.snap.loads.get(up),
    ) {
        let budget = RetryBudget {
            percent: b.percent,
            min: b.min,
        };
        ex.budget(Slot::new(load, budget));
    }
    if let (Some(st), Some(u)) = (&group.sticky, g.topo.upstreams.get(up)) {
        let v = cx.req.vars(g.proxy_host, None, Some(cx.snap));
        let (peer, backup) = st.pinned(u, &v, crate::clock::now_ms());
        ex.pin(peer, backup);
    }
    let mut io = Io {
        tls,
        request: Request::new(outbound),
        peer: None,
        conn: None,
        head: None,
        rbuf: cx.w.take_buf(),
        out,
        client: Some(client),
        relayed: None,
        head_len: 0,
        body_read: 0,
        watch: Watch::new(cx.settings().proxy_ignore_client_abort),
        gone: None,
        body: streamed,
        client_fail: None,
    };
    let mut step = ex.start(mono());
    loop {
        if let Some(f) = step.freed {
            report(cx, g, &io, f);
        }
        let ev = match step.action {
            Action::Connect(_) | Action::Send | Action::ReadHead => {
                wait(cx, g, step.action, &mut io).await
            }
            Action::Relay => match intercepted(cx, &io) {
                // The cold paths are boxed (here and below): inline, each would make every
                // request's future as large as its own (accel: 10.9 KB of 12.7), and that
                // future is allocated once per client connection (built in place:
                // boxed.rs). The intercept's is built in its box too (an error response
                // per request is common); the others are copied into theirs, rarely.
                Some(status) => {
                    return crate::boxed::pinned(|| intercept(cx, g, status, io, ex)).await
                }
                None if accel_redirects(cx, &io) => return Box::pin(accel(cx, g, io, ex)).await,
                None if g.adhoc => relay(cx, g, &mut io, &by_addr(g, ex.tries())).await,
                None => relay(cx, g, &mut io, ex.tries()).await,
            },
            Action::NoLive => {
                let name = g.topo.upstreams.get(up).map_or("", |u| u.name.as_str());
                cx.log(
                    LogLevel::Error,
                    format_args!("no live upstreams while connecting to upstream"),
                    Some(&cx.upstream_url(name, &io.request.0.uri())),
                );
                return Box::pin(finish_error(cx, g, 502, io, ex)).await;
            }
            Action::Respond(status) => return Box::pin(finish_error(cx, g, status, io, ex)).await,
            Action::Finish { pool } => return finish(cx, g, pool, &mut io, &mut ex),
            Action::Abandon(phase) => return abandon(cx, g, phase, io, ex),
        };
        if let Some(e) = io.client_fail.take() {
            if let Some(f) = ex.abandon_streaming(mono()).freed {
                report(cx, g, &io, f);
            }
            return Box::pin(client_failed(cx, g, e, io, ex)).await;
        }
        count_bytes(&mut ex, &step.action, &ev, &io, file_len.unwrap_or(0));
        step = ex.on(ev, mono());
        if let Some(load) = ex.take_denied() {
            budget_spent(cx, g, load);
        }
    }
}

/// How often the error log says that a group's retry budget refused retries.
const BUDGET_LOG_INTERVAL_SECS: u64 = 5;

/// One error-log line per interval (for all workers together) when the budget refused a
/// retry: the failure went to the client as it was.
fn budget_spent(cx: &Cx<'_>, g: &Group<'_>, load: &Load) {
    if !load.should_log(crate::clock::now_secs(), BUDGET_LOG_INTERVAL_SECS) {
        return;
    }
    let name = g.topo.upstreams.get(g.id).map_or("", |u| u.name.as_str());
    cx.log(
        LogLevel::Error,
        format_args!(
            "retry budget of upstream \"{name}\" spent ({} retries in flight for {} requests), \
             failures are returned without trying the next upstream",
            load.retries(),
            load.active()
        ),
        None,
    );
}

/// `$upstream_bytes_sent`, `$upstream_bytes_received` and `$upstream_response_length` of
/// the current try, as its steps succeed.
fn count_bytes(ex: &mut Exchange<'_>, action: &Action, ev: &Event, io: &Io, file_len: u64) {
    let Some(t) = ex.current_try() else {
        return;
    };
    match (action, ev) {
        (Action::Send, Event::Sent) => {
            // After the request's own bytes: the rest of a file, a streamed body's rest.
            let file = file_len.saturating_sub(io.request.0.body_len() as u64);
            let streamed = io.body.as_ref().map_or(0, BodyStream::sent);
            t.bytes_sent = io.request.0.len() as u64 + file + streamed;
        }
        (Action::ReadHead, Event::Head(_)) => t.bytes_received = io.rbuf.len() as u64,
        (Action::Relay, _) => {
            t.response_length = io.body_read;
            t.bytes_received = io.head_len + io.body_read;
        }
        _ => {}
    }
}

/// A step that waits for the upstream, raced against the client's close (nginx's
/// `ngx_http_upstream_check_broken_connection`, unless `proxy_ignore_client_abort on`).
async fn wait(cx: &Cx<'_>, g: &Group<'_>, action: Action, io: &mut Io) -> Event {
    // A body streamed from the client (`proxy_request_buffering off`) is read from its
    // connection while sending: that send is not watched (nginx reads the body then).
    if matches!(action, Action::Send) && io.body.as_ref().is_some_and(|b| !b.done()) {
        return send(cx, io).await;
    }
    let client = io.client.take();
    let mut watch = io.watch;
    let done = {
        // Pinned here and lent: the step's future (a connect's, with a TLS handshake) is not
        // copied into the watch's.
        let step = std::pin::pin!(async {
            match action {
                Action::Connect(peer) => connect(cx, g, peer, io).await,
                Action::Send => send(cx, io).await,
                _ => read_head(cx, io).await,
            }
        });
        client_gone::unless_gone_standing(client.as_ref(), cx.req.standing, &mut watch, step).await
    };
    io.client = client;
    io.watch = watch;
    done.unwrap_or_else(|gone| {
        io.gone = Some(gone);
        Event::ClientGone
    })
}

/// The client went away while the upstream was waited for: the upstream connection is
/// closed (never pooled) and the request ends without an answer, logged as nginx's 499.
fn abandon(
    cx: &Cx<'_>,
    g: &Group<'_>,
    phase: Phase,
    io: Io,
    mut ex: Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    let errno = io
        .gone
        .and_then(|gone| gone.errno)
        .map(|e| format!(" {}", ringfront_upstream::exchange::Errno(e)))
        .unwrap_or_default();
    let name = io
        .peer
        .and_then(|p| g.topo.peer(p))
        .map_or("", |p| p.name.as_str());
    // nginx's log action stays "sending request to upstream" until the head's first bytes
    // are read (what the wait for a head that has not come is).
    let doing = match phase {
        Phase::ReadHead => Phase::SendRequest.doing(),
        p => p.doing(),
    };
    cx.log(
        LogLevel::Info,
        format_args!(
            "epoll_wait() reported that client prematurely closed connection, so upstream \
             connection is closed too{errno} while {doing}"
        ),
        Some(&cx.upstream_url(name, &io.request.0.uri())),
    );
    let tries = tries_of(g, &mut ex);
    cx.w.give_buf(io.rbuf);
    cx.w.give_buf(io.out);
    let mut reply = Reply::new(499, 0, 0, false);
    reply.tries = tries;
    (reply, None)
}

async fn connect(cx: &Cx<'_>, g: &Group<'_>, peer: usize, io: &mut Io) -> Event {
    io.conn = None;
    io.peer = Some(peer);
    let Some(spec) = g.topo.peer(peer) else {
        return Event::Failed(Failure::new(Phase::Connect, Cause::Closed));
    };
    let target = Target {
        addr: spec.addr,
        peer,
        connect_timeout: cx.settings().proxy_connect_timeout,
        tls: io.tls.as_ref(),
        local: crate::bind::local(cx),
        transparent: crate::bind::transparent(cx),
        unix: g.unix.get(peer).and_then(Option::as_deref),
        so_keepalive: cx.settings().proxy_socket_keepalive,
    };
    match upstream::connect(&g.state.pool, &target).await {
        Ok(c) => {
            let ev = Event::Connected {
                reused: c.reused,
                requests: c.requests,
            };
            io.conn = Some(c);
            ev
        }
        Err(f) => Event::Failed(f),
    }
}

async fn send(cx: &Cx<'_>, io: &mut Io) -> Event {
    let Some(conn) = io.conn.as_mut() else {
        return Event::Sent;
    };
    let limit = cx.settings().proxy_send_timeout;
    if let Err(f) = upstream::send(conn, &io.request, limit).await {
        io.conn = None;
        return Event::Failed(f);
    }
    if let Some(f) = from_file(cx) {
        let from = io.request.0.body_len() as u64;
        if let Err(f) = crate::body_spool::send_file(f, from, &mut conn.stream, limit).await {
            io.conn = None;
            return Event::Failed(f);
        }
    }
    let (Some(body), Some(client)) = (io.body.as_mut(), io.client.as_mut()) else {
        return Event::Sent;
    };
    match body.pump(client, &mut conn.stream, cx.settings()).await {
        Ok(()) => Event::Sent,
        Err(StreamError::Upstream(f)) => {
            io.conn = None;
            Event::Failed(f)
        }
        Err(e) => {
            io.conn = None;
            io.client_fail = Some(e);
            Event::Sent
        }
    }
}

/// The body bytes sent with the head in one write (as nginx's request chain: an upstream
/// then reads head and body start together): a buffered body whole, a streamed one's
/// bytes that came with the head, a file's first part; else the status to answer.
async fn first_body(
    cx: &Cx<'_>,
    streamed: Option<&mut BodyStream>,
    body: Vec<u8>,
) -> Result<Vec<u8>, u16> {
    if let Some(st) = streamed {
        return st.first(cx.settings()).map_err(|e| match e {
            StreamError::Client(status, _) => status,
            _ => 400,
        });
    }
    match from_file(cx) {
        Some(f) => crate::body_spool::first_part(f).await.map_err(|_| 500),
        None => Ok(body),
    }
}

/// `client_body_in_file_only`: the body is sent from its file, unless `proxy_set_body`
/// replaces it or `proxy_pass_request_body off` drops it.
fn from_file<'a>(cx: &Cx<'a>) -> Option<&'a BodyFile> {
    let s = cx.settings();
    let sent = s.proxy_set_body.is_none() && s.proxy_pass_request_body;
    cx.req.spooled.filter(|_| sent)
}

/// The client failed while its body was streaming (nginx finalises the request with the
/// client's status, the upstream connection closed): a bad chunk or a too large body is
/// answered (400, 413); a timeout (408) and a closed client (400) get nothing, the status
/// is logged and the connection closed.
async fn client_failed(
    cx: &Cx<'_>,
    g: &Group<'_>,
    e: StreamError,
    io: Io,
    mut ex: Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    let status = match e {
        StreamError::Client(408, _) => 408,
        StreamError::Client(status, msg) => {
            if let Some(msg) = msg {
                cx.log(LogLevel::Error, format_args!("{msg}"), None);
            }
            let (mut reply, client) = finish_error(cx, g, status, io, ex).await;
            reply.reusable = false;
            return (reply, client);
        }
        _ => {
            let msg = "client prematurely closed connection";
            cx.log(LogLevel::Info, format_args!("{msg}"), None);
            400
        }
    };
    cx.w.give_buf(io.rbuf);
    cx.w.give_buf(io.out);
    let mut reply = Reply::new(status, 0, 0, false);
    reply.tries = tries_of(g, &mut ex);
    (reply, None)
}

async fn read_head(cx: &Cx<'_>, io: &mut Io) -> Event {
    let Some(conn) = io.conn.as_mut() else {
        return Event::Sent;
    };
    let rbuf = std::mem::take(&mut io.rbuf);
    let (r, b) = upstream::read_head(conn, rbuf, cx.settings().proxy_read_timeout).await;
    io.rbuf = b;
    match r {
        Ok(head) => {
            let ev = Event::Head(Head {
                status: head.status,
                close: head.connection_close,
                until_close: matches!(
                    head.framing(cx.req.head_only),
                    ringfront_http::BodyFraming::UntilClose
                ),
            });
            io.head = Some(head);
            ev
        }
        Err(f) => {
            io.conn = None;
            Event::Failed(f)
        }
    }
}

/// `sticky learn`: the session of this response (its head) now uses `peer`.
fn sticky_learn(cx: &Cx<'_>, g: &Group<'_>, peer: Option<usize>, upstream_head: &[u8]) {
    let (Some(st), Some(peer), Some(up)) =
        (g.conf.sticky.as_ref(), peer, g.topo.upstreams.get(g.id))
    else {
        return;
    };
    let mut v = cx.req.vars(g.proxy_host, None, Some(cx.snap));
    v.upstream_head = upstream_head;
    st.learn(up, peer, &v, crate::clock::now_ms());
}

/// `sticky`: the `Set-Cookie` naming the peer (`sticky cookie`); `sticky learn header`
/// learns here, when the head arrives.
fn sticky_response(
    cx: &Cx<'_>,
    g: &Group<'_>,
    peer: Option<usize>,
    upstream_head: &[u8],
) -> Option<Vec<u8>> {
    let st = g.conf.sticky.as_ref()?;
    if st.learns_at_head() {
        sticky_learn(cx, g, peer, upstream_head);
    }
    let (peer, up) = (peer?, g.topo.upstreams.get(g.id)?);
    let mut v = cx.req.vars(g.proxy_host, None, Some(cx.snap));
    v.upstream_head = upstream_head;
    let c = st.cookie()?;
    let sid = st.id_of(up, peer)?;
    Some(crate::sticky::set_cookie(
        c,
        sid,
        &v,
        crate::clock::unix_ms() / 1000,
    ))
}

async fn relay(cx: &Cx<'_>, g: &Group<'_>, io: &mut Io, tries: &[TryRecord]) -> Event {
    let topo = g.topo;
    let (Some(conn), Some(head), Some(client)) = (io.conn.take(), io.head.take(), io.client.take())
    else {
        return Event::Relayed {
            complete: false,
            clean: false,
        };
    };
    let name = io
        .peer
        .and_then(|p| topo.peer(p))
        .map_or("", |p| p.name.as_str());
    let request = io.request.clone();
    let upstream_head = io.rbuf.get(..head.head_len).unwrap_or_default();
    let set_cookie = sticky_response(cx, g, io.peer, upstream_head);
    // `sticky learn` without `header`: when the request ends, as nginx's `peer.free`.
    let learn_later = g
        .conf
        .sticky
        .as_ref()
        .filter(|s| s.learns_at_end())
        .map(|_| upstream_head.to_vec());
    let relay = Relay {
        cx,
        peer: name,
        uri: request.0.uri_bytes(),
        head: &head,
        tries,
        set_cookie: set_cookie.as_deref(),
    };
    io.head_len = head.head_len as u64;
    let rbuf = std::mem::take(&mut io.rbuf);
    let out = std::mem::take(&mut io.out);
    let (requests, reused, tag, born) = (conn.requests, conn.reused, conn.tag, conn.born);
    let Relayed {
        event,
        reply,
        client,
        upstream,
        bufs: [rbuf, out],
        body_read,
    } = relay.run(rbuf, conn.stream, client, out).await;
    if let Some(h) = learn_later {
        sticky_learn(cx, g, io.peer, &h);
    }
    io.body_read = body_read;
    io.rbuf = rbuf;
    io.out = out;
    io.client = client;
    io.conn = upstream.map(|stream| Conn {
        stream,
        requests,
        reused,
        tag,
        born,
    });
    let sent = cx
        .req
        .rw
        .map_or(reply.status, |r| r.error.sent(reply.status));
    let mut reply = reply;
    reply.status = sent;
    io.relayed = Some(reply);
    event
}

/// Logs a try that ended in failure and tells the health checker what `free` saw.
fn report(cx: &Cx<'_>, g: &Group<'_>, io: &Io, f: Freed) {
    if let Some(failure) = f.failure {
        let name = g.topo.peer(f.peer).map_or("", |p| p.name.as_str());
        let url = cx.upstream_url(name, &io.request.0.uri());
        match (failure.cause, &io.tls) {
            // nginx names the name the certificate was checked against.
            (Cause::Ssl(SslFault::NameMismatch), Some(hs)) => cx.log(
                LogLevel::Error,
                format_args!(
                    "upstream SSL certificate does not match \"{}\" while {}",
                    hs.name,
                    failure.phase.doing()
                ),
                Some(&url),
            ),
            _ => cx.log(LogLevel::Error, format_args!("{failure}"), Some(&url)),
        }
        if f.outcome.disabled {
            cx.log(
                LogLevel::Warn,
                format_args!(
                    "upstream server temporarily disabled while {}",
                    failure.phase.doing()
                ),
                Some(&url),
            );
        }
    }
    if !g.adhoc {
        notify_checker(cx, g.id, f);
    }
}

/// Tells the health checker what `free` saw: a peer that reached `max_fails` (in
/// `passive_health confirm` groups this worker first takes it out of every worker's
/// selection, `UP` -> `CHECKING`, and asks for the probe) or one that came back.
fn notify_checker(cx: &Cx<'_>, up: UpstreamId, f: Freed) {
    if !f.outcome.disabled && !f.outcome.recovered {
        return;
    }
    let Some(h) = cx.snap.board.arc(f.peer) else {
        return;
    };
    let confirm = cx.snap.groups.get(up).is_some_and(|g| g.confirm);
    let ev = if f.outcome.recovered {
        health::Event::Recovered(h.clone())
    } else if !confirm {
        health::Event::Disabled(h.clone())
    } else if h
        .state
        .compare_exchange(UP, CHECKING, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        health::Event::Suspect(h.clone())
    } else {
        return;
    };
    let _ = cx.w.shared.health_tx.send(ev);
}

/// The response was relayed: pool the upstream connection when the machine says so, give
/// the buffers back.
fn finish(
    cx: &Cx<'_>,
    g: &Group<'_>,
    pool: bool,
    io: &mut Io,
    ex: &mut Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    // By reference: the exchange and its I/O stay where they are in the request's future
    // (moving them here copied ~1 KiB per request).
    let tries = tries_of(g, ex);
    if let (true, false, Some(conn), Some(peer)) = (pool, g.adhoc, io.conn.take(), io.peer) {
        keep(cx, g.conf, &g.state, peer, conn);
    }
    cx.w.give_buf(std::mem::take(&mut io.rbuf));
    cx.w.give_buf(std::mem::take(&mut io.out));
    let mut reply = io
        .relayed
        .take()
        .unwrap_or_else(|| Reply::new(502, 0, 0, false));
    reply.tries = tries;
    if io.body.as_ref().is_some_and(|b| !b.done()) {
        reply.reusable = false;
    }
    // Bytes read past a streamed chunked body (a pipelined request) go back to the session.
    if let (Some(cell), Some(b)) = (cx.req.body_stream, io.body.take()) {
        *cell.borrow_mut() = Some(b);
    }
    (reply, io.client.take())
}

/// Pools a connection the exchange says may carry another request: into the peer state
/// the request started with, or — when a reload replaced it meanwhile and the peer
/// survived it — into the current one, so the connection is not lost with the old state.
fn keep(cx: &Cx<'_>, g: &GroupConf, state: &PeerState, peer: usize, conn: Conn) {
    let w = cx.w;
    if w.current_generation() == state.generation {
        let group = cx.snap.topology.group_of(peer).unwrap_or(0);
        upstream::pool(&state.pool, group, peer, g, conn);
    } else {
        let current = w.current_state();
        let snap = w.snapshot();
        // Only across one reload, into the state built for the snapshot that made it.
        let moved = snap
            .carried
            .as_ref()
            .filter(|c| c.generation == state.generation && snap.generation == current.generation)
            .and_then(|c| c.from.iter().position(|&old| old == Some(peer)));
        let Some(new) = moved else {
            return; // the peer is gone, or the state moved on further: close it
        };
        let Some((group, gc)) = snap
            .topology
            .group_of(new)
            .and_then(|i| Some((i, snap.groups.get(i)?)))
        else {
            return;
        };
        upstream::pool(&current.pool, group, new, gc, conn);
    }
    if w.sweep_parked.get() {
        w.sweep.raise();
    }
}

/// The tries for the log; a group made for this request has peers the snapshot does not
/// know, so its tries name their addresses.
fn tries_of(g: &Group<'_>, ex: &mut Exchange<'_>) -> Vec<TryRecord> {
    match g.adhoc {
        false => ex.take_tries(),
        true => by_addr(g, ex.tries()),
    }
}

/// The tries of a request's own group by address; a unix-domain peer's (and a try that
/// found no peer) are left out, so `$upstream_addr` and the like stay empty for them.
fn by_addr(g: &Group<'_>, tries: &[TryRecord]) -> Vec<TryRecord> {
    let addr = |t: &TryRecord| match t.peer {
        TryPeer::Peer(id) => g
            .topo
            .peer(id)
            .filter(|p| !p.name.starts_with("unix:"))
            .map(|p| p.addr),
        _ => None,
    };
    tries
        .iter()
        .filter_map(|t| {
            let a = addr(t)?;
            Some(TryRecord {
                peer: TryPeer::Addr(a),
                ..*t
            })
        })
        .collect()
}

/// `proxy_intercept_errors on`: an upstream status of 300 or more with an `error_page` in
/// the location is answered as nginx's own error of that status (the status, or `None`).
fn intercepted(cx: &Cx<'_>, io: &Io) -> Option<u16> {
    let s = cx.settings();
    if !s.errors.proxy_intercept_errors {
        return None;
    }
    let status = io.head.as_ref()?.status;
    let paged = s.error_pages.iter().any(|p| p.codes.contains(&status));
    (status >= 300 && paged).then_some(status)
}

/// Ends the try without relaying (the upstream connection is closed, its body unread, as
/// nginx's `ngx_http_upstream_intercept_errors`) and answers the status locally.
async fn intercept(
    cx: &Cx<'_>,
    g: &Group<'_>,
    status: u16,
    mut io: Io,
    mut ex: Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    io.conn = None;
    // nginx 1.22 passes the (first) `WWW-Authenticate` of a 401 on.
    let authenticate = match io.head.take() {
        Some(h) if status == 401 => h.header(&io.rbuf, "www-authenticate").map(<[u8]>::to_vec),
        _ => None,
    };
    let ended = Event::Relayed {
        complete: false,
        clean: false,
    };
    if let Some(f) = ex.on(ended, mono()).freed {
        report(cx, g, &io, f);
    }
    let (mut reply, client) = finish_error(cx, g, status, io, ex).await;
    if let Some(r) = reply.redirect.as_mut() {
        r.authenticate = authenticate;
    }
    (reply, client)
}

fn accel_redirects(cx: &Cx<'_>, io: &Io) -> bool {
    let Some(head) = io.head.as_ref() else {
        return false;
    };
    crate::accel_redirect::value(cx, head, &io.rbuf).is_some()
}

/// `X-Accel-Redirect`: ends the try without relaying (the upstream connection closed, as
/// nginx finalizes it) and leaves the internal redirect to the caller (the reply's
/// `redirect`), or answers 404 for a value nginx finds unsafe.
async fn accel(
    cx: &Cx<'_>,
    g: &Group<'_>,
    mut io: Io,
    mut ex: Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    io.conn = None;
    let Some(head) = io.head.take() else {
        return finish_error(cx, g, 502, io, ex).await;
    };
    let ended = Event::Relayed {
        complete: false,
        clean: false,
    };
    if let Some(f) = ex.on(ended, mono()).freed {
        report(cx, g, &io, f);
    }
    let value = crate::accel_redirect::value(cx, &head, &io.rbuf).unwrap_or_default();
    // nginx copies the kept fields before it checks the value.
    let carried = crate::accel_redirect::carried(cx, &head, &io.rbuf);
    let rate = crate::accel_redirect::limit_rate(cx, &head, &io.rbuf);
    let goal = match crate::accel_redirect::parse(value) {
        Ok(goal) => goal,
        Err(shown) => {
            let shown = String::from_utf8_lossy(&shown);
            let url = io
                .peer
                .and_then(|p| g.topo.peer(p))
                .map(|p| cx.upstream_url(&p.name, &io.request.0.uri()));
            cx.log(
                LogLevel::Error,
                format_args!(
                    "unsafe URI \"{shown}\" was detected while reading response header from upstream"
                ),
                url.as_deref(),
            );
            return unsafe_value(cx, g, carried, rate, io, ex).await;
        }
    };
    let tries = tries_of(g, &mut ex);
    cx.w.give_buf(io.rbuf);
    cx.w.give_buf(io.out);
    // The body read stays the request's (nginx keeps `r->request_body`).
    let body = io.request.0.client_body().to_vec();
    let mut reply = Reply::new(head.status, 0, 0, cx.req.keep_alive);
    reply.redirect = Some(crate::error_redirect::Redirect::accel(
        goal, carried, rate, body,
    ));
    reply.tries = tries;
    (reply, io.client)
}

/// An unsafe `X-Accel-Redirect`: nginx's 404, answered with the fields the response left
/// (its error page, if any, redirected with them and the rate).
async fn unsafe_value(
    cx: &Cx<'_>,
    g: &Group<'_>,
    carried: crate::accel_redirect::Carried,
    rate: Option<u64>,
    io: Io,
    ex: Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    let fresh;
    let rw = match cx.req.rw {
        Some(rw) => rw,
        None => {
            fresh = crate::rewrite_state::RwState::new(&cx.snap.variables);
            &fresh
        }
    };
    let mut left = rw.with_accel(carried.clone());
    left.limit_rate = rate.or(left.limit_rate);
    let req = Req {
        rw: Some(&left),
        ..*cx.req
    };
    let with = Cx { req: &req, ..*cx };
    let head = carried.upstream_head.clone();
    let (mut reply, client) = finish_error(&with, g, 404, io, ex).await;
    match reply.redirect.as_mut() {
        Some(r) => r.carry(carried, rate),
        // `$upstream_http_*` in the log.
        None => reply.upstream_head = head,
    }
    (reply, client)
}

/// nginx's `ngx_http_upstream_ssl_certificate` failing: the error log and a 500.
async fn cert_failed(
    cx: &Cx<'_>,
    e: ringfront_tls::TlsError,
    client: ClientStream,
    out: Vec<u8>,
) -> (Reply, Option<ClientStream>) {
    cx.log(LogLevel::Error, format_args!("{e}"), None);
    respond_error(cx, 500, client, out, Vec::new()).await
}

async fn finish_error(
    cx: &Cx<'_>,
    g: &Group<'_>,
    status: u16,
    io: Io,
    mut ex: Exchange<'_>,
) -> (Reply, Option<ClientStream>) {
    let tries = tries_of(g, &mut ex);
    cx.w.give_buf(io.rbuf);
    let Some(client) = io.client else {
        return (Reply::new(status, 0, 0, false), None);
    };
    respond_error(cx, status, client, io.out, tries).await
}

async fn respond_error(
    cx: &Cx<'_>,
    status: u16,
    mut client: ClientStream,
    mut out: Vec<u8>,
    tries: Vec<TryRecord>,
) -> (Reply, Option<ClientStream>) {
    // The error page's `add_header`s see the tries (`$upstream_addr`), as nginx's.
    let req = Req {
        tries: &tries,
        ..*cx.req
    };
    let with_tries = Cx { req: &req, ..*cx };
    let mut reply = crate::local::error(&mut client, &mut out, &with_tries, status).await;
    if cx.snap.uses.response_heads {
        reply.sent_head = vars_response::head_of(&out).to_vec();
    }
    cx.w.give_buf(out);
    reply.tries = tries;
    (reply, Some(client))
}
