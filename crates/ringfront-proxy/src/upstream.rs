//! One try against one peer: take an idle pooled connection or connect, send the request,
//! read and parse the response head. Failures come back classified the way
//! `proxy_next_upstream` needs them (error / timeout / invalid_header), worded as nginx logs
//! them. The pool watches idle connections, so one the peer has closed is gone before a
//! take meets it (as nginx's armed read event); one that fails after being reused is
//! reported as `cached`, so the caller can give the try back as nginx does.

use std::cell::RefCell;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use monoio::net::TcpStream;
use ringfront_http::ResponseHead;
use ringfront_upstream::FailKind;

use crate::io::{errno_text, read_more, write_shared, IoFail};
use crate::pool::Pool;

/// nginx's failure classes for `proxy_next_upstream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ft {
    Error,
    Timeout,
    InvalidHeader,
}

#[derive(Debug)]
pub struct Failure {
    pub ft: Ft,
    /// nginx's message, e.g. `connect() failed (111: Connection refused) while connecting to upstream`.
    pub msg: String,
    /// Some of the request was written (matters for non-idempotent methods).
    pub request_sent: bool,
    /// The try used a reused keepalive connection (nginx's `peer.cached`).
    pub cached: bool,
    pub connect_time: Option<Duration>,
    /// The connect was refused (the peer's port is closed).
    pub refused: bool,
}

impl Failure {
    /// The kind the health board counts.
    pub fn kind(&self) -> FailKind {
        match self.ft {
            Ft::Timeout => FailKind::Timeout,
            Ft::InvalidHeader => FailKind::InvalidHeader,
            Ft::Error if self.refused => FailKind::Refused,
            Ft::Error => FailKind::Error,
        }
    }
}

pub struct Got {
    pub stream: TcpStream,
    pub head: ResponseHead,
    /// Requests served on this connection before this one.
    pub requests: u64,
    pub connect_time: Duration,
    pub header_time: Duration,
}

/// The response-head size ringfront accepts (nginx: `proxy_buffer_size`, 4k|8k; larger
/// heads are common enough behind modern apps that ringfront allows 64k).
const MAX_RESPONSE_HEAD: usize = 64 * 1024;

pub struct Params {
    pub addr: SocketAddr,
    pub peer: usize,
    pub connect_timeout: Duration,
    pub send_timeout: Duration,
    pub read_timeout: Duration,
}

fn fail(ft: Ft, msg: String, request_sent: bool, connect_time: Option<Duration>) -> Failure {
    Failure {
        ft,
        msg,
        request_sent,
        cached: false,
        connect_time,
        refused: false,
    }
}

/// Runs one try. `rbuf` comes back holding the response head and whatever body bytes
/// arrived with it.
pub async fn attempt(
    p: &Params,
    pool: &RefCell<Pool>,
    request: &Rc<Vec<u8>>,
    mut rbuf: Vec<u8>,
) -> (Result<Got, Failure>, Vec<u8>) {
    let started = Instant::now();
    let mut pooled = None;
    while pooled.is_none() {
        let taken = pool.borrow_mut().take(p.peer);
        let Some(idle) = taken else { break };
        pooled = idle.stream().await;
    }
    rbuf.clear();
    let reused = pooled.is_some();
    // nginx's `peer.cached`: errors on a reused connection are reported as such.
    let fail = |ft, msg, sent, ct| Failure {
        cached: reused,
        ..fail(ft, msg, sent, ct)
    };
    let (mut stream, requests) = match pooled.take() {
        Some(idle) => idle,
        None => {
            match monoio::time::timeout(p.connect_timeout, TcpStream::connect_addr(p.addr)).await {
                Ok(Ok(s)) => {
                    let _ = s.set_nodelay(true);
                    (s, 0)
                }
                Ok(Err(e)) => {
                    let msg = format!(
                        "connect() failed {} while connecting to upstream",
                        errno_text(&e)
                    );
                    let refused = e.kind() == ErrorKind::ConnectionRefused;
                    return (
                        Err(Failure {
                            refused,
                            ..fail(Ft::Error, msg, false, None)
                        }),
                        rbuf,
                    );
                }
                Err(_) => {
                    let msg = "upstream timed out (110: Connection timed out) while connecting to upstream".to_string();
                    return (Err(fail(Ft::Timeout, msg, false, None)), rbuf);
                }
            }
        }
    };
    let connect_time = started.elapsed();
    let ct = Some(connect_time);
    match write_shared(&mut stream, request.clone(), p.send_timeout).await {
        Ok(()) => {}
        Err(IoFail::Io(e)) => {
            let msg = format!(
                "writev() failed {} while sending request to upstream",
                errno_text(&e)
            );
            return (Err(fail(Ft::Error, msg, true, ct)), rbuf);
        }
        Err(IoFail::Timeout) => {
            let msg =
                "upstream timed out (110: Connection timed out) while sending request to upstream"
                    .to_string();
            return (Err(fail(Ft::Timeout, msg, true, ct)), Vec::new());
        }
    }
    let mut head = ResponseHead::new();
    loop {
        if !rbuf.is_empty() {
            match head.parse(&rbuf) {
                // Interim 1xx responses (other than 101) are skipped, as nginx does.
                Ok(Some(n)) if (100..200).contains(&head.status) && head.status != 101 => {
                    rbuf.drain(..n);
                    continue;
                }
                Ok(Some(n)) if n > MAX_RESPONSE_HEAD => {
                    let msg =
                        "upstream sent too big header while reading response header from upstream"
                            .to_string();
                    return (Err(fail(Ft::InvalidHeader, msg, true, ct)), rbuf);
                }
                Ok(Some(_)) => {
                    let got = Got {
                        stream,
                        head,
                        requests,
                        connect_time,
                        header_time: started.elapsed(),
                    };
                    return (Ok(got), rbuf);
                }
                Ok(None) if rbuf.len() > MAX_RESPONSE_HEAD => {
                    let msg =
                        "upstream sent too big header while reading response header from upstream"
                            .to_string();
                    return (Err(fail(Ft::InvalidHeader, msg, true, ct)), rbuf);
                }
                Ok(None) => {}
                Err(_) => {
                    let msg = if rbuf.starts_with(b"HTTP/") {
                        "upstream sent invalid header while reading response header from upstream"
                    } else {
                        "upstream sent no valid HTTP/1.0 header while reading response header from upstream"
                    };
                    return (
                        Err(fail(Ft::InvalidHeader, msg.to_string(), true, ct)),
                        rbuf,
                    );
                }
            }
        }
        let (r, b) = read_more(&mut stream, rbuf, 4096, p.read_timeout).await;
        rbuf = b;
        match r {
            Ok(0) => {
                let msg = "upstream prematurely closed connection while reading response header from upstream".to_string();
                return (Err(fail(Ft::Error, msg, true, ct)), rbuf);
            }
            Err(IoFail::Io(e)) => {
                let msg = format!(
                    "recv() failed {} while reading response header from upstream",
                    errno_text(&e)
                );
                return (Err(fail(Ft::Error, msg, true, ct)), rbuf);
            }
            Err(IoFail::Timeout) => {
                let msg = "upstream timed out (110: Connection timed out) while reading response header from upstream".to_string();
                return (Err(fail(Ft::Timeout, msg, true, ct)), Vec::new());
            }
            Ok(_) => {}
        }
    }
}
