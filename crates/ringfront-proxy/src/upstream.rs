//! The I/O of one try, step by step as the exchange machine asks for them: open a connection
//! to the peer (or take an idle pooled one: the pool watches idle connections, so one the
//! peer has closed is gone before a take meets it, as with nginx's armed read event), write
//! the request, read the response head. Each step ends in an `Event` for the machine;
//! failures carry their phase and cause.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use monoio::net::TcpStream;
use ringfront_http::ResponseHead;
use ringfront_upstream::exchange::{Cause, Failure, Phase};
use ringfront_upstream::PeerId;

use crate::head_reader::{self, HeadError};
use crate::pool::Pool;
use crate::snapshot::GroupConf;
use crate::upstream_request::Request;

/// A connection to the peer of the current try.
pub struct Conn {
    pub stream: TcpStream,
    /// Requests served on it before this one (0 for a new connection).
    pub requests: u64,
    pub reused: bool,
}

/// Where and how long to wait.
pub struct Target {
    pub addr: SocketAddr,
    pub peer: PeerId,
    pub connect_timeout: Duration,
}

fn timed_out(phase: Phase) -> Failure {
    Failure::new(phase, Cause::TimedOut)
}

/// An idle pooled connection to the peer, or a new one.
pub async fn connect(pool: &RefCell<Pool>, t: &Target) -> Result<Conn, Failure> {
    if let Some(idle) = take_pooled(pool, t.peer).await {
        return Ok(idle);
    }
    match monoio::time::timeout(t.connect_timeout, TcpStream::connect_addr(t.addr)).await {
        Ok(Ok(stream)) => {
            let _ = stream.set_nodelay(true);
            Ok(Conn {
                stream,
                requests: 0,
                reused: false,
            })
        }
        Ok(Err(e)) => Err(Failure::io(Phase::Connect, &e)),
        Err(_) => Err(timed_out(Phase::Connect)),
    }
}

/// The peer's most recently used idle connection that is still alive (the pool watches
/// idle connections, so one the peer closed is gone before a take meets it).
async fn take_pooled(pool: &RefCell<Pool>, peer: PeerId) -> Option<Conn> {
    loop {
        // The borrow ends before the await: another request may use the pool meanwhile.
        let taken = pool.borrow_mut().take(peer)?;
        if let Some((stream, requests)) = taken.stream().await {
            return Some(Conn {
                stream,
                requests,
                reused: true,
            });
        }
    }
}

/// Puts a connection that finished a response cleanly back into the pool.
pub fn pool(pool: &RefCell<Pool>, group: usize, peer: PeerId, g: &GroupConf, conn: Conn) {
    pool.borrow_mut().put(
        group,
        peer,
        g.keepalive,
        g.keepalive_timeout,
        conn.stream,
        conn.requests + 1,
    );
}

/// Writes the whole request: head and body in one `writev`, the rest after a short write
/// in more (`proxy_send_timeout` bounds each, as nginx's send timer does).
pub async fn send(conn: &mut Conn, request: &Request, limit: Duration) -> Result<(), Failure> {
    use monoio::io::AsyncWriteRent;
    let total = request.0.len();
    let mut done = 0;
    while done < total {
        let r = if done == 0 {
            monoio::time::timeout(limit, conn.stream.writev(request.clone()))
                .await
                .map(|(r, _)| r)
        } else {
            monoio::time::timeout(limit, conn.stream.writev(request.rest(done)))
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
