//! Answers ringfront makes itself, written to the client: error statuses and redirects
//! (nginx's special responses, subject to the location's `error_page`: error_redirect.rs),
//! `return`, and the status page / API.

use crate::stream::ClientStream;
use ringfront_config::LocationMatch;

use crate::error_redirect::Plan;
use crate::paced::write_paced;
use crate::req::{Cx, Reply};
use crate::{respond, vars};

/// Answers with an error status of our own, or its `error_page`: a redirect to a URL is
/// sent here, an internal one left to the caller (the reply's `redirect`, nothing sent).
pub async fn error(
    stream: &mut ClientStream,
    out: &mut Vec<u8>,
    cx: &Cx<'_>,
    status: u16,
) -> Reply {
    out.clear();
    let made = special(out, cx, status);
    if made.redirect.is_some() {
        return made;
    }
    let bytes = out.len() as u64;
    let (taken, mut pacer) = (std::mem::take(out), crate::paced::pacer(cx));
    let (r, o) = write_paced(stream, taken, cx.settings().send_timeout, pacer.as_mut()).await;
    *out = o;
    let mut made = made;
    made.bytes_sent = bytes;
    made.reusable &= r.is_ok();
    made
}

/// nginx's special response for an error status, into `out`: the built-in page, or the
/// `error_page`'s redirect to a URL, or (nothing written) its internal redirect.
fn special(out: &mut Vec<u8>, cx: &Cx<'_>, status: u16) -> Reply {
    // nginx's special responses end the connection after a 400, 500 or 501.
    let keep_alive = cx.req.keep_alive && !matches!(status, 400 | 500 | 501);
    let answer = respond::Answer {
        keep_alive,
        ..respond::Answer::of(cx)
    };
    let (status, n) = match crate::error_redirect::plan(cx, status) {
        Plan::Builtin => respond::error(out, &answer, status),
        Plan::Url { status, location } => {
            let n = url_page(out, &answer, status, &location);
            (status, n)
        }
        Plan::Internal(r) => {
            let mut reply = Reply::new(status, 0, 0, keep_alive);
            reply.redirect = Some(r);
            return reply;
        }
    };
    Reply::new(status, n, out.len() as u64, keep_alive)
}

/// A redirect page with `Location` as given.
fn url_page(out: &mut Vec<u8>, a: &respond::Answer<'_>, code: u16, url: &[u8]) -> u64 {
    let page = ringfront_http::error_body(code, a.decor.version());
    respond::special(out, a, code, &[("Location", url)], page.as_bytes())
}

/// `check_status` and `api` locations: the status page or the JSON API, built from the
/// shared board at the time of the request (the API's write methods: api_write.rs).
pub fn status(out: &mut Vec<u8>, cx: &Cx<'_>, body: &[u8]) -> Reply {
    let (req, loc) = (cx.req, cx.loc);
    let view = crate::status::collect(cx.snap, &cx.w.shared);
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
        let r = api_answer(cx, &view, &method, path, body);
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
        &respond::Answer::of(cx),
        status,
        content_type,
        &[("Cache-Control", b"no-cache")],
        &body,
    );
    Reply::new(status, n, out.len() as u64, req.keep_alive)
}

/// The API's answer: a write method under `api write=on` changes the group, anything else
/// reads `view` (which refuses writes with nginx Plus's 405).
fn api_answer(
    cx: &Cx<'_>,
    view: &crate::status::StatusView,
    method: &str,
    path: &str,
    body: &[u8],
) -> crate::status::ApiResponse {
    let writes = matches!(method, "POST" | "PATCH" | "DELETE" | "PUT");
    if !(writes && cx.loc.settings.api_write) {
        return crate::status::api(view, method, path, "");
    }
    let rid = match cx.req.id.iter().all(|&b| b == 0) {
        true => crate::status::api::derived_request_id(view, path),
        false => cx.req.id.iter().map(|b| format!("{b:02x}")).collect(),
    };
    let Some((upstream, id)) = crate::status::api::write_target(path) else {
        return crate::status::api::error(405, "method not allowed", "MethodNotAllowed", &rid);
    };
    let w = crate::api_write::Write {
        method,
        upstream: &upstream,
        id: id.as_deref(),
        body,
        request_id: &rid,
    };
    crate::api_write::handle(&cx.w.shared, &w)
}

/// `return CODE [TEXT|URL]`.
pub fn ret(out: &mut Vec<u8>, cx: &Cx<'_>, ret: &ringfront_config::Return) -> Reply {
    let req = cx.req;
    let mut text = Vec::new();
    if let Some(t) = &ret.text {
        vars::render(&mut text, t, &req.vars("", None, Some(cx.snap)), false);
    }
    let code = ret.code;
    if respond::is_redirect(code) {
        return redirect(out, cx, code, text);
    }
    let answer = respond::Answer::of(cx);
    if ret.text.is_none() {
        if code >= 400 {
            // nginx finalizes with the code: a special response.
            return special(out, cx, code);
        }
        // A normal response without a body (after an error_page redirect, the error's
        // status).
        let n = respond::build(out, &answer, code, "text/html", &[], b"");
        return Reply::new(answer.sent(code), n, out.len() as u64, req.keep_alive);
    }
    // nginx types the text by the URI's extension (`types`, else `default_type`).
    let content_type = cx.settings().files.content_type(req.path);
    let n = respond::build(out, &answer, code, content_type, &[], &text);
    Reply::new(answer.sent(code), n, out.len() as u64, req.keep_alive)
}

/// A redirect to `url` (from `return`, `rewrite` or a folder's 301), with nginx's page for
/// the status; a special response, so its `error_page` applies.
pub fn redirect(out: &mut Vec<u8>, cx: &Cx<'_>, code: u16, url: Vec<u8>) -> Reply {
    let req = cx.req;
    let answer = respond::Answer::of(cx);
    match crate::error_redirect::plan(cx, code) {
        Plan::Builtin => {}
        Plan::Url { status, location } => {
            let n = url_page(out, &answer, status, &location);
            return Reply::new(status, n, out.len() as u64, req.keep_alive);
        }
        Plan::Internal(mut r) => {
            r.location = Some(url);
            let mut reply = Reply::new(code, 0, 0, req.keep_alive);
            reply.redirect = Some(r);
            return reply;
        }
    }
    let url = crate::location_url::absolute(cx, url);
    let n = url_page(out, &answer, code, &url);
    Reply::new(code, n, out.len() as u64, req.keep_alive)
}

/// `stub_status`: nginx's basic status page, from every worker's counters. Only GET and HEAD
/// (405 otherwise, as nginx).
pub fn stub_status(out: &mut Vec<u8>, cx: &Cx<'_>) -> Reply {
    let req = cx.req;
    let answer = respond::Answer::of(cx);
    if !matches!(req.head.method.get(req.buf), b"GET" | b"HEAD") {
        return special(out, cx, 405);
    }
    let body = stub_status_text(&cx.w.shared.workers);
    let n = respond::build(out, &answer, 200, "text/plain", &[], body.as_bytes());
    Reply::new(200, n, out.len() as u64, req.keep_alive)
}

/// stub_status's connection counts, all workers together: active, reading, writing and
/// waiting (also `$connections_active` and friends).
pub(crate) fn connection_counts(workers: &[crate::WorkerStats]) -> [u64; 4] {
    use std::sync::atomic::Ordering::Relaxed;
    let sum = |f: fn(&crate::WorkerStats) -> u64| workers.iter().map(f).sum::<u64>();
    let active = sum(|w| w.connections.load(Relaxed));
    let reading = sum(|w| w.reading.load(Relaxed));
    let busy = sum(|w| w.busy.load(Relaxed));
    let writing = busy.saturating_sub(reading);
    let waiting = active.saturating_sub(reading + writing);
    [active, reading, writing, waiting]
}

/// The page's text, byte for byte as nginx writes it (trailing spaces included).
fn stub_status_text(workers: &[crate::WorkerStats]) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let sum = |f: fn(&crate::WorkerStats) -> u64| workers.iter().map(f).sum::<u64>();
    let [active, reading, writing, waiting] = connection_counts(workers);
    format!(
        "Active connections: {active} \nserver accepts handled requests\n {} {} {} \nReading: {reading} Writing: {writing} Waiting: {waiting} \n",
        sum(|w| w.accepted.load(Relaxed)),
        sum(|w| w.handled.load(Relaxed)),
        sum(|w| w.requests.load(Relaxed)),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use super::*;

    #[test]
    fn stub_status_reads_as_nginx() {
        let w = [crate::WorkerStats::default(), crate::WorkerStats::default()];
        for (s, (c, a, r, b, rd)) in w.iter().zip([(3, 10, 40, 2, 1), (2, 5, 7, 1, 0)]) {
            s.connections.store(c, Relaxed);
            s.accepted.store(a, Relaxed);
            s.handled.store(a, Relaxed);
            s.requests.store(r, Relaxed);
            s.busy.store(b, Relaxed);
            s.reading.store(rd, Relaxed);
        }
        assert_eq!(
            stub_status_text(&w),
            "Active connections: 5 \nserver accepts handled requests\n 15 15 47 \nReading: 1 Writing: 2 Waiting: 2 \n"
        );
    }
}
