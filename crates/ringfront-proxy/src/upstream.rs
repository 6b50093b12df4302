//! The I/O of one try, step by step as the exchange machine asks for them: open a connection
//! to the peer (or take an idle pooled one: the pool watches idle connections, so one the
//! peer has closed is gone before a take meets it, as with nginx's armed read event) and,
//! for `proxy_pass https://`, run the TLS handshake; write the request, read the response
//! head. Each step ends in an `Event` for the machine; failures carry their phase and cause.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use monoio::net::TcpStream;

use crate::stream::UpstreamStream;
use ringfront_http::ResponseHead;
use ringfront_upstream::exchange::{Cause, Failure, Phase};
use ringfront_upstream::PeerId;

use crate::head_reader::{self, HeadError};
use crate::pool::Pool;
use crate::snapshot::GroupConf;
use crate::upstream_request::Request;
use crate::upstream_tls::{self, Handshake};

/// A connection to the peer of the current try.
pub struct Conn {
    pub stream: UpstreamStream,
    /// Requests served on it before this one (0 for a new connection).
    pub requests: u64,
    pub reused: bool,
    /// What it speaks, for the pool (0 plain, else `Handshake::tag`).
    pub tag: u64,
    /// When it was made (`clock::now_ms`), for upstream `keepalive_time`.
    pub born: u64,
}

/// Where and how long to wait.
pub struct Target<'a> {
    pub addr: SocketAddr,
    pub peer: PeerId,
    /// Bounds the TCP connect and the TLS handshake together, as in nginx.
    pub connect_timeout: Duration,
    /// `proxy_pass https://`: the handshake after the connect.
    pub tls: Option<&'a Handshake>,
    /// `proxy_bind`: the local address to connect from.
    pub local: Option<SocketAddr>,
    /// `proxy_bind ... transparent`.
    pub transparent: bool,
    /// A unix-domain peer's socket (`addr` is then unused).
    pub unix: Option<&'a std::path::Path>,
    /// `proxy_socket_keepalive on`: `SO_KEEPALIVE` on a new TCP connection (the system's
    /// probe timings, as nginx).
    pub so_keepalive: bool,
}

impl Target<'_> {
    /// What a pooled connection must have been made with to serve this try: its TLS
    /// settings and, with `proxy_bind`, its local address (a request bound elsewhere gets a
    /// new connection rather than one from another address).
    fn tag(&self) -> u64 {
        let tls = self.tls.map_or(0, |h| h.tag);
        match self.local {
            None => tls,
            Some(local) => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (tls, local).hash(&mut h);
                h.finish() | 1
            }
        }
    }
}

fn timed_out(phase: Phase) -> Failure {
    Failure::new(phase, Cause::TimedOut)
}

/// An idle pooled connection to the peer, or a new one.
pub async fn connect(pool: &RefCell<Pool>, t: &Target<'_>) -> Result<Conn, Failure> {
    if let Some(idle) = take_pooled(pool, t.peer, t.tag()).await {
        return Ok(idle);
    }
    // Boxed, as the bound connect below: rare paths do not grow every request's future.
    if let Some(path) = t.unix {
        return Box::pin(connect_unix(path, t)).await;
    }
    let start = Instant::now();
    let born = crate::clock::now_ms();
    let connecting = async {
        match t.local {
            None => TcpStream::connect_addr(t.addr).await,
            Some(local) => Box::pin(crate::bind::connect_from(t.addr, local, t.transparent)).await,
        }
    };
    // The worker's deadline queue, not a monoio timer (640 bytes aligned to 128, inline in
    // every request's future).
    let tcp = match crate::deadline::timeout(t.connect_timeout, connecting).await {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return Err(Failure::io(Phase::Connect, &e)),
        Err(_) => return Err(timed_out(Phase::Connect)),
    };
    let _ = tcp.set_nodelay(true);
    if t.so_keepalive {
        // No timings given: only SO_KEEPALIVE is set.
        if let Err(e) = tcp.set_tcp_keepalive(None, None, None) {
            return Err(Failure::io(Phase::Connect, &e));
        }
    }
    let stream = match t.tls {
        None => tcp.into(),
        Some(hs) => {
            let left = t.connect_timeout.saturating_sub(start.elapsed());
            upstream_tls::connect(tcp, hs, left).await?
        }
    };
    Ok(Conn {
        stream,
        requests: 0,
        reused: false,
        tag: t.tag(),
        born,
    })
}

/// A new connection to a unix-domain peer (`proxy_connect_timeout` bounds it).
async fn connect_unix(path: &std::path::Path, t: &Target<'_>) -> Result<Conn, Failure> {
    let born = crate::clock::now_ms();
    let connecting = monoio::net::UnixStream::connect(path);
    match crate::deadline::timeout(t.connect_timeout, connecting).await {
        Ok(Ok(s)) => Ok(Conn {
            stream: UpstreamStream::Unix(s),
            requests: 0,
            reused: false,
            tag: t.tag(),
            born,
        }),
        Ok(Err(e)) => Err(Failure::io(Phase::Connect, &e)),
        Err(_) => Err(timed_out(Phase::Connect)),
    }
}

/// The peer's most recently used idle connection that is still alive (the pool watches
/// idle connections, so one the peer closed is gone before a take meets it) and speaks
/// what this request needs (`tag`): one that does not is closed and a new one is made.
async fn take_pooled(pool: &RefCell<Pool>, peer: PeerId, tag: u64) -> Option<Conn> {
    loop {
        // The borrow ends before the await: another request may use the pool meanwhile.
        let taken = pool.borrow_mut().take(peer)?;
        if taken.tag() != tag {
            return None;
        }
        let born = taken.born();
        if let Some((stream, requests)) = taken.stream().await {
            return Some(Conn {
                stream,
                requests,
                reused: true,
                tag,
                born,
            });
        }
    }
}

/// Puts a connection that finished a response cleanly back into the pool, unless it is
/// older than the group's `keepalive_time` (nginx checks its age when it frees the peer,
/// so an old pooled connection still carries the request that takes it).
pub fn pool(pool: &RefCell<Pool>, group: usize, peer: PeerId, g: &GroupConf, conn: Conn) {
    if outlived(conn.born, crate::clock::now_ms(), g.keepalive_time) {
        return;
    }
    pool.borrow_mut().put_tagged(
        group,
        peer,
        (g.keepalive, g.keepalive_timeout),
        conn.stream,
        conn.requests + 1,
        (conn.tag, conn.born),
    );
}

/// Whether a connection made at `born` is past `keepalive_time` at `now` (milliseconds).
fn outlived(born: u64, now: u64, keepalive_time: Duration) -> bool {
    u128::from(now.saturating_sub(born)) > keepalive_time.as_millis()
}

/// Writes the whole request: head and body in one `writev` (a head alone in one `send`),
/// the rest after a short write in more (`proxy_send_timeout` bounds each, as nginx's send
/// timer does).
pub async fn send(conn: &mut Conn, request: &Request, limit: Duration) -> Result<(), Failure> {
    use monoio::io::AsyncWriteRent;
    let total = request.0.len();
    let mut done = 0;
    while done < total {
        let head = if done == 0 { request.head_only() } else { None };
        let r = if let Some(head) = head {
            crate::deadline::timeout(limit, conn.stream.write(head))
                .await
                .map(|(r, _)| r)
        } else if done == 0 {
            crate::deadline::timeout(limit, conn.stream.writev(request.clone()))
                .await
                .map(|(r, _)| r)
        } else {
            crate::deadline::timeout(limit, conn.stream.writev(request.rest(done)))
                .await
                .map(|(r, _)| r)
        };
        match r {
            Ok(Ok(0)) => return Err(Failure::new(Phase::SendRequest, Cause::Closed)),
            Ok(Ok(n)) => done += n,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(Failure::io(Phase::SendRequest, &e)),
            Err(_) => return Err(timed_out(Phase::SendRequest)),
        }
    }
    Ok(())
}

/// Reads the response head into `rbuf` (cleared first).
pub async fn read_head(
    conn: &mut Conn,
    mut rbuf: Vec<u8>,
    limit: Duration,
) -> (Result<ResponseHead, Failure>, Vec<u8>) {
    rbuf.clear();
    let (r, rbuf) = head_reader::read(&mut conn.stream, rbuf, || limit).await;
    let r = r.map_err(|e| {
        let cause = match e {
            HeadError::Io(e) => return Failure::io(Phase::ReadHead, &e),
            HeadError::TimedOut => Cause::TimedOut,
            HeadError::Closed => Cause::Closed,
            HeadError::Invalid { http: true, .. } => Cause::InvalidHeader,
            HeadError::Invalid { http: false, .. } => Cause::NoValidHeader,
            HeadError::TooBig => Cause::TooBigHeader,
        };
        Failure::new(Phase::ReadHead, cause)
    });
    (r, rbuf)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::rc::Rc;

    use super::*;
    use crate::testutil::on_both;
    use crate::upstream_request::{Outbound, Request};

    /// Upstream `keepalive_time` with injected times: the age limit is inclusive, as
    /// nginx's `ngx_current_msec - c->start_time > time`.
    #[test]
    fn keepalive_time_with_injected_age() {
        let two = Duration::from_secs(2);
        assert!(!outlived(1_000, 1_000, two));
        assert!(!outlived(1_000, 3_000, two));
        assert!(outlived(1_000, 3_001, two));
        assert!(
            !outlived(5_000, 1_000, two),
            "a clock that went back is no age"
        );
    }

    fn target(addr: SocketAddr) -> Target<'static> {
        Target {
            addr,
            peer: 0,
            connect_timeout: Duration::from_secs(5),
            local: None,
            transparent: false,
            unix: None,
            tls: None,
            so_keepalive: false,
        }
    }

    #[test]
    fn a_refused_connect_is_a_typed_connect_failure() {
        on_both(|| async {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            drop(l);
            let pool = RefCell::new(Pool::new(1));
            let Err(f) = connect(&pool, &target(addr)).await else {
                panic!("connected to a closed port")
            };
            assert_eq!(f, Failure::new(Phase::Connect, Cause::Os(111)));
            assert_eq!(f.kind(), ringfront_upstream::FailKind::Refused);
        });
    }

    /// A backend that accepts one connection and then does `then` with it.
    fn backend(then: impl FnOnce(std::net::TcpStream) + Send + 'static) -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                then(s);
            }
        });
        addr
    }

    async fn head_failure(addr: SocketAddr, limit: Duration) -> Failure {
        let pool = RefCell::new(Pool::new(1));
        let mut conn = connect(&pool, &target(addr)).await.unwrap();
        assert!(!conn.reused);
        match read_head(&mut conn, Vec::new(), limit).await.0 {
            Err(f) => f,
            Ok(h) => panic!("a head with status {}", h.status),
        }
    }

    #[test]
    fn head_failures_carry_their_cause() {
        on_both(|| async {
            let closed = backend(drop);
            let f = head_failure(closed, Duration::from_secs(5)).await;
            assert_eq!(f, Failure::new(Phase::ReadHead, Cause::Closed));
            let garbage = backend(|mut s| {
                let _ = s.write_all(b"SSH-2.0-OpenSSH\r\n\r\n");
                std::thread::sleep(Duration::from_millis(200));
            });
            let f = head_failure(garbage, Duration::from_secs(5)).await;
            assert_eq!(f.cause, Cause::NoValidHeader);
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let silent = backend(move |_s| {
                let _ = rx.recv();
            });
            let f = head_failure(silent, Duration::from_millis(50)).await;
            assert_eq!(f, Failure::new(Phase::ReadHead, Cause::TimedOut));
            assert_eq!(f.status(), 504);
            drop(tx);
        });
    }

    /// A request larger than the socket buffers goes out in several writes; every byte
    /// arrives once, in order.
    #[test]
    fn a_large_request_survives_short_writes() {
        on_both(|| async {
            let body: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 251) as u8).collect();
            let head = b"POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 8388608\r\n\r\n".to_vec();
            let want = [&head[..], &body[..]].concat();
            let (tx, rx) = std::sync::mpsc::channel();
            let total = want.len();
            let addr = backend(move |mut s| {
                let mut got = vec![0u8; total];
                let mut n = 0;
                while n < got.len() {
                    match s.read(&mut got[n..]) {
                        Ok(0) | Err(_) => break,
                        Ok(k) => n += k,
                    }
                }
                got.truncate(n);
                let _ = tx.send(got);
            });
            let pool = RefCell::new(Pool::new(1));
            let mut conn = connect(&pool, &target(addr)).await.unwrap();
            let req = Request(Rc::new(Outbound::for_test(head, body)));
            send(&mut conn, &req, Duration::from_secs(10))
                .await
                .unwrap();
            let got = rx.recv().unwrap();
            assert_eq!(got.len(), want.len());
            assert!(got == want, "bytes differ");
        });
    }
}
