//! The upstream loop (`ngx_http_upstream` + `proxy_next_upstream`): select a peer, try it,
//! classify the outcome, report it to the balancer, move on while nginx would, then relay the
//! chosen response to the client (streamed, framing preserved) or tunnel an upgrade.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use monoio::net::TcpStream;
use ringfront_config::{LocationMatch, LogLevel, NextUpstream};
use ringfront_http::BodyFraming;

use ringfront_upstream::{
    free, select, Attempt, FailKind, FreeOutcome, PeerId, RequestKey, Selection, UpstreamId,
    CHECKING, UP,
};

use crate::clock::now_secs;
use crate::health;
use crate::respond;
use crate::session::{Reply, Req};
use crate::snapshot::{LocationRt, Snapshot};
use crate::upstream::{attempt, Failure, Ft, Params};
use crate::vars::{self, TryLog};
use crate::worker::{PeerState, Worker};

/// RFC 9110 9.2.2 methods nginx will not resend once sent (POST, LOCK, PATCH).
fn non_idempotent(method: &[u8]) -> bool {
    matches!(method, b"POST" | b"LOCK" | b"PATCH")
}

/// `proxy_next_upstream http_*` flags for a response status; `None` if not a next-upstream status.
fn status_listed(status: u16, nu: &NextUpstream) -> Option<bool> {
    Some(match status {
        500 => nu.http_500,
        502 => nu.http_502,
        503 => nu.http_503,
        504 => nu.http_504,
        403 => nu.http_403,
        404 => nu.http_404,
        429 => nu.http_429,
        _ => return None,
    })
}

/// The URI sent upstream: unchanged, or with the matched prefix replaced by proxy_pass's URI.
fn upstream_uri(loc: &LocationRt, req: &Req<'_>, out: &mut Vec<u8>) {
    let target = vars::origin_path(req.head.target.get(req.buf));
    let Some(uri) = loc
        .settings
        .proxy_pass
        .as_ref()
        .and_then(|p| p.uri.as_ref())
    else {
        out.extend_from_slice(target);
        return;
    };
    let args = target.iter().position(|&b| b == b'?').map(|i| &target[i..]);
    match &loc.matcher {
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

/// Builds the request head (and body) sent to every peer tried: the client's headers minus
/// hop-by-hop ones, `proxy_set_header` applied, the body framed by Content-Length.
fn build_request(
    loc: &LocationRt,
    req: &Req<'_>,
    proxy_host: &str,
    keepalive: bool,
    body: &[u8],
) -> (Vec<u8>, usize) {
    let s = &loc.settings;
    let mut out = Vec::with_capacity(req.head.head_len + 128 + body.len());
    out.extend_from_slice(req.head.method.get(req.buf));
    out.push(b' ');
    let uri_start = out.len();
    upstream_uri(loc, req, &mut out);
    let uri_len = out.len() - uri_start;
    let v11 = s.proxy_http_version != "1.0";
    out.extend_from_slice(if v11 {
        b" HTTP/1.1\r\n"
    } else {
        b" HTTP/1.0\r\n"
    });
    let v = req.vars(proxy_host, None);
    let set = &s.proxy_set_header;
    let overridden = |name: &[u8]| {
        set.iter()
            .any(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
    };
    if !overridden(b"host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(proxy_host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let upstream_keepalive = keepalive && v11;
    if !upstream_keepalive && !overridden(b"connection") {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    for (name, t) in set {
        let mark = out.len();
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        let vstart = out.len();
        vars::render(&mut out, t, &v, false);
        if out.len() == vstart {
            out.truncate(mark); // an empty value means "do not send"
        } else {
            out.extend_from_slice(b"\r\n");
        }
    }
    let conn_hdr = req.head.header(req.buf, "connection").unwrap_or(b"");
    for h in &req.head.headers {
        let name = h.name.get(req.buf);
        if ringfront_http::is_hop_by_hop(name)
            || name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"expect")
            || name.eq_ignore_ascii_case(b"host")
            || overridden(name)
            || ringfront_http::connection_lists(conn_hdr, name)
        {
            continue;
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value.get(req.buf));
        out.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || !matches!(req.head.framing, BodyFraming::None) {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    (out, uri_len)
}

/// Proxies one request to group `up`. Returns the reply and the client stream unless it
/// was consumed (upgrade tunnel) or must be dropped.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    w: &Rc<Worker>,
    snap: &Snapshot,
    loc: &LocationRt,
    up: UpstreamId,
    req: &Req<'_>,
    body: &[u8],
    client: TcpStream,
    mut out: Vec<u8>,
) -> (Reply, Option<TcpStream>) {
    let s = &loc.settings;
    let nu = &s.proxy_next_upstream;
    let Some(group) = snap.groups.get(up) else {
        out.clear();
        let (status, n) = respond::error(&mut out, Some(loc), 502, false, false);
        let _ = crate::io::write_all(&mut { client }, out, s.send_timeout).await;
        return (reply(status, n, 0, false, vec![]), None);
    };
    let keepalive = group.keepalive > 0;
    let (request, uri_len) = build_request(loc, req, &group.proxy_host, keepalive, body);
    let uri_start = req.head.method.len() + 1;
    let request = Rc::new(request);
    // For log lines only: borrowed from the request bytes, no copy on the request path.
    let uri_bytes = request
        .get(uri_start..uri_start + uri_len)
        .unwrap_or_default();
    let uri = String::from_utf8_lossy(uri_bytes);
    let state = w.peer_state(snap);
    let mut at = Attempt::new(&snap.topology, up, s.proxy_next_upstream_tries);
    let mut tries: Vec<TryLog> = Vec::with_capacity(1);
    let started = Instant::now();
    // Once sent, POST/LOCK/PATCH go to another peer only with `non_idempotent`.
    let resend_ok = !non_idempotent(req.head.method.get(req.buf)) || nu.non_idempotent;
    let head_only = req.head.is_head(req.buf);
    // 4 KiB, as nginx's proxy_buffer_size on x86-64: a response head fits; a longer one
    // grows the buffer, and the relay reads bodies 16 KiB at a time.
    let mut rbuf = w.take_buf();
    // The balancer's inputs: the client address (ip_hash) and the evaluated `hash` key.
    let mut hash_key = Vec::new();
    if let Some(t) = &group.hash_key {
        vars::render(&mut hash_key, t, &req.vars(&group.proxy_host, None), false);
    }
    let key = RequestKey {
        client: Some(req.client.ip()),
        hash: &hash_key,
    };
    loop {
        let sel = {
            let mut peers = state.peers.borrow_mut();
            select(
                &snap.topology,
                &mut peers,
                &snap.board,
                &mut at,
                &key,
                now_secs(),
            )
        };
        let id = match sel {
            Selection::Peer(id) => id,
            Selection::NoLive => {
                let name = &snap.topology.upstreams[up].name;
                w.log(
                    snap,
                    LogLevel::Error,
                    req.conn_id,
                    format_args!(
                        "no live upstreams while connecting to upstream{}",
                        req.log_context(Some(&format!("http://{name}{uri}")))
                    ),
                );
                tries.push(TryLog {
                    addr: name.clone(),
                    status: Some(502),
                    ..TryLog::default()
                });
                return finish_error(502, loc, req, client, out, tries, head_only).await;
            }
        };
        let Some(spec) = snap.topology.peer(id) else {
            return finish_error(502, loc, req, client, out, tries, head_only).await;
        };
        let params = Params {
            addr: spec.addr,
            peer: id,
            connect_timeout: s.proxy_connect_timeout,
            send_timeout: s.proxy_send_timeout,
            read_timeout: s.proxy_read_timeout,
        };
        let try_start = Instant::now();
        let (res, b) = attempt(&params, &state.pool, &request, rbuf).await;
        rbuf = b;
        // A 101 nobody asked for would leave the connection in an unknown protocol.
        let res = match res {
            Ok(got) if got.head.status == 101 && !req.head.upgrade => Err(Failure {
                ft: Ft::InvalidHeader,
                msg: "upstream sent unexpected 101 Switching Protocols while reading response header from upstream".into(),
                request_sent: true,
                cached: false,
                connect_time: Some(got.connect_time),
                refused: false,
            }),
            other => other,
        };
        let timed_out_overall = !s.proxy_next_upstream_timeout.is_zero()
            && started.elapsed() >= s.proxy_next_upstream_timeout;
        match res {
            Err(f) => {
                if let Some(h) = snap.board.get(id) {
                    h.note_failure(f.kind());
                }
                let outcome = end_try(w, snap, &state, &mut at, up, id, true, None);
                let upstream_url = format!("http://{}{}", spec.name, uri);
                w.log(
                    snap,
                    LogLevel::Error,
                    req.conn_id,
                    format_args!("{}{}", f.msg, req.log_context(Some(&upstream_url))),
                );
                if outcome.disabled {
                    w.log(
                        snap,
                        LogLevel::Warn,
                        req.conn_id,
                        format_args!(
                            "upstream server temporarily disabled while {}{}",
                            f.msg
                                .rsplit(" while ")
                                .next()
                                .unwrap_or("connecting to upstream"),
                            req.log_context(Some(&upstream_url))
                        ),
                    );
                }
                let status = if f.ft == Ft::Timeout { 504 } else { 502 };
                tries.push(TryLog {
                    addr: spec.name.clone(),
                    status: Some(status),
                    response_time: Some(try_start.elapsed()),
                    connect_time: f.connect_time,
                    header_time: None,
                });
                // nginx gives the try back when a reused keepalive connection fails with an
                // error (the peer may just have closed it): the request moves on to the
                // next peer without using up a try.
                if f.cached && f.ft == Ft::Error {
                    at.tries += 1;
                }
                let listed = !nu.off
                    && match f.ft {
                        Ft::Error => nu.error,
                        Ft::Timeout => nu.timeout,
                        Ft::InvalidHeader => nu.invalid_header,
                    };
                let blocked = f.request_sent && !resend_ok;
                if at.tries == 0 || !listed || blocked || timed_out_overall {
                    return finish_error(status, loc, req, client, out, tries, head_only).await;
                }
            }
            Ok(got) => {
                let status = got.head.status;
                let mut this_try = TryLog {
                    addr: spec.name.clone(),
                    status: Some(status),
                    response_time: None,
                    connect_time: Some(got.connect_time),
                    header_time: Some(got.header_time),
                };
                if let Some(true) = status_listed(status, nu) {
                    if !nu.off && at.tries > 1 && resend_ok && !timed_out_overall {
                        let failed = !matches!(status, 403 | 404);
                        let took = try_start.elapsed();
                        if let Some(h) = snap.board.get(id) {
                            h.note_response(status, micros(took));
                            if failed {
                                h.note_failure(if status == 429 {
                                    FailKind::Http429
                                } else {
                                    FailKind::Http5xx
                                });
                            }
                        }
                        end_try(w, snap, &state, &mut at, up, id, failed, None);
                        this_try.response_time = Some(took);
                        tries.push(this_try);
                        continue;
                    }
                }
                let header_time = got.header_time;
                tries.push(this_try);
                let relay = crate::relay::Relay {
                    w,
                    snap,
                    group: up,
                    peer: id,
                    peer_name: &spec.name,
                    uri: &uri,
                    req,
                    settings: s,
                    head_only,
                };
                let (mut r, back) = relay.run(got, rbuf, client, out).await;
                let last_byte = try_start.elapsed();
                // nginx frees the peer when the request is finalised, after the body: the
                // connection counts for max_conns/least_conn until then. Errors while relaying
                // the body are not failures of the peer.
                let response_time =
                    group
                        .least_time_last_byte
                        .map(|lb| if lb { last_byte } else { header_time });
                if let Some(h) = snap.board.get(id) {
                    h.note_response(status, micros(last_byte));
                }
                end_try(w, snap, &state, &mut at, up, id, false, response_time);
                if let Some(last) = tries.last_mut() {
                    last.response_time = Some(last_byte);
                }
                r.tries = tries;
                return (r, back);
            }
        }
    }
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Ends the current try: `free` (nginx's `peer.free`), then the checker hears what it saw.
#[allow(clippy::too_many_arguments)]
fn end_try(
    w: &Worker,
    snap: &Snapshot,
    state: &PeerState,
    at: &mut Attempt,
    up: UpstreamId,
    id: PeerId,
    failed: bool,
    response_time: Option<std::time::Duration>,
) -> FreeOutcome {
    let outcome = {
        let mut peers = state.peers.borrow_mut();
        free(
            &snap.topology,
            &mut peers,
            &snap.board,
            at,
            failed,
            response_time,
            now_secs(),
        )
    };
    report(w, snap, up, id, outcome);
    outcome
}

/// Tells the health checker what `free` saw: a peer that reached `max_fails` (in
/// `passive_health confirm` groups this worker first takes it out of every worker's
/// selection, `UP` -> `CHECKING`, and asks for the probe) or one that came back.
fn report(w: &Worker, snap: &Snapshot, up: UpstreamId, id: PeerId, outcome: FreeOutcome) {
    if !outcome.disabled && !outcome.recovered {
        return;
    }
    let Some(h) = snap.board.arc(id) else { return };
    let confirm = snap.groups.get(up).is_some_and(|g| g.confirm);
    let ev = if outcome.recovered {
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
    let _ = w.shared.health_tx.send(ev);
}

fn reply(status: u16, body: u64, bytes: u64, reusable: bool, tries: Vec<TryLog>) -> Reply {
    Reply {
        status,
        body_bytes_sent: body,
        bytes_sent: bytes,
        reusable,
        tries,
    }
}

async fn finish_error(
    status: u16,
    loc: &LocationRt,
    req: &Req<'_>,
    mut client: TcpStream,
    mut out: Vec<u8>,
    tries: Vec<TryLog>,
    head_only: bool,
) -> (Reply, Option<TcpStream>) {
    out.clear();
    let (sent, n) = respond::error(&mut out, Some(loc), status, req.keep_alive, head_only);
    let bytes = out.len() as u64;
    let (r, _) = crate::io::write_all(&mut client, out, loc.settings.send_timeout).await;
    let ok = r.is_ok();
    (
        reply(sent, n, bytes, req.keep_alive && ok, tries),
        Some(client),
    )
}
