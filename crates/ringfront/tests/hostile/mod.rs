//! Helpers of the hostile-input differential suites (`hostile_requests`, `hostile_responses`):
//! a raw-bytes client that reports every response and whether the connection closed, a
//! response parser that tolerates anything, and a [`RawBackend`] that answers every request
//! with fixed bytes and then keeps, closes, resets or stalls the connection.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;

use std::time::{Duration, Instant};

/// One response as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub status: u16,
    pub body: Vec<u8>,
    /// The body was cut short (connection closed before its framing said it ended).
    pub truncated: bool,
}

/// What one exchange on a fresh connection produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub responses: Vec<Seen>,
    /// The proxy closed (or reset) the connection within the read window.
    pub closed: bool,
    pub raw: Vec<u8>,
}

impl Outcome {
    pub fn status(&self) -> Option<u16> {
        self.responses.first().map(|r| r.status)
    }
}

/// Reads from `s` until EOF/reset, or until nothing arrives for `idle` after the first
/// byte (or `first` before it). Returns (bytes, closed).
pub fn read_window(s: &mut TcpStream, first: Duration, idle: Duration) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 16384];
    let start = Instant::now();
    loop {
        let wait = if out.is_empty() {
            first.saturating_sub(start.elapsed())
        } else {
            idle
        };
        if wait.is_zero() {
            return (out, false);
        }
        s.set_read_timeout(Some(wait)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return (out, false)
            }
            Err(_) => return (out, true),
        }
    }
}

/// Sends `bytes` on a fresh connection to `addr` and collects the answer.
pub fn exchange(addr: SocketAddr, bytes: &[u8], first: Duration) -> Outcome {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    // A proxy may close before reading everything (a reset of our write is fine).
    let _ = s.write_all(bytes);
    let (raw, closed) = read_window(&mut s, first, Duration::from_millis(300));
    Outcome {
        responses: parse_responses(&raw, false),
        closed,
        raw,
    }
}

pub fn find_sub(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// Splits `raw` into responses (Content-Length, chunked, or to the end). Stops at the first
/// thing that is not a status line. `head` = responses to HEAD requests (no bodies).
pub fn parse_responses(raw: &[u8], head: bool) -> Vec<Seen> {
    let mut out = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let Some(end) = find_sub(rest, b"\r\n\r\n") else {
            break;
        };
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        let mut lines = text.split("\r\n");
        let first = lines.next().unwrap_or("");
        let mut parts = first.splitn(3, ' ');
        if !parts.next().unwrap_or("").starts_with("HTTP/1.") {
            break;
        }
        let Some(status) = parts.next().and_then(|s| s.parse::<u16>().ok()) else {
            break;
        };
        let mut cl = None;
        let mut chunked = false;
        for l in lines {
            let (n, v) = l.split_once(':').unwrap_or((l, ""));
            let v = v.trim();
            if n.eq_ignore_ascii_case("content-length") {
                cl = v.parse::<usize>().ok();
            } else if n.eq_ignore_ascii_case("transfer-encoding") {
                chunked = v.eq_ignore_ascii_case("chunked");
            }
        }
        let body_start = &rest[end + 4..];
        if head || (100..200).contains(&status) || status == 204 || status == 304 {
            if (100..200).contains(&status) && status != 101 {
                rest = body_start;
                continue;
            }
            out.push(Seen {
                status,
                body: vec![],
                truncated: false,
            });
            rest = body_start;
            if status == 101 {
                break;
            }
            continue;
        }
        if chunked {
            let (body, used, complete) = dechunk(body_start);
            out.push(Seen {
                status,
                body,
                truncated: !complete,
            });
            rest = &body_start[used..];
        } else if let Some(n) = cl {
            let take = n.min(body_start.len());
            out.push(Seen {
                status,
                body: body_start[..take].to_vec(),
                truncated: take < n,
            });
            rest = &body_start[take..];
        } else {
            out.push(Seen {
                status,
                body: body_start.to_vec(),
                truncated: false,
            });
            break;
        }
    }
    out
}

/// (body, bytes used, complete)
fn dechunk(mut data: &[u8]) -> (Vec<u8>, usize, bool) {
    let total = data.len();
    let mut body = Vec::new();
    loop {
        let Some(eol) = find_sub(data, b"\r\n") else {
            return (body, total, false);
        };
        let line = String::from_utf8_lossy(&data[..eol]);
        let size = line.split(';').next().unwrap_or("").trim();
        let Ok(n) = usize::from_str_radix(size, 16) else {
            return (body, total, false);
        };
        data = &data[eol + 2..];
        if n == 0 {
            // trailers until an empty line
            let Some(end) = find_sub(data, b"\r\n") else {
                return (body, total, false);
            };
            if end == 0 {
                data = &data[2..];
            } else if let Some(e) = find_sub(data, b"\r\n\r\n") {
                data = &data[e + 4..];
            } else {
                return (body, total, false);
            }
            return (body, total - data.len(), true);
        }
        if data.len() < n + 2 {
            body.extend_from_slice(&data[..n.min(data.len())]);
            return (body, total, false);
        }
        body.extend_from_slice(&data[..n]);
        data = &data[n + 2..];
    }
}

/// Waits until `f()` holds or `timeout` passes.
pub fn wait_until(timeout: Duration, f: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < timeout {
        if f() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// Printable form of bytes for reports.
pub fn show(b: &[u8]) -> String {
    b.iter()
        .flat_map(|c| std::ascii::escape_default(*c))
        .map(char::from)
        .collect()
}
