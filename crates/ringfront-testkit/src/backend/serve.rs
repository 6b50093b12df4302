//! One backend connection: read a request, apply the current [`Mode`], answer like the PHP
//! test script of article 000, and loop while the connection stays persistent.

use std::io::Write;
use std::time::Duration;

use super::{Canned, Mode, Recorded, Shared};
use crate::wire::{BufStream, Head};

/// The body a `?size=N` request gets: a repeating `a..z` pattern, so tests can compare
/// exactly and spot reordered or truncated data.
pub fn body_pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

/// What the query string of a request asks for.
#[derive(Default)]
struct Query {
    sleep: Option<f64>,
    code: Option<u16>,
    size: Option<usize>,
    chunked: bool,
    close: bool,
    echo: bool,
}

impl Query {
    fn parse(target: &str) -> Query {
        let mut q = Query::default();
        let Some((_, query)) = target.split_once('?') else {
            return q;
        };
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "sleep" => q.sleep = v.parse().ok().filter(|s: &f64| s.is_finite() && *s > 0.0),
                "code" => q.code = v.parse().ok().filter(|c| (200..1000).contains(c)),
                "size" => q.size = v.parse().ok(),
                "chunked" => q.chunked = v == "1",
                "close" => q.close = v == "1",
                "echo" => q.echo = v == "1",
                _ => {}
            }
        }
        q
    }
}

/// How often a held connection looks at its peer and at the mode.
const HOLD_TICK: Duration = Duration::from_millis(10);

/// Holds the answer while the mode is `Hold`: `false` when the peer closed the connection
/// meanwhile (counted) or the backend stopped, `true` when the mode changed.
fn hold(shared: &Shared, conn: &mut BufStream) -> bool {
    let _ = conn.stream.set_read_timeout(Some(HOLD_TICK));
    let mut byte = [0u8; 1];
    let released = loop {
        match conn.stream.peek(&mut byte) {
            Ok(0) => {
                shared.count_closed();
                break false;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                shared.count_closed();
                break false;
            }
            // Pipelined bytes: the peer is still there.
            Ok(_) => std::thread::sleep(HOLD_TICK),
            Err(_) => {}
        }
        if shared.stopped() {
            break false;
        }
        if shared.mode() != Mode::Hold {
            break true;
        }
    };
    let _ = conn.stream.set_read_timeout(None);
    released
}

pub(super) fn serve(shared: &Shared, conn: &mut BufStream) {
    loop {
        let raw_head = match conn.read_head() {
            Ok(Some(h)) => h,
            _ => return,
        };
        shared.count_hit();
        let Ok(head) = Head::parse(&raw_head) else {
            let _ = conn.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        };
        let mut parts = head.first_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("").to_string();
        let version = parts.next().unwrap_or("HTTP/1.0").to_string();
        let mode = shared.mode();

        if mode == Mode::Ok
            && version == "HTTP/1.1"
            && head
                .header("expect")
                .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
            && conn.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err()
        {
            return;
        }
        let (body, body_ok) = read_body(conn, &head);
        shared.record(Recorded {
            method: method.clone(),
            target: target.clone(),
            version: version.clone(),
            headers: head.headers.clone(),
            body: body.clone(),
            raw_head,
        });
        if !body_ok {
            return;
        }

        if mode == Mode::Hold && !hold(shared, conn) {
            return;
        }
        let mode = match mode {
            Mode::Hold => shared.mode(),
            m => m,
        };
        match mode {
            Mode::Ok | Mode::Hold => {}
            Mode::Refuse | Mode::Close => return,
            Mode::Hang => {
                shared.hang();
                return;
            }
            Mode::Garbage => {
                let _ = conn.write_all(b"HELLO\r\n\r\n");
                return;
            }
            Mode::InvalidHeader => {
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nX-Backend: {}\r\nBad Header: x\r\nContent-Length: 0\r\n\r\n",
                    shared.port()
                );
                let _ = conn.write_all(reply.as_bytes());
                return;
            }
            Mode::Reset => {
                let _ = socket2::SockRef::from(&conn.stream).set_linger(Some(Duration::ZERO));
                return;
            }
        }

        if let Some(canned) = shared.route(&target) {
            let keep_alive = if version == "HTTP/1.1" {
                !head.has_token("connection", "close")
            } else {
                head.has_token("connection", "keep-alive")
            };
            if !answer_canned(shared, conn, &method, &version, &canned, keep_alive) {
                return;
            }
            continue;
        }
        if head.has_token("upgrade", "websocket") {
            upgrade_echo(shared, conn);
            return;
        }
        let keep_alive = if version == "HTTP/1.1" {
            !head.has_token("connection", "close")
        } else {
            head.has_token("connection", "keep-alive")
        };
        if !answer(shared, conn, &method, &target, &version, &body, keep_alive) {
            return;
        }
    }
}

/// Reads the request body per its framing; returns what arrived and whether all of it did.
fn read_body(conn: &mut BufStream, head: &Head) -> (Vec<u8>, bool) {
    if head.is_chunked() {
        match conn.read_chunked() {
            Ok((body, _)) => (body, true),
            Err(_) => (Vec::new(), false),
        }
    } else {
        match head.content_length() {
            Ok(None) => (Vec::new(), true),
            Ok(Some(n)) => {
                let (body, err) = conn.read_exact_lossy(n);
                (body, err.is_none())
            }
            Err(_) => (Vec::new(), false),
        }
    }
}

/// Writes the Ok-mode answer; returns whether the connection stays open for another request.
fn answer(
    shared: &Shared,
    conn: &mut BufStream,
    method: &str,
    target: &str,
    version: &str,
    request_body: &[u8],
    keep_alive: bool,
) -> bool {
    let q = Query::parse(target);
    if let Some(secs) = q.sleep {
        if !shared.sleep(Duration::from_secs_f64(secs)) {
            return false;
        }
    }
    let port = shared.port();
    let status = q.code.unwrap_or(200);
    let body = if q.echo {
        request_body.to_vec()
    } else if let Some(n) = q.size {
        body_pattern(n)
    } else {
        format!("backend {port}\n").into_bytes()
    };
    let keep_alive = keep_alive && !q.close;
    let bodiless_status = status == 204 || status == 304;
    let send_body = method != "HEAD" && !bodiless_status;
    // HTTP/1.0 has no chunked coding (RFC 9112 §7): such a peer gets a close-delimited body.
    let chunked = q.chunked && !bodiless_status && version == "HTTP/1.1";
    let close_delimited = q.chunked && !bodiless_status && version != "HTTP/1.1";
    let keep_alive = keep_alive && !close_delimited;

    let mut out = Vec::with_capacity(body.len() + 256);
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nServer: ringfront-testkit\r\nX-Backend: {port}\r\nContent-Type: text/plain\r\n",
        reason(status)
    );
    if chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    } else if !bodiless_status && !close_delimited {
        let _ = write!(out, "Content-Length: {}\r\n", body.len());
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if version != "HTTP/1.1" {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if send_body {
        if chunked {
            for piece in body.chunks(4096) {
                let _ = write!(out, "{:x}\r\n", piece.len());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
        } else {
            out.extend_from_slice(&body);
        }
    }
    conn.write_all(&out).is_ok() && keep_alive
}

/// Writes a [`Canned`] answer; returns whether the connection stays open.
fn answer_canned(
    shared: &Shared,
    conn: &mut BufStream,
    method: &str,
    version: &str,
    canned: &Canned,
    keep_alive: bool,
) -> bool {
    let mut out = Vec::with_capacity(canned.body.len() + 256);
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nServer: ringfront-testkit\r\nX-Backend: {}\r\n",
        canned.status,
        reason(canned.status),
        shared.port()
    );
    for (n, v) in &canned.headers {
        let _ = write!(out, "{n}: {v}\r\n");
    }
    let _ = write!(out, "Content-Length: {}\r\n", canned.body.len());
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if version != "HTTP/1.1" {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if method != "HEAD" {
        out.extend_from_slice(&canned.body);
    }
    conn.write_all(&out).is_ok() && keep_alive
}

/// After `101 Switching Protocols` the connection is a raw byte pipe: echo until EOF.
fn upgrade_echo(shared: &Shared, conn: &mut BufStream) {
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Backend: {}\r\n\r\n",
        shared.port()
    );
    if conn.write_all(head.as_bytes()).is_err() {
        return;
    }
    let early = conn.take_buffered();
    if !early.is_empty() && conn.write_all(&early).is_err() {
        return;
    }
    let Ok(mut reader) = conn.stream.try_clone() else {
        return;
    };
    let _ = std::io::copy(&mut reader, &mut conn.stream);
    let _ = conn.stream.shutdown(std::net::Shutdown::Write);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
