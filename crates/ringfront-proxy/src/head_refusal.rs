//! The access-log line of a request whose head never came whole or was refused, as nginx
//! writes it (`ngx_http_close_request` -> `ngx_http_log_request`): once a byte of the
//! request came, a head that times out (`client_header_timeout`) is logged as 408, one the
//! client ends (closes, resets) as 400, both with nothing sent; a refused head (400, 414,
//! 494 logged as 400, 505, ...) with its page's bytes. A timeout or close also gets
//! nginx's `info` error-log line (`client timed out ... while reading client request
//! headers`), and so does a fresh connection that sent nothing (`... while waiting for
//! request`, no access-log line). The log is the server level's of
//! the server the `Host` line (or an absolute target) chose if it came, else of the
//! listen's default server; `$request`, `$uri`, `$request_method`, the `$http_*` fields
//! and `$request_length` are those of the lines nginx parsed: the request line and the
//! whole, valid header lines before the one that failed or did not finish. Before a whole
//! request line `$request` is the bytes that came (up to nginx's 1k buffer) and
//! `$uri`, `$args`, `$request_method`, `$request_uri` are not found (`$server_protocol`
//! is empty once the line reached it, else not found).

use std::net::SocketAddr;
use std::time::Instant;

use ringfront_config::Variable;
use ringfront_http::RequestHead;

use crate::req::{Cx, Reply, Req};
use crate::rewrite_state::RwState;
use crate::snapshot::Snapshot;
use crate::worker::Worker;

/// nginx's `client_header_buffer_size` (1k; ringfront reads the directive but not its
/// value): how much of an unfinished request line nginx's `$request` shows.
const LINE_SHOWN: usize = 1024;

/// How reading a head ended without a request to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Nothing to log: no byte came, or the worker is stopping.
    Quiet,
    /// `client_header_timeout`: nginx's 408, nothing sent.
    TimedOut,
    /// The client closed: nginx's 400, nothing sent.
    Closed,
    /// The read failed: nginx's 400, nothing sent.
    Failed,
    /// Refused with a page: the status logged, body bytes and bytes sent.
    Answered { status: u16, body: u64, sent: u64 },
}

impl Ended {
    fn logged(self) -> Option<(u16, u64, u64)> {
        match self {
            Ended::Quiet => None,
            Ended::TimedOut => Some((408, 0, 0)),
            Ended::Closed | Ended::Failed => Some((400, 0, 0)),
            Ended::Answered { status, body, sent } => Some((status, body, sent)),
        }
    }
}

/// The part of a head that came, as nginx's log sees it.
#[derive(Debug)]
pub(crate) struct Partial {
    /// The lines nginx parsed made a whole head (an empty line added); empty without a
    /// whole request line.
    pub buf: Vec<u8>,
    pub head: RequestHead,
    /// `$request_length`: the bytes of those lines.
    pub length: u64,
    /// No request line: what `$request` shows.
    pub line: Option<Vec<u8>>,
}

/// What nginx parsed of `buf`, a head that stopped; `line_limit`: the longest line it
/// takes (a longer one is its 414 or 494).
pub(crate) fn partial(buf: &[u8], line_limit: usize) -> Partial {
    // nginx skips empty lines before the request line.
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let mut ends = Vec::new();
    let mut from = start;
    while let Some(i) = buf[from..].iter().position(|&b| b == b'\n') {
        let end = from + i + 1;
        if end - from > line_limit + 2 {
            break;
        }
        ends.push(end);
        if end - from <= 2 {
            break; // the empty line: the head was whole
        }
        from = end;
    }
    let made = |end: usize| {
        let mut made = buf[start..end].to_vec();
        made.extend_from_slice(b"\r\n");
        made
    };
    // `$request_length`: the well-formed lines (one nginx refuses for its meaning, a bad
    // `Host`, a `Transfer-Encoding` it lacks, was read whole and counts).
    let length = ends
        .iter()
        .rev()
        .find(|&&end| RequestHead::well_formed(&made(end)))
        .map_or(0, |&end| (end - start) as u64);
    for &end in ends.iter().rev() {
        let made = made(end);
        let mut head = RequestHead::new();
        if matches!(head.parse_unfinished(&made), Ok(Some(_))) {
            return Partial {
                buf: made,
                head,
                length,
                line: None,
            };
        }
    }
    let rest = &buf[start..];
    let line_end = rest
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(rest.len());
    Partial {
        buf: Vec::new(),
        head: RequestHead::new(),
        length,
        line: Some(rest[..line_end.min(LINE_SHOWN)].to_vec()),
    }
}

/// The variables of a request without a whole request line (`line`, what came of it);
/// whether `var` is one of them.
pub(crate) fn push_unparsed(out: &mut Vec<u8>, var: &Variable, line: &[u8], empty: &[u8]) -> bool {
    match var {
        Variable::Request => out.extend_from_slice(line),
        // nginx has the protocol's start (empty, found) once its parser reached it.
        Variable::ServerProtocol if reached_protocol(line) => {}
        Variable::Uri
        | Variable::Args
        | Variable::RequestMethod
        | Variable::RequestUri
        | Variable::ServerProtocol => out.extend_from_slice(empty),
        _ => return false,
    }
    true
}

/// A third word starting with `H` (`GET / HTTP/9.9`).
fn reached_protocol(line: &[u8]) -> bool {
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    words.nth(2).is_some_and(|w| w[0] == b'H')
}

/// The connection's facts for the line.
pub(crate) struct Conn<'a> {
    pub client: SocketAddr,
    pub local: SocketAddr,
    pub conn_id: u64,
    /// This request's number on the connection.
    pub requests: u64,
    pub opened_ms: u64,
    pub tls: Option<&'a ringfront_tls::Info>,
    pub proxy_protocol: Option<&'a ringfront_http::ProxyHeader>,
    /// The servers of the listen, its default first.
    pub candidates: &'a [usize],
    pub line_limit: usize,
}

/// Writes the access-log line of a head that ended as `ended` after `buf` came.
pub(crate) fn log(w: &Worker, snap: &Snapshot, c: &Conn<'_>, buf: &[u8], ended: Ended) {
    let Some((status, body, sent)) = ended.logged() else {
        return;
    };
    if buf.is_empty() {
        if ended == Ended::TimedOut && c.requests == 1 {
            let ctx = format!(
                ", client: {}, server: {}",
                crate::vars::client_text(c.client),
                c.local
            );
            let msg = format_args!(
                "client timed out (110: Connection timed out) while waiting for request{ctx}"
            );
            w.log(snap, ringfront_config::LogLevel::Info, c.conn_id, msg);
        }
        return;
    }
    let Some(default) = c.candidates.first().and_then(|&i| snap.servers.get(i)) else {
        return;
    };
    let p = partial(buf, c.line_limit);
    let server = match p.line {
        Some(_) => default,
        None => {
            crate::dispatch::server(snap, c.candidates, &p.buf, &p.head).map_or(default, |(s, _)| s)
        }
    };
    error_line(w, snap, c, &p, server.primary_name.as_str(), ended);
    let mut rw = RwState::new(&snap.variables);
    match &p.line {
        Some(line) => rw.unparsed_line = Some(line.clone()),
        None => {
            let merge = default.fallback.settings.merge_slashes;
            crate::session::own_uri(&p.buf, &p.head, &mut rw, merge).unwrap_or_default()
        }
    }
    let path = crate::session::request_path(&p.buf, &p.head);
    let req = Req {
        buf: &p.buf,
        head: &p.head,
        client: c.client,
        local: c.local,
        server_name: server.primary_name.as_str(),
        conn_id: c.conn_id,
        conn_requests: c.requests,
        start: Instant::now(),
        path: rw.uri.as_deref().unwrap_or(&path),
        keep_alive: false,
        head_only: false,
        pipelined: &[],
        tls: c.tls,
        rw: Some(&rw),
        body: &[],
        opened_ms: c.opened_ms,
        stats: &w.shared.workers,
        length: p.length,
        tries: &[],
        id: match snap.uses.request_id {
            true => crate::request_id::draw(),
            false => [0; 16],
        },
        body_len: 0,
        proxy_protocol: c.proxy_protocol,
        realip_from: None,
        client_conn: None,
        standing: None,
        body_file: &[],
        body_stream: None,
        spooled: None,
    };
    let cx = Cx {
        w,
        snap,
        loc: &server.fallback,
        req: &req,
    };
    crate::access_log::write(&cx, &Reply::new(status, body, sent, false));
}

/// nginx's `info` line for a head that timed out or that the client ended by closing.
fn error_line(w: &Worker, snap: &Snapshot, c: &Conn<'_>, p: &Partial, server: &str, e: Ended) {
    let what = match e {
        Ended::TimedOut => "client timed out (110: Connection timed out)",
        Ended::Closed => "client prematurely closed connection",
        _ => return,
    };
    let (part, ctx) = match &p.line {
        Some(line) => {
            let mut ctx = format!(
                ", client: {}, server: {server}",
                crate::vars::client_text(c.client)
            );
            if !line.is_empty() {
                ctx.push_str(&format!(", request: \"{}\"", String::from_utf8_lossy(line)));
            }
            ("line", ctx)
        }
        None => {
            // `host:` only for a `Host` line (not an absolute target's authority).
            let mut head = p.head.clone();
            if head.header(&p.buf, "host").is_none() {
                head.host = None;
            }
            let ctx = crate::req::log_context(&p.buf, &head, c.client, server, None);
            ("headers", ctx)
        }
    };
    let msg = format_args!("{what} while reading client request {part}{ctx}");
    w.log(snap, ringfront_config::LogLevel::Info, c.conn_id, msg);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(buf: &[u8]) -> (String, u64, Option<String>) {
        let p = partial(buf, 1024);
        let head = String::from_utf8_lossy(&p.buf).into_owned();
        let line = p.line.map(|l| String::from_utf8_lossy(&l).into_owned());
        (head, p.length, line)
    }

    #[test]
    fn the_lines_nginx_parsed() {
        assert_eq!(
            shown(b"GET /a?x=1"),
            (String::new(), 0, Some("GET /a?x=1".into()))
        );
        assert_eq!(shown(b"\r\n"), (String::new(), 0, Some(String::new())));
        assert_eq!(
            shown(b"\r\nGET /a HTTP/1.1\r\n"),
            ("GET /a HTTP/1.1\r\n\r\n".into(), 17, None)
        );
        assert_eq!(
            shown(b"GET /a HTTP/1.1\r\nUser-Agent: u\r\nX-A: 1"),
            ("GET /a HTTP/1.1\r\nUser-Agent: u\r\n\r\n".into(), 32, None)
        );
        // A bad line and what follows are not parsed.
        assert_eq!(
            shown(b"GET /a HTTP/1.1\r\nHost: b\r\nBad Header\r\n\r\n"),
            ("GET /a HTTP/1.1\r\nHost: b\r\n\r\n".into(), 26, None)
        );
        assert_eq!(
            shown(b"GARBAGE\r\n\r\n"),
            (String::new(), 0, Some("GARBAGE".into()))
        );
        // A header line too long (nginx's 494) is not parsed; a request line too long
        // (414) leaves none, and nginx's 1k of it shows.
        let mut long = b"GET /a HTTP/1.1\r\nX-Big: ".to_vec();
        long.extend(std::iter::repeat_n(b'b', 2000));
        assert_eq!(shown(&long).1, 17);
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(shown(&long).1, 17);
        let mut uri = b"GET /".to_vec();
        uri.extend(std::iter::repeat_n(b'a', 3000));
        uri.extend_from_slice(b" HTTP/1.1\r\n\r\n");
        let (_, n, line) = shown(&uri);
        assert_eq!((n, line.map(|l| l.len())), (0, Some(1024)));
    }
}
