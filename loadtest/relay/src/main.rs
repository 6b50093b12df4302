//! The floor for `loadtest/run.sh`: the least a proxy of this topology can do per request.
//!
//! One monoio io_uring thread with ringfront's ring flags; upstream connections kept in a pool
//! (taken for a request, put back after its response, as a proxy's upstream `keepalive`
//! does, so a client connection per request still reuses them); per request: read a head,
//! write it upstream, read the response head, find its `Content-Length`, relay that many body
//! bytes back. A request that says `Connection: close` has that line taken out before it goes
//! upstream, gets `Connection: close` added to its response, and its connection closed after
//! it. No routing, no other header rewriting, no timers, no clock, no logs. A request body
//! (its `Content-Length`; no chunked bodies, no pipelining behind a body) follows its head
//! upstream as it arrives.
//!
//! With `--http` it is the second floor, `relay-http` (see `http.rs`): both heads parsed and
//! written anew without their hop-by-hop headers, what any HTTP proxy must do at least.
//! With `--splice` (or `--uring-splice`) the body goes through a pipe (see `splice.rs`).
//!
//! `ringfront-floor-relay [--http | --splice | --uring-splice] LISTEN_ADDR UPSTREAM_ADDR` (both
//! `IP:PORT`); prints `ready` on stderr.

mod http;
mod splice;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

const BUF: usize = 64 * 1024;
/// The largest body the `relay-http` floor copies behind a rebuilt head (one write, not two).
const SMALL_BODY: usize = 4096;
const CLOSE: &[u8] = b"connection: close\r\n";
const KEEP_ALIVE: &[u8] = b"connection: keep-alive\r\n";

/// The thread's idle upstream connections and spare buffers (last in, first out), so that a
/// connection per request costs neither a connect nor a fresh buffer's page faults.
#[derive(Default)]
struct Spares {
    upstreams: RefCell<Vec<TcpStream>>,
    bufs: RefCell<Vec<Vec<u8>>>,
}
type Pool = Rc<Spares>;

impl Spares {
    fn buf(&self) -> Vec<u8> {
        let spare = self.bufs.borrow_mut().pop();
        spare.unwrap_or_else(|| Vec::with_capacity(BUF))
    }

    /// Keeps `buf` for a later connection unless an error took it (left empty).
    fn keep(&self, buf: Vec<u8>) {
        if buf.capacity() > 0 {
            self.bufs.borrow_mut().push(buf);
        }
    }

    async fn upstream(&self, addr: SocketAddr) -> std::io::Result<TcpStream> {
        let popped = self.upstreams.borrow_mut().pop();
        match popped {
            Some(up) => Ok(up),
            None => {
                let up = TcpStream::connect(addr).await?;
                let _ = up.set_nodelay(true);
                Ok(up)
            }
        }
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let http = args.first().is_some_and(|a| a == "--http");
    if http {
        args.remove(0);
    }
    let body = match args.first().map(String::as_str) {
        Some("--splice") => splice::Kind::Splice,
        Some("--uring-splice") => splice::Kind::UringSplice,
        _ => splice::Kind::Copy,
    };
    if body != splice::Kind::Copy {
        args.remove(0);
    }
    let (Some(listen), Some(upstream)) = (args.first(), args.get(1)) else {
        eprintln!(
            "usage: ringfront-floor-relay [--http | --splice | --uring-splice] LISTEN_ADDR UPSTREAM_ADDR"
        );
        std::process::exit(2);
    };
    let (listen, upstream): (SocketAddr, SocketAddr) = match (listen.parse(), upstream.parse()) {
        (Ok(l), Ok(u)) => (l, u),
        _ => {
            eprintln!("addresses are IP:PORT");
            std::process::exit(2);
        }
    };
    let mut urb = io_uring::IoUring::builder();
    urb.setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun();
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(1024)
        .uring_builder(urb)
        .build()
        .expect("io_uring runtime");
    rt.block_on(serve(listen, upstream, http, body));
}

async fn serve(listen: SocketAddr, upstream: SocketAddr, http: bool, body: splice::Kind) {
    let listener = TcpListener::bind(listen).expect("bind");
    let pool = Pool::default();
    eprintln!("ready");
    loop {
        if let Ok((client, _)) = listener.accept().await {
            let pool = pool.clone();
            monoio::spawn(async move {
                let mut buf = pool.buf();
                if http {
                    let mut out = pool.buf();
                    let _ = relay_http(client, &pool, upstream, &mut buf, &mut out).await;
                    pool.keep(out);
                } else {
                    let mut body = splice::Body::new(body);
                    let _ = relay(client, &pool, upstream, &mut buf, &mut body).await;
                }
                pool.keep(buf);
            });
        }
    }
}

/// Requests of one client connection, in turn, each over a pooled upstream connection.
/// `spare` is the connection's buffer, left in it at the end (empty when an error took it).
async fn relay(
    mut client: TcpStream,
    pool: &Pool,
    upstream: SocketAddr,
    spare: &mut Vec<u8>,
    body: &mut splice::Body,
) -> std::io::Result<()> {
    let _ = client.set_nodelay(true);
    let mut buf = std::mem::take(spare);
    loop {
        buf = read_head(&mut client, buf).await?;
        let len = buf.len();
        let sent = head_len(&buf).map_or(len, |h| h + content_length(&buf[..h]));
        let close = take_line(&mut buf, len, CLOSE);
        let mut up = pool.upstream(upstream).await?;
        let (r, b) = up.write_all(buf).await;
        r?;
        let b = forward_body(&mut client, &mut up, b, sent.saturating_sub(len)).await?;
        buf = match body.spliced() {
            true => splice::read_head_small(&mut up, b).await?,
            false => read_head(&mut up, b).await?,
        };
        let mut head = head_len(&buf).unwrap_or(buf.len());
        let mut left = head + content_length(&buf[..head]);
        if close {
            if take_line(&mut buf, head, KEEP_ALIVE) {
                head -= KEEP_ALIVE.len();
                left -= KEEP_ALIVE.len();
            }
            buf.splice(head - 2..head - 2, CLOSE.iter().copied());
            left += CLOSE.len();
        }
        loop {
            let n = buf.len();
            let (r, b) = client.write_all(buf).await;
            r?;
            if n >= left {
                buf = b;
                break;
            }
            left -= n;
            if body.spliced() {
                body.splice(&mut up, &mut client, left).await?;
                buf = b;
                break;
            }
            buf = read_some(&mut up, b).await?;
        }
        pool.upstreams.borrow_mut().push(up);
        if close {
            *spare = buf;
            return Ok(());
        }
    }
}

/// `relay` for the `relay-http` floor: the head read into `buf` goes out rebuilt from `out`.
/// Both buffers are left in place at the end (empty when an error took them).
async fn relay_http(
    mut client: TcpStream,
    pool: &Pool,
    upstream: SocketAddr,
    spare: &mut Vec<u8>,
    spare_out: &mut Vec<u8>,
) -> std::io::Result<()> {
    let _ = client.set_nodelay(true);
    let (mut buf, mut out) = (std::mem::take(spare), std::mem::take(spare_out));
    let invalid = || std::io::Error::from(std::io::ErrorKind::InvalidData);
    loop {
        buf = read_head(&mut client, buf).await?;
        let (close, head) = http::request(&buf, &mut out).ok_or_else(invalid)?;
        // The body bytes read with the head go out with the rebuilt head, in one write.
        let length = content_length(&buf[..head]);
        let with_head = buf.len().min(head + length) - head;
        out.extend_from_slice(&buf[head..head + with_head]);
        let mut up = pool.upstream(upstream).await?;
        let (r, o) = up.write_all(out).await;
        r?;
        out = o;
        buf = forward_body(&mut client, &mut up, buf, length - with_head).await?;
        buf = read_head(&mut up, buf).await?;
        let (head, length) = http::response(&buf, close, &mut out).ok_or_else(invalid)?;
        let body = buf.len().min(head + length) - head;
        let mut left = length - body;
        // A small body goes in the head's write; a large one's first piece is written from
        // where it was read, uncopied.
        if body <= SMALL_BODY {
            out.extend_from_slice(&buf[head..head + body]);
        }
        let (r, o) = client.write_all(out).await;
        r?;
        out = o;
        if body > SMALL_BODY {
            let (r, b) = client.write_all(buf.slice(head..head + body)).await;
            r?;
            buf = b.into_inner();
        }
        while left > 0 {
            buf = read_some(&mut up, buf).await?;
            left = left.saturating_sub(buf.len());
            let (r, b) = client.write_all(buf).await;
            r?;
            buf = b;
        }
        pool.upstreams.borrow_mut().push(up);
        if close {
            (*spare, *spare_out) = (buf, out);
            return Ok(());
        }
    }
}

/// Writes upstream the `left` request-body bytes that did not come with the head, a read
/// at a time as they arrive.
async fn forward_body(
    client: &mut TcpStream,
    up: &mut TcpStream,
    mut buf: Vec<u8>,
    mut left: usize,
) -> std::io::Result<Vec<u8>> {
    while left > 0 {
        buf = read_some(client, buf).await?;
        left = left.saturating_sub(buf.len());
        let (r, b) = up.write_all(buf).await;
        r?;
        buf = b;
    }
    Ok(buf)
}

/// Takes `line` (compared without case, after a line's end) out of the head that is `buf`'s
/// first `head` bytes: true when it was there.
fn take_line(buf: &mut Vec<u8>, head: usize, line: &[u8]) -> bool {
    let found = buf[..head]
        .windows(line.len() + 2)
        .position(|w| w[..2] == *b"\r\n" && w[2..].eq_ignore_ascii_case(line));
    if let Some(at) = found {
        buf.drain(at + 2..at + 2 + line.len());
    }
    found.is_some()
}

/// Reads (into an emptied `buf`) until it holds a whole head; EOF is an error.
async fn read_head(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    buf.clear();
    while head_len(&buf).is_none() {
        buf = read_more(s, buf).await?;
    }
    Ok(buf)
}

/// Reads one piece into an emptied `buf`.
async fn read_some(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    buf.clear();
    read_more(s, buf).await
}

async fn read_more(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    if buf.len() == buf.capacity() {
        buf.reserve(BUF);
    }
    let start = buf.len();
    let (r, b) = s.read(buf.slice_mut(start..)).await;
    buf = b.into_inner();
    match r? {
        0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
        _ => Ok(buf),
    }
}

pub(crate) fn head_len(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &[u8]) -> usize {
    head.split(|&c| c == b'\n')
        .find_map(|line| {
            let (name, value) = line.split_at(line.iter().position(|&c| c == b':')?);
            name.eq_ignore_ascii_case(b"content-length").then(|| {
                std::str::from_utf8(&value[1..])
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
            })?
        })
        .unwrap_or(0)
}
