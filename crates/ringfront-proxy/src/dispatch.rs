//! From a parsed head to an answer: the server by `Host`, nginx's rewrite phases and the
//! location (see [`crate::rewrite`]), the access phase (allow/deny), then the content: a
//! `return` or redirect, a status page, the upstream, or a static file.

use ringfront_http::RequestHead;

use crate::paced::write_paced;
use crate::req::{Cx, Reply, Req};
use crate::rewrite::Outcome;
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, ServerRt, Snapshot};
use crate::stream::ClientStream;
use crate::worker::Worker;
use crate::{local, vars};

/// The server (by `Host`) of a request, and the index of the `server_name` regex that
/// chose it.
pub(crate) fn server<'s>(
    snap: &'s Snapshot,
    candidates: &[usize],
    buf: &[u8],
    head: &RequestHead,
) -> Option<(&'s ServerRt, Option<usize>)> {
    // Before the Host is looked at (route::server_by asks the same first).
    if let Some(s) = crate::route::lone(snap, candidates) {
        return Some((s, None));
    }
    // Server names are stored lower-cased; copy the Host only when it is not.
    let host = vars::host(buf, head);
    let lowered;
    let host = if host.iter().any(u8::is_ascii_uppercase) {
        lowered = host.to_ascii_lowercase();
        &lowered[..]
    } else {
        host
    };
    crate::route::server_by(snap, candidates, host)
}

/// The location that answers (after the rewrite phases) and how. `req` is the request
/// before its body is read (`req.path`: its own URI); `rw` collects what the rewrite
/// directives change; `name_regex`: the `server_name` regex that chose the server, whose
/// captures come first.
pub(crate) async fn location<'s>(
    w: &Worker,
    snap: &Snapshot,
    (server, name_regex): (&'s ServerRt, Option<usize>),
    req: &Req<'_>,
    rw: &mut RwState,
) -> (&'s LocationRt, Outcome<'s>) {
    if let (true, Some(i)) = (snap.captures, name_regex) {
        let host = String::from_utf8_lossy(vars::host(req.buf, req.head)).to_ascii_lowercase();
        let re = server.name_regexes.get(i);
        let names = server.name_captures.get(i).map_or(&[][..], Vec::as_slice);
        if let Some(c) = re.and_then(|re| re.captures(&host)) {
            rw.set_captures(&c, &host, names);
        }
    }
    crate::rewrite::process(w, snap, server, req, rw).await
}

/// Writes an answer made here; the reply as `made` says, not reusable if the write failed.
async fn send(
    cx: &Cx<'_>,
    mut stream: ClientStream,
    out: Vec<u8>,
    made: Reply,
) -> (Reply, Option<ClientStream>) {
    let mut made = made;
    if cx.snap.uses.response_heads {
        made.sent_head = crate::vars_response::head_of(&out).to_vec();
    }
    let mut pacer = crate::paced::pacer(cx);
    let (r, o) = write_paced(&mut stream, out, cx.settings().send_timeout, pacer.as_mut()).await;
    cx.w.give_buf(o);
    made.reusable &= r.is_ok();
    (made, Some(stream))
}

/// Answers the request: a refusal (403, or a TLS one), what the rewrite phases decided
/// (`return`, a redirect, an error), the status page or API, the upstream, or a file.
pub(crate) async fn answer(
    cx: &Cx<'_>,
    refused: Option<u16>,
    outcome: Outcome<'_>,
    body: Vec<u8>,
    mut stream: ClientStream,
) -> (Reply, Option<ClientStream>) {
    let (w, s) = (cx.w, cx.settings());
    let mut out = w.take_buf();
    let local = match (refused, outcome) {
        (None, Outcome::Status(crate::limits::CLIENT_GONE)) => {
            // The client went away while the request waited: nothing to answer.
            w.give_buf(out);
            return (Reply::new(crate::limits::CLIENT_GONE, 0, 0, false), None);
        }
        (Some(status), _) | (None, Outcome::Status(status)) => status,
        (None, Outcome::Return(ret)) if ret.code == 444 => {
            // nginx's 444: close the connection without a response.
            w.give_buf(out);
            return (Reply::new(444, 0, 0, false), None);
        }
        (None, Outcome::Return(ret)) => {
            let made = local::ret(&mut out, cx, ret);
            return send(cx, stream, out, made).await;
        }
        (None, Outcome::Redirect { status, location }) => {
            let made = local::redirect(&mut out, cx, status, location);
            return send(cx, stream, out, made).await;
        }
        (None, Outcome::Continue) if s.check_status.is_some() || s.api || s.stub_status => {
            let made = match s.stub_status {
                true => local::stub_status(&mut out, cx),
                false => local::status(&mut out, cx, &body),
            };
            return send(cx, stream, out, made).await;
        }
        (None, Outcome::Continue) => match cx.loc.upstream {
            Some(up) => match crate::proxy::group(cx, up) {
                Some(g) => return crate::proxy::run_in(cx, &g, body, stream, out).await,
                None => return Box::pin(crate::proxy::no_group(cx, stream, out)).await,
            },
            None => match cx.loc.pass_vars() {
                // Boxed: the plain path's future does not grow by it.
                Some(url) => {
                    let run = || crate::pass_vars::run(cx, url, body, stream, out);
                    return crate::boxed::pinned(run).await;
                }
                None => return crate::static_file::serve(cx, stream, out).await,
            },
        },
    };
    let mut reply = local::error(&mut stream, &mut out, cx, local).await;
    if cx.snap.uses.response_heads {
        reply.sent_head = crate::vars_response::head_of(&out).to_vec();
    }
    w.give_buf(out);
    (reply, Some(stream))
}
