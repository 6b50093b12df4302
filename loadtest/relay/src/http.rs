//! The `--http` floor: the relay plus what any HTTP proxy must do to a head. Both heads are
//! parsed with httparse (the parser ringfront uses), and each is written out anew: the request
//! line and its headers without the hop-by-hop ones for the upstream, the status line and its
//! headers without them plus a `Connection` line for the client. The body's framing comes from
//! the parsed `Content-Length`. Still no routing, no timers, no clock, no logs.

/// Headers that describe one connection, not the message (RFC 9110 7.6.1): never forwarded.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// The most headers a head may have here (wrk sends two, the backend five).
const MAX_HEADERS: usize = 32;

fn hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

fn header(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Parses the request head at the start of `src` and writes the upstream's request into `out`
/// (emptied first). Returns whether the client asked to close after this response (HTTP/1.0,
/// or `Connection: close`) and the head's length in `src`; None when `src` does not start
/// with a whole, valid head.
pub fn request(src: &[u8], out: &mut Vec<u8>) -> Option<(bool, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(head) = req.parse(src).ok()? else {
        return None;
    };
    out.clear();
    out.extend_from_slice(req.method?.as_bytes());
    out.push(b' ');
    out.extend_from_slice(req.path?.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut close = req.version? == 0;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            close = h.value.eq_ignore_ascii_case(b"close");
        } else if !hop_by_hop(h.name) {
            header(out, h.name, h.value);
        }
    }
    out.extend_from_slice(b"\r\n");
    Some((close, head))
}

/// Parses the response head at the start of `src` and writes the client's head into `out`
/// (emptied first), with `Connection: close` when `close`, else `Connection: keep-alive`.
/// Returns the head's length in `src` and the body's (`Content-Length`, 0 without one); None
/// when `src` does not start with a whole, valid head.
pub fn response(src: &[u8], close: bool, out: &mut Vec<u8>) -> Option<(usize, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(head) = res.parse(src).ok()? else {
        return None;
    };
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    let code = res.code?;
    out.extend_from_slice(&[
        b'0' + (code / 100 % 10) as u8,
        b'0' + (code / 10 % 10) as u8,
        b'0' + (code % 10) as u8,
        b' ',
    ]);
    out.extend_from_slice(res.reason?.as_bytes());
    out.extend_from_slice(b"\r\n");
    let mut length = 0;
    for h in res.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
        }
        if !hop_by_hop(h.name) {
            header(out, h.name, h.value);
        }
    }
    let connection: &[u8] = if close { b"close" } else { b"keep-alive" };
    header(out, "Connection", connection);
    out.extend_from_slice(b"\r\n");
    Some((head, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_loses_its_hop_by_hop_headers_and_says_whether_to_close() {
        let mut out = Vec::new();
        let src = b"GET /a?b HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTE: trailers\r\nAccept: */*\r\n\r\n";
        assert_eq!(request(src, &mut out), Some((true, src.len())));
        assert_eq!(out, b"GET /a?b HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n");
        assert_eq!(
            request(
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab",
                &mut out
            ),
            Some((false, 47))
        );
        assert_eq!(
            request(b"GET / HTTP/1.0\r\n\r\n", &mut out),
            Some((true, 18))
        );
        assert_eq!(request(b"GET / HTTP/1.1\r\nHost: x\r\n", &mut out), None);
        assert_eq!(request(b"GET / HTTP/9\r\n\r\n", &mut out), None);
    }

    #[test]
    fn response_gets_the_clients_connection_line_and_its_body_length() {
        let mut out = Vec::new();
        let src = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello";
        assert_eq!(response(src, true, &mut out), Some((src.len() - 5, 5)));
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
        );
        let src = b"HTTP/1.1 404 Not Found\r\n\r\n";
        assert_eq!(response(src, false, &mut out), Some((src.len(), 0)));
        assert_eq!(
            out,
            b"HTTP/1.1 404 Not Found\r\nConnection: keep-alive\r\n\r\n"
        );
        let bad = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(response(bad, false, &mut out), None);
    }
}
