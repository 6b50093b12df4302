//! nginx's broken-connection checks (`ngx_http_test_reading`, and the upstream module's
//! `ngx_http_upstream_check_broken_connection`): while a request waits — a `limit_rate`
//! pause, a `limit_req` delay, the upstream's connect, send and response head — a client
//! that closes its side ends it then, instead of when the wait would have ended. One
//! readiness watch on the client's socket races the wait; when it fires, a one-byte peek
//! tells a close (end of stream, or a reset) from bytes the client pipelined, which are
//! left where they are and are no close (unless the client's close is behind them).

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use monoio::net::TcpStream;

use crate::stream::ClientStream;

/// The client closed its connection: `errno` is the error its socket held (a reset), if
/// any (nginx's `SO_ERROR` after `epoll_wait()` reported the close).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    pub errno: Option<i32>,
}

/// Whether a request's waits still watch its client: cleared once the client pipelined
/// bytes (its socket stays readable from then on, so another watch would end at once).
#[derive(Debug, Clone, Copy)]
pub struct Watch(bool);

impl Watch {
    /// Watching, unless `off` (`proxy_ignore_client_abort on`).
    pub fn new(off: bool) -> Watch {
        Watch(!off)
    }
}

/// Runs `wait` unless the client closes first: then `wait` is dropped (what it was doing
/// is abandoned) and the close is returned. A client on a unix-domain socket, or one no
/// longer watched, is not looked at.
pub async fn unless_gone<F: Future>(
    s: Option<&ClientStream>,
    watch: &mut Watch,
    wait: F,
) -> Result<F::Output, Gone> {
    let Some(tcp) = s.and_then(ClientStream::tcp).filter(|_| watch.0) else {
        return Ok(wait.await);
    };
    let mut wait = std::pin::pin!(wait);
    // The wait first: one that is ready at once (a pooled connection) registers no watch.
    monoio::select! {
        biased;
        out = &mut wait => return Ok(out),
        _ = tcp.readable(false) => {}
    }
    if let Some(gone) = closed(tcp) {
        return Err(gone);
    }
    watch.0 = false;
    Ok(wait.await)
}

/// [`unless_gone`] on the connection's standing watch (io_uring): the poll it leaves armed
/// is taken up by the next wait instead of one poll armed and cancelled per wait. On the
/// epoll driver, or when the socket cannot be duplicated, it is [`unless_gone`].
pub async fn unless_gone_standing<F: Future>(
    s: Option<&ClientStream>,
    standing: Option<&Standing>,
    watch: &mut Watch,
    wait: F,
) -> Result<F::Output, Gone> {
    let Some(tcp) = s.and_then(ClientStream::tcp).filter(|_| watch.0) else {
        return Ok(wait.await);
    };
    let Some(standing) = standing.filter(|st| !monoio::utils::is_legacy() && st.ready(tcp)) else {
        return unless_gone(s, watch, wait).await;
    };
    let mut wait = std::pin::pin!(wait);
    let mut pending = false;
    let mut rearmed = false;
    let out = std::future::poll_fn(|cx| {
        // The wait first: one that is ready at once (a pooled connection) arms nothing.
        if let Poll::Ready(out) = wait.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        loop {
            match standing.poll(cx) {
                Poll::Pending => {
                    pending = true;
                    return Poll::Pending;
                }
                // Fired before this wait: what made the socket readable was read since (the
                // next request); a fresh poll tells what is there now.
                Poll::Ready(()) if !pending && !rearmed => rearmed = true,
                Poll::Ready(()) => return Poll::Ready(None),
            }
        }
    })
    .await;
    if let Some(out) = out {
        return Ok(out);
    }
    if let Some(gone) = closed(tcp) {
        return Err(gone);
    }
    watch.0 = false;
    Ok(wait.await)
}

/// A connection's standing watch: one poll on a duplicate of the client's socket, armed by
/// the first wait that pends and left armed when that wait ends, so that the next waits (of
/// this request and of the next ones on the connection) find it armed and arm nothing; a
/// poll per wait costs a PollAdd and, when the upstream answers first, an AsyncCancel, both
/// through the kernel. A fired poll is armed again by the next wait. The duplicate (it
/// outlives no wait: it is closed with the connection) is made at the first watched wait.
#[derive(Default)]
pub struct Standing(RefCell<Option<Armed>>);

type Readable = Pin<Box<dyn Future<Output = io::Result<()>>>>;

struct Armed {
    dup: Rc<TcpStream>,
    poll: Option<Readable>,
}

impl Standing {
    /// Whether the duplicate of `tcp` is there (made now if not).
    fn ready(&self, tcp: &TcpStream) -> bool {
        let Ok(mut slot) = self.0.try_borrow_mut() else {
            return false;
        };
        if slot.is_none() {
            *slot = duplicate(tcp).map(|dup| Armed {
                dup: Rc::new(dup),
                poll: None,
            });
        }
        slot.is_some()
    }

    /// Polls the standing poll, arming one first if none is armed; a fired one is disarmed.
    fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        let Ok(mut slot) = self.0.try_borrow_mut() else {
            return Poll::Pending;
        };
        let Some(armed) = slot.as_mut() else {
            return Poll::Pending;
        };
        let poll = armed.poll.get_or_insert_with(|| {
            let dup = Rc::clone(&armed.dup);
            Box::pin(async move { dup.readable(false).await })
        });
        match poll.as_mut().poll(cx) {
            Poll::Ready(_) => {
                armed.poll = None;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A second descriptor of the client's socket, owned by the watch (so that its poll does not
/// borrow the stream, which the session moves between requests).
#[allow(unsafe_code)]
fn duplicate(tcp: &TcpStream) -> Option<TcpStream> {
    // SAFETY: the descriptor is the stream's open socket, borrowed only for the duplication
    // (the stream outlives this call).
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(tcp.as_raw_fd()) };
    let owned = fd.try_clone_to_owned().ok()?;
    TcpStream::from_std(std::net::TcpStream::from(owned)).ok()
}

/// Sleeps `wait`, or less when the client closed its connection first; `true` then.
pub async fn sleep_unless_gone(s: &ClientStream, wait: Duration) -> bool {
    let sleep = monoio::time::sleep(wait);
    unless_gone(Some(s), &mut Watch::new(false), sleep)
        .await
        .is_err()
}

/// What a write after the client's close would have failed with, for the caller's log.
pub fn gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "client prematurely closed connection",
    )
}

/// A one-byte peek: end of stream or a socket error (a reset) means the client is gone;
/// bytes are not, unless the client's end of stream is already behind them.
#[allow(unsafe_code)]
fn closed(tcp: &TcpStream) -> Option<Gone> {
    let mut byte = [0u8; 1];
    // SAFETY: `byte` is a valid, writable buffer of the one byte passed, and the descriptor
    // is the stream's open socket, borrowed for this call.
    let n = unsafe {
        libc::recv(
            tcp.as_raw_fd(),
            byte.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n > 0 {
        return hung_up(tcp);
    }
    if n == 0 {
        return Some(Gone { errno: None });
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => None,
        _ => Some(Gone {
            errno: e.raw_os_error(),
        }),
    }
}

/// Bytes are waiting: the client is gone only if it also closed its side (what nginx's
/// `EPOLLRDHUP` tells), so pipelined bytes alone are no close.
#[allow(unsafe_code)]
fn hung_up(tcp: &TcpStream) -> Option<Gone> {
    let mut fd = libc::pollfd {
        fd: tcp.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid `pollfd` for the stream's open socket, and a zero timeout.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    let hup = libc::POLLRDHUP | libc::POLLHUP;
    (n > 0 && fd.revents & hup != 0).then_some(Gone { errno: None })
}
