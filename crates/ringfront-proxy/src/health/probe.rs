//! One probe of one peer: a TCP connect, or an HTTP request whose answer is judged by the
//! check's expectations, over TLS when the check's location proxies to `https://` (its
//! handshake is the one requests make). Runs on the checker thread only; never on a
//! worker. The head is read by the same reader as proxied responses.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use monoio::io::AsyncReadRent;
use monoio::net::TcpStream;
use ringfront_http::{BodyFraming, ChunkedDecoder, ResponseHead};

use super::outcome::{Outcome, Passed, ProbeFailure, Rejection};
use crate::check_rt::{CheckRt, ExpectRt, HeaderOpRt, ProbeKind, TestRt};
use crate::head_reader::{self, HeadError};
use crate::io::{read_more, write_all, IoFail};
use crate::stream::UpstreamStream;

/// The body examined by `body ~` tests.
pub const MAX_BODY: usize = 256 * 1024;

/// Probes `addr` (the peer's address, or its host with the check's `port`).
pub async fn probe(addr: SocketAddr, c: &CheckRt) -> Outcome {
    let addr = match c.port {
        Some(p) => SocketAddr::new(addr.ip(), p),
        None => addr,
    };
    let start = Instant::now();
    let tcp = match monoio::time::timeout(c.connect_timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(ProbeFailure::io(&e)),
        Err(_) => return Err(ProbeFailure::ConnectTimedOut),
    };
    let stream: UpstreamStream = match &c.tls {
        None => tcp.into(),
        Some(hs) => {
            let left = c.connect_timeout.saturating_sub(start.elapsed());
            crate::upstream_tls::connect(tcp, hs, left)
                .await
                .map_err(ProbeFailure::Handshake)?
        }
    };
    match &c.kind {
        ProbeKind::Tcp => Ok(Passed::Connected),
        ProbeKind::Http { request, expect } => {
            http(stream, request.clone(), expect, c.read_timeout).await
        }
    }
}

fn io_failure(e: IoFail, timed_out: ProbeFailure) -> ProbeFailure {
    match e {
        IoFail::Timeout => timed_out,
        IoFail::Io(e) => ProbeFailure::io(&e),
    }
}

async fn http(
    mut stream: UpstreamStream,
    request: Vec<u8>,
    expect: &ExpectRt,
    limit: Duration,
) -> Outcome {
    let deadline = Instant::now() + limit;
    let left = || deadline.saturating_duration_since(Instant::now());
    if let Err(e) = write_all(&mut stream, request, left()).await.0 {
        return Err(io_failure(e, ProbeFailure::SendTimedOut));
    }
    let (head, buf) = head_reader::read(&mut stream, Vec::with_capacity(4096), left).await;
    let head = head.map_err(|e| match e {
        HeadError::Io(e) => ProbeFailure::io(&e),
        HeadError::TimedOut => ProbeFailure::TimedOut,
        HeadError::Closed => ProbeFailure::ClosedBeforeResponse,
        HeadError::Invalid { error, .. } => ProbeFailure::InvalidResponse(error.to_string()),
        HeadError::TooBig => ProbeFailure::HeadTooLarge,
    })?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let headers: Vec<(String, String)> = head
        .headers
        .iter()
        .map(|h| (text(h.name.get(&buf)), text(h.value.get(&buf))))
        .collect();
    let body = read_body(&mut stream, &head, buf, left).await?;
    judge(expect, head.status, &headers, &body)
}

/// The body (its first `MAX_BODY` bytes, for `match` blocks' `body` tests): an answer
/// counts only once it arrived whole.
async fn read_body<S: AsyncReadRent>(
    stream: &mut S,
    head: &ResponseHead,
    mut buf: Vec<u8>,
    left: impl Fn() -> Duration,
) -> Result<Vec<u8>, ProbeFailure> {
    let framing = head.framing(false);
    let mut chunked = matches!(framing, BodyFraming::Chunked).then(ChunkedDecoder::new);
    let mut body = Vec::new();
    let mut fresh = buf.split_off(head.head_len.min(buf.len()));
    loop {
        let done = match (framing, chunked.as_mut()) {
            (BodyFraming::None, _) => true,
            (_, Some(dec)) => {
                let p = dec
                    .decode(&fresh, &mut body)
                    .map_err(|e| ProbeFailure::InvalidChunked(e.to_string()))?;
                p.done
            }
            (BodyFraming::Length(n), None) => {
                body.extend_from_slice(&fresh);
                body.len() as u64 >= n
            }
            _ => {
                body.extend_from_slice(&fresh);
                false
            }
        };
        if done || body.len() >= MAX_BODY {
            body.truncate(MAX_BODY);
            return Ok(body);
        }
        fresh.clear();
        let (r, b) = read_more(stream, fresh, 4096, left()).await;
        fresh = b;
        match r {
            Ok(0) if matches!(framing, BodyFraming::UntilClose) => return Ok(body),
            Ok(0) => return Err(ProbeFailure::ClosedMidBody),
            Ok(_) => {}
            Err(e) => return Err(io_failure(e, ProbeFailure::TimedOut)),
        }
    }
}

/// Whether the answer satisfies the expectation.
pub fn judge(expect: &ExpectRt, status: u16, headers: &[(String, String)], body: &[u8]) -> Outcome {
    let reject = |why| Err(ProbeFailure::Rejected { status, why });
    match expect {
        ExpectRt::Default if (200..400).contains(&status) => Ok(Passed::Http {
            status,
            matched: false,
        }),
        ExpectRt::Default => reject(Rejection::NotSuccess),
        ExpectRt::Classes(bits) => {
            let class = status / 100;
            if class < 8 && bits & (1 << class) != 0 {
                Ok(Passed::Http {
                    status,
                    matched: false,
                })
            } else {
                reject(Rejection::ClassNotExpected(class))
            }
        }
        ExpectRt::Match(tests) => match tests.iter().find(|t| !passes(t, status, headers, body)) {
            Some(t) => reject(Rejection::MatchFailed(describe(t))),
            None => Ok(Passed::Http {
                status,
                matched: true,
            }),
        },
    }
}

fn passes(t: &TestRt, status: u16, headers: &[(String, String)], body: &[u8]) -> bool {
    let value = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    match t {
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
