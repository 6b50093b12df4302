//! One probe of one peer: a TCP connect, or an HTTP request whose answer is judged by the
//! check's expectations. Runs on the checker thread only; never on a worker.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use monoio::net::TcpStream;
use ringfront_http::{BodyFraming, ChunkedDecoder, ResponseHead};

use super::rt::{CheckRt, ExpectRt, HeaderOpRt, ProbeKind, TestRt};
use crate::io::{read_more, write_all, IoFail};

/// The body examined by `body ~` tests.
pub const MAX_BODY: usize = 256 * 1024;
/// The largest response head a probe accepts.
const MAX_HEAD: usize = 64 * 1024;

/// `Ok(what passed)` or `Err(why it failed)`, both short phrases for log lines.
pub type Outcome = Result<String, String>;

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect refused".into(),
        std::io::ErrorKind::ConnectionReset => "connection reset".into(),
        _ => format!("error {}", crate::io::errno_text(e)),
    }
}

/// Probes `addr` (the peer's address, or its host with the check's `port`).
pub async fn probe(addr: SocketAddr, c: &CheckRt) -> Outcome {
    let addr = match c.port {
        Some(p) => SocketAddr::new(addr.ip(), p),
        None => addr,
    };
    let stream = match monoio::time::timeout(c.connect_timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(io_reason(&e)),
        Err(_) => return Err("connect timed out".into()),
    };
    match &c.kind {
        ProbeKind::Tcp => Ok("connected".into()),
        ProbeKind::Http { request, expect } => {
            http(stream, request.clone(), expect, c.read_timeout).await
        }
    }
}

async fn http(
    mut stream: TcpStream,
    request: Vec<u8>,
    expect: &ExpectRt,
    limit: Duration,
) -> Outcome {
    let deadline = Instant::now() + limit;
    let left = || deadline.saturating_duration_since(Instant::now());
    match write_all(&mut stream, request, left()).await.0 {
        Ok(()) => {}
        Err(IoFail::Timeout) => return Err("send timed out".into()),
        Err(IoFail::Io(e)) => return Err(io_reason(&e)),
    }
    let mut buf = Vec::with_capacity(4096);
    let mut head = ResponseHead::new();
    let mut body = Vec::new();
    let mut chunked: Option<ChunkedDecoder> = None;
    let mut framing = None;
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut taken = 0; // bytes of `buf` already consumed as head/body
    loop {
        if framing.is_none() {
            match head.parse(&buf) {
                Ok(Some(n)) => {
                    taken = n;
                    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                    headers = head
                        .headers
                        .iter()
                        .map(|h| (text(h.name.get(&buf)), text(h.value.get(&buf))))
                        .collect();
                    let f = head.framing(false);
                    if matches!(f, BodyFraming::Chunked) {
                        chunked = Some(ChunkedDecoder::new());
                    }
                    framing = Some(f);
                }
                Ok(None) if buf.len() > MAX_HEAD => return Err("response head too large".into()),
                Ok(None) => {}
                Err(e) => return Err(format!("invalid response ({e})")),
            }
        }
        if let Some(f) = framing {
            let fresh = buf.get(taken..).unwrap_or_default();
            let done = match (f, chunked.as_mut()) {
                (BodyFraming::None, _) => true,
                (_, Some(dec)) => {
                    let mut out = Vec::new();
                    match dec.decode(fresh, &mut out) {
                        Ok(p) => {
                            body.extend_from_slice(&out);
                            p.done
                        }
                        Err(e) => return Err(format!("invalid chunked body ({e})")),
                    }
                }
                (BodyFraming::Length(n), None) => {
                    body.extend_from_slice(fresh);
                    body.len() as u64 >= n
                }
                _ => {
                    body.extend_from_slice(fresh);
                    false
                }
            };
            if done || body.len() >= MAX_BODY {
                break;
            }
            // Keep only what the judge needs: drop consumed body bytes from the read buffer.
            buf.clear();
            taken = 0;
        }
        let (r, b) = read_more(&mut stream, buf, 4096, left()).await;
        buf = b;
        match r {
            Ok(0) if matches!(framing, Some(BodyFraming::UntilClose)) => break,
            Ok(0) if framing.is_some() => return Err("connection closed mid-body".into()),
            Ok(0) => return Err("connection closed before a response".into()),
            Ok(_) => {}
            Err(IoFail::Timeout) => return Err("timed out".into()),
            Err(IoFail::Io(e)) => return Err(io_reason(&e)),
        }
    }
    body.truncate(MAX_BODY);
    judge(expect, head.status, &headers, &body)
}

/// Whether the answer satisfies the expectation.
pub fn judge(expect: &ExpectRt, status: u16, headers: &[(String, String)], body: &[u8]) -> Outcome {
    let fail = |why: String| Err(format!("HTTP {status}: {why}"));
    match expect {
        ExpectRt::Default => {
            if (200..400).contains(&status) {
                Ok(format!("HTTP {status}"))
            } else {
                fail("not 2xx or 3xx".into())
            }
        }
        ExpectRt::Classes(bits) => {
            let class = status / 100;
            if class < 8 && bits & (1 << class) != 0 {
                Ok(format!("HTTP {status}"))
            } else {
                fail(format!("{class}xx not expected"))
            }
        }
        ExpectRt::Match(tests) => {
            let value = |name: &str| {
                headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.as_str())
            };
            for t in tests {
                let ok = match t {
                    TestRt::Status { negate, ranges } => {
                        ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&status)) != *negate
                    }
                    TestRt::Header { name, op } => match (op, value(name)) {
                        (HeaderOpRt::Present, v) => v.is_some(),
                        (HeaderOpRt::Absent, v) => v.is_none(),
                        (HeaderOpRt::Equals(x), Some(v)) => v == x,
                        (HeaderOpRt::NotEquals(x), Some(v)) => v != x,
                        (HeaderOpRt::Matches(re), Some(v)) => re.is_match(v),
                        (HeaderOpRt::NotMatches(re), Some(v)) => !re.is_match(v),
                        (_, None) => false,
                    },
                    TestRt::Body { negate, re } => re.is_match(body) != *negate,
                };
                if !ok {
                    return fail(format!("match failed on {}", describe(t)));
                }
            }
            Ok(format!("HTTP {status}, match passed"))
        }
    }
}

fn describe(t: &TestRt) -> String {
    match t {
        TestRt::Status { negate, .. } => format!("status{}", if *negate { " !" } else { "" }),
        TestRt::Header { name, .. } => format!("header {name}"),
        TestRt::Body { negate, re } => {
            format!(
                "body {} \"{}\"",
                if *negate { "!~" } else { "~" },
                re.as_str()
            )
        }
    }
}
