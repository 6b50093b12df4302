//! Answers ringfront makes itself, written to the client: error statuses (with the
//! location's `error_page`), `return`, and the status page / API.

use crate::stream::ClientStream;
use ringfront_config::LocationMatch;

use crate::io::write_all;
use crate::req::{Cx, Reply};
use crate::{respond, vars};

/// Answers with an error status of our own (honouring the location's `error_page`).
pub async fn error(
    stream: &mut ClientStream,
    out: &mut Vec<u8>,
    cx: &Cx<'_>,
    status: u16,
) -> Reply {
    // nginx's special responses end the connection after a 400, 500 or 501.
    let keep_alive = cx.req.keep_alive && !matches!(status, 400 | 500 | 501);
    out.clear();
    let answer = respond::Answer {
        keep_alive,
        ..respond::Answer::of(cx)
    };
    let (status, n) = respond::error(out, &answer, Some(cx.loc), status);
    let bytes = out.len() as u64;
    let (r, o) = write_all(stream, std::mem::take(out), cx.settings().send_timeout).await;
    *out = o;
    Reply::new(status, n, bytes, keep_alive && r.is_ok())
}

/// `check_status` and `api` locations: the status page or the JSON API, built from the
/// shared board at the time of the request.
pub fn status(out: &mut Vec<u8>, cx: &Cx<'_>) -> Reply {
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
        &respond::Answer::of(cx),
        status,
        content_type,
        &[("Cache-Control", b"no-cache")],
        &body,
    );
    Reply::new(status, n, out.len() as u64, req.keep_alive)
}

/// `return CODE [TEXT|URL]`.
pub fn ret(out: &mut Vec<u8>, cx: &Cx<'_>, ret: &ringfront_config::Return) -> Reply {
    let (req, loc) = (cx.req, cx.loc);
    let mut text = Vec::new();
    if let Some(t) = &ret.text {
        vars::render(&mut text, t, &req.vars("", None, Some(cx.snap)), false);
    }
    let code = ret.code;
    if respond::is_redirect(code) {
        return redirect(out, cx, code, text);
    }
    let answer = respond::Answer::of(cx);
    let (status, body_bytes) = if ret.text.is_some() {
        // nginx types the text by the URI's extension (`types`, else `default_type`).
        let content_type = cx.settings().files.content_type(req.path);
        let n = respond::build(out, &answer, code, content_type, &[], &text);
        (code, n)
    } else {
        respond::error(out, &answer, Some(loc), code)
    };
    Reply::new(status, body_bytes, out.len() as u64, req.keep_alive)
}

/// A redirect to `url` (from `return` or `rewrite`), with nginx's page for the status.
pub fn redirect(out: &mut Vec<u8>, cx: &Cx<'_>, code: u16, mut url: Vec<u8>) -> Reply {
    let req = cx.req;
    let answer = respond::Answer::of(cx);
    // absolute_redirect on (nginx's default): a relative URL gets scheme, host and port.
    if url.first() == Some(&b'/') {
        let tls = req.tls.is_some();
        let mut abs = if tls {
            b"https://".to_vec()
        } else {
            b"http://".to_vec()
        };
        let host = vars::host(req.buf, req.head);
        abs.extend_from_slice(if host.is_empty() {
            req.server_name.as_bytes()
        } else {
            host
        });
        // nginx leaves out the scheme's default port.
        if req.local.port() != if tls { 443 } else { 80 } {
            abs.extend_from_slice(format!(":{}", req.local.port()).as_bytes());
        }
        abs.extend_from_slice(&url);
        url = abs;
    }
    let page = ringfront_http::error_body(code, answer.decor.version());
    let n = respond::build(
        out,
        &answer,
        code,
        "text/html",
        &[("Location", &url)],
        page.as_bytes(),
    );
    Reply::new(code, n, out.len() as u64, req.keep_alive)
}

/// `stub_status`: nginx's basic status page, from every worker's counters. Only GET and HEAD
/// (405 otherwise, as nginx).
pub fn stub_status(out: &mut Vec<u8>, cx: &Cx<'_>) -> Reply {
    let req = cx.req;
    let answer = respond::Answer::of(cx);
    if !matches!(req.head.method.get(req.buf), b"GET" | b"HEAD") {
        let (status, n) = respond::error(out, &answer, Some(cx.loc), 405);
        return Reply::new(status, n, out.len() as u64, req.keep_alive);
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
