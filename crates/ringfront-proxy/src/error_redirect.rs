//! nginx's `error_page` (`ngx_http_special_response_handler`, `ngx_http_send_error_page`):
//! a special response (an error status, a redirect of `return`, `rewrite` or a folder) with
//! an `error_page` for its status becomes a redirect to a URL, or an internal redirect to
//! a URI or a named location, answered instead. The redirected request is GET (HEAD stays
//! HEAD), searches the locations again (the server's rewrite directives first, not for a
//! named location), and its answer goes out with the error's status, `=CODE`'s, or (`=`)
//! its own. With `recursive_error_pages off` an error while answering it gets the built-in
//! page. Nothing here runs for a location without `error_page`.

use ringfront_config::{ErrorPage, LogLevel, TemplatePart};
use ringfront_upstream::exchange::{TryPeer, TryRecord};

use crate::accel_redirect::{Carried, Goal};
use crate::req::{Cx, Reply, Req};
use crate::rewrite::MAX_URI_CHANGES;
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, ServerRt, Snapshot};
use crate::stream::ClientStream;
use crate::worker::Worker;

/// An internal redirect an error page asked for: nothing was sent for the error.
#[derive(Debug)]
pub struct Redirect {
    target: Target,
    /// nginx's `r->err_status` for the redirected request (0: its own status); `None`
    /// (an `X-Accel-Redirect`): as it was.
    status: Option<u16>,
    /// The erring location's `recursive_error_pages`: off, no error page after this one
    /// (nginx's `r->error_page`).
    recursive: bool,
    /// The URL of the redirect that erred, which stays on the request.
    pub location: Option<Vec<u8>>,
    /// An intercepted upstream 401's `WWW-Authenticate`, sent with the answer.
    pub authenticate: Option<Vec<u8>>,
    /// An `X-Accel-Redirect`: what the upstream's response leaves on the request, and its
    /// `X-Accel-Limit-Rate`.
    accel: Option<(Box<Carried>, Option<u64>)>,
    /// The request body the redirected request goes on with: an `X-Accel-Redirect` keeps
    /// the one read (nginx keeps `r->request_body`); an error page none.
    body: Vec<u8>,
}

impl Redirect {
    /// The redirect an upstream's `X-Accel-Redirect` asks for (accel_redirect.rs).
    pub(crate) fn accel(
        goal: Goal,
        carried: Carried,
        limit_rate: Option<u64>,
        body: Vec<u8>,
    ) -> Box<Self> {
        let lossy = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        let target = match goal {
            Goal::Uri(uri, args) => Target::Uri(lossy(uri), args),
            Goal::Named(name) => Target::Named(lossy(name)),
        };
        Box::new(Redirect {
            target,
            status: None,
            recursive: true,
            location: None,
            authenticate: None,
            accel: Some((Box::new(carried), limit_rate)),
            body,
        })
    }

    /// An error page's redirect after an unsafe `X-Accel-Redirect`: it keeps what the
    /// response left.
    pub(crate) fn carry(&mut self, carried: Carried, limit_rate: Option<u64>) {
        self.accel = Some((Box::new(carried), limit_rate));
    }
}

#[derive(Debug)]
enum Target {
    /// A URI and its arguments.
    Uri(String, Vec<u8>),
    /// `@name`.
    Named(String),
}

/// What to answer a special response with.
pub enum Plan {
    /// The built-in page: no error page for the status, or none any more.
    Builtin,
    /// A redirect to a URL: the status (302, or the `=` code when it is a redirect one) and
    /// `Location`.
    Url { status: u16, location: Vec<u8> },
    /// An internal redirect, answered by [`follow`].
    Internal(Box<Redirect>),
}

/// The error page for a special response with `status` in `cx`'s location.
pub fn plan(cx: &Cx<'_>, status: u16) -> Plan {
    let pages = &cx.settings().error_pages;
    if pages.is_empty() {
        return Plan::Builtin;
    }
    let rw = cx.req.rw;
    let spent = rw.is_some_and(|r| r.error.done || r.uri_changes > MAX_URI_CHANGES);
    let page = pages.iter().find(|p| p.codes.contains(&status));
    match (spent, page) {
        (false, Some(page)) => to_page(cx, page, status),
        _ => Plan::Builtin,
    }
}

fn to_page(cx: &Cx<'_>, page: &ErrorPage, status: u16) -> Plan {
    // nginx's 494..=497 go out as 400 unless `=` says otherwise.
    let implied = matches!(status, 494..=497).then_some(400);
    let err_status = page.overwrite.or(implied).unwrap_or(status);
    let mut v = cx.req.vars("", None, Some(cx.snap));
    v.rw = cx.req.rw;
    let mut target = Vec::new();
    crate::vars::render(&mut target, &page.target, &v, false);
    let target = match target.first() {
        Some(b'/') => {
            let literal = page
                .target
                .parts
                .iter()
                .all(|p| matches!(p, TemplatePart::Literal(_)));
            let (uri, args) = match (&page.args, literal) {
                (Some(a), _) => (target, a.as_bytes().to_vec()),
                (None, true) => (target, Vec::new()),
                // `ngx_http_split_args`: a URI made with variables splits at its `?`.
                (None, false) => match target.iter().position(|&b| b == b'?') {
                    Some(i) => (target[..i].to_vec(), target[i + 1..].to_vec()),
                    None => (target, Vec::new()),
                },
            };
            Target::Uri(String::from_utf8_lossy(&uri).into_owned(), args)
        }
        Some(b'@') => Target::Named(String::from_utf8_lossy(&target).into_owned()),
        _ => {
            let status = match crate::respond::is_redirect(err_status) {
                true => err_status,
                false => 302,
            };
            return Plan::Url {
                status,
                location: target,
            };
        }
    };
    Plan::Internal(Box::new(Redirect {
        target,
        status: Some(err_status),
        recursive: cx.settings().errors.recursive_error_pages,
        location: None,
        authenticate: None,
        accel: None,
        body: Vec::new(),
    }))
}

/// A relayed head (`out` holds it alone, `len` bytes) after an `error_page` redirect: the
/// error's status, and the erring redirect's `Location` unless the upstream sent one. The
/// head's length after.
pub(crate) fn relayed_head(out: &mut Vec<u8>, cx: &Cx<'_>, len: usize) -> usize {
    let Some(rw) = cx.req.rw else {
        return len;
    };
    let len = restatus(out, cx.req, len);
    let Some(url) = &rw.error_location else {
        return len;
    };
    let has_own = out
        .split(|&b| b == b'\n')
        .any(|l| l.len() > 9 && l[..9].eq_ignore_ascii_case(b"location:"));
    if has_own || len < 2 {
        return len;
    }
    let url = crate::location_url::absolute(cx, url.clone());
    // Before the empty line that ends the head.
    let mut field = Vec::with_capacity(url.len() + 12);
    field.extend_from_slice(b"Location: ");
    field.extend_from_slice(&url);
    field.extend_from_slice(b"\r\n");
    let at = len - 2;
    out.splice(at..at, field.iter().copied());
    len + field.len()
}

/// After an `error_page` redirect a relayed head goes out with the error's status (nginx's
/// `r->err_status`, which clears the upstream's status line): `out` holds the head alone.
/// The head's length after.
fn restatus(out: &mut Vec<u8>, req: &Req<'_>, len: usize) -> usize {
    let Some(status) = req.rw.and_then(|r| r.error.status).filter(|&s| s != 0) else {
        return len;
    };
    let Some(end) = out.windows(2).position(|w| w == b"\r\n") else {
        return len;
    };
    let mut line = Vec::with_capacity(32);
    let _ = ringfront_http::HeadWriter::response(&mut line, status);
    line.truncate(line.len().saturating_sub(2));
    out.splice(..end, line.iter().copied());
    // `end` <= `len`: the status line is part of the head.
    len + line.len() - end
}

/// The request's own facts, for the redirected requests (`path` and `rw` are theirs).
pub(crate) struct Base<'a> {
    pub req: Req<'a>,
    pub server: &'a ServerRt,
}

/// Answers the internal redirects `reply` asks for, one after another, until an answer is
/// sent; logs it (the access log of the location that answered). Returns the last reply
/// and the client stream.
pub(crate) async fn follow(
    w: &Worker,
    snap: &Snapshot,
    base: Base<'_>,
    rw: &mut RwState,
    mut reply: Reply,
    mut stream: Option<ClientStream>,
) -> (Reply, Option<ClientStream>) {
    let mut keep_alive = base.req.keep_alive;
    while let Some(mut redirect) = reply.redirect.take() {
        let Some(client) = stream.take() else {
            return (reply, None);
        };
        // A 400, 500 or 501 ends the connection after the error page too.
        keep_alive &= reply.reusable;
        // The upstreams tried stay on the request (`$upstream_addr` in the error page).
        join_tries(&mut rw.error_tries, &mut reply.tries);
        let body = std::mem::take(&mut redirect.body);
        let (loc, refused, outcome) = match enter(w, snap, &base, rw, *redirect).await {
            Some(found) => found,
            None => (
                &base.server.fallback,
                None,
                crate::rewrite::Outcome::Status(500),
            ),
        };
        let req = Req {
            path: rw.uri.as_deref().unwrap_or(base.req.path),
            keep_alive,
            rw: Some(&*rw),
            ..base.req
        };
        let cx = Cx {
            w,
            snap,
            loc,
            req: &req,
        };
        let (next, back) = crate::dispatch::answer(&cx, refused, outcome, body, client).await;
        reply = next;
        stream = back;
        if reply.redirect.is_none() {
            // `$upstream_*` name every upstream tried, the erring request's first.
            let mut all = rw.error_tries.clone();
            join_tries(&mut all, &mut reply.tries);
            reply.tries = all;
            crate::access_log::write(&cx, &reply);
        }
    }
    (reply, stream)
}

/// Appends a redirected request's tries to the ones before, with nginx's ` : ` between.
fn join_tries(before: &mut Vec<TryRecord>, more: &mut Vec<TryRecord>) {
    if !before.is_empty() && !more.is_empty() {
        before.push(TryRecord::new(TryPeer::Redirect));
    }
    before.append(more);
}

/// Takes the redirect into `rw` and runs the rewrite phases and the access check for it:
/// the location, a refusal, and what the rewrite phases decided. `None`: the URI changes
/// are spent (nginx's 500, logged).
async fn enter<'s>(
    w: &Worker,
    snap: &Snapshot,
    base: &Base<'s>,
    rw: &mut RwState,
    redirect: Redirect,
) -> Option<(&'s LocationRt, Option<u16>, crate::rewrite::Outcome<'s>)> {
    if let Some(status) = redirect.status {
        rw.error.status = Some(status);
        // nginx's special response handler clears the type before the error page.
        if let Some(a) = rw.accel.as_mut() {
            a.content_type = None;
        }
    }
    if let Some((carried, rate)) = redirect.accel {
        rw.accel = Some(carried);
        rw.limit_rate = rate.or(rw.limit_rate);
    }
    // A named location keeps the method (nginx changes it for a URI only).
    rw.error.get |= !base.req.head_only && matches!(redirect.target, Target::Uri(..));
    rw.error.done |= !redirect.recursive;
    if redirect.location.is_some() {
        rw.error_location = redirect.location;
    }
    rw.error_authenticate.extend(redirect.authenticate);
    rw.internal = true;
    rw.location_invalid = false;
    rw.add_uri_to_alias = false;
    let shown = match &redirect.target {
        Target::Uri(u, _) | Target::Named(u) => u.clone(),
    };
    match redirect.target {
        Target::Uri(uri, args) => {
            rw.uri = Some(uri);
            rw.args = Some(args);
            rw.rebuild = true;
        }
        Target::Named(name) => rw.named = Some(name),
    }
    rw.uri_changes += 1;
    if rw.uri_changes > MAX_URI_CHANGES {
        let ctx = base.req.log_context(None);
        let msg = format_args!(
            "rewrite or internal redirection cycle while internally redirecting to \"{shown}\"{ctx}"
        );
        w.log(snap, LogLevel::Error, base.req.conn_id, msg);
        return None;
    }
    let pre = Req {
        rw: None,
        ..base.req
    };
    let (loc, outcome) = crate::rewrite::process(w, snap, base.server, &pre, rw).await;
    // The access phase ran with the rewrite phases (rewrite.rs): a refusal is the outcome.
    Some((loc, None, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_head_takes_the_error_status() {
        let (buf, head) = crate::testutil::request_head(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let relayed = b"HTTP/1.1 200 Fine\r\nX: y\r\n\r\n".to_vec();
        let plain = crate::testutil::req(&buf, &head);
        let mut out = relayed.clone();
        let len = out.len();
        assert_eq!(restatus(&mut out, &plain, len), len);
        assert_eq!(
            out, relayed,
            "no error_page redirect: as the upstream sent it"
        );
        let mut rw = RwState::default();
        rw.error.status = Some(404);
        let redirected = Req {
            rw: Some(&rw),
            ..crate::testutil::req(&buf, &head)
        };
        let n = restatus(&mut out, &redirected, len);
        assert_eq!(out, b"HTTP/1.1 404 Not Found\r\nX: y\r\n\r\n");
        assert_eq!(n, out.len());
        rw.error.status = Some(0);
        let own = Req {
            rw: Some(&rw),
            ..crate::testutil::req(&buf, &head)
        };
        let mut out = relayed.clone();
        restatus(&mut out, &own, len);
        assert_eq!(out, relayed, "`=`: the upstream's own status");
    }
}
