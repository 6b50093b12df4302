//! nginx's broken-connection checks (`ngx_http_test_reading`, and the upstream module's
//! `ngx_http_upstream_check_broken_connection`): while a request waits — a `limit_rate`
//! pause, a `limit_req` delay, the upstream's connect, send and response head — a client
//! that closes its side ends it then, instead of when the wait would have ended. One
//! readiness watch on the client's socket races the wait; when it fires, a one-byte peek
//! tells a close (end of stream, or a reset) from bytes the client pipelined, which are
//! left where they are and are no close (unless the client's close is behind them). The
//! upstream's waits on the io_uring driver watch through the worker's hang-up watch
//! (hangup.rs: registered once per connection, nothing submitted per wait); the others,
//! and every wait on the epoll driver, arm a poll on the ring for the wait.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use monoio::net::TcpStream;

use crate::hangup::{Hangups, Key};
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

/// [`unless_gone`] on the worker's hang-up watch (io_uring, hangup.rs): the connection is
/// registered there once, at its first watched wait, and a wait costs the kernel nothing.
/// On the epoll driver, or when the watch cannot take the connection, it is
/// [`unless_gone`].
pub async fn unless_gone_standing<F: Future>(
    s: Option<&ClientStream>,
    standing: Option<&Standing>,
    watch: &mut Watch,
    wait: F,
) -> Result<F::Output, Gone> {
    let Some(tcp) = s.and_then(ClientStream::tcp).filter(|_| watch.0) else {
        return Ok(wait.await);
    };
    let registered = standing
        .filter(|_| !monoio::utils::is_legacy())
        .and_then(|st| st.registered(tcp));
    let Some((hangups, key)) = registered else {
        return unless_gone(s, watch, wait).await;
    };
    let mut wait = std::pin::pin!(wait);
    let out = std::future::poll_fn(|cx| {
        // The wait first: one that is ready at once looks at nothing else.
        if let Poll::Ready(out) = wait.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        match hangups.hung(key, cx.waker()) {
            true => Poll::Ready(None),
            false => Poll::Pending,
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

/// A connection's place in the worker's hang-up watch (hangup.rs), taken at its first
/// watched wait and given back when the connection is dropped.
#[derive(Default)]
pub struct Standing(RefCell<Option<(Rc<Hangups>, Key)>>);

impl Standing {
    /// The watch and the connection's key in it (registered now if not yet).
    fn registered(&self, tcp: &TcpStream) -> Option<(Rc<Hangups>, Key)> {
        let mut slot = self.0.try_borrow_mut().ok()?;
        if slot.is_none() {
            let h = Hangups::worker()?;
            let key = h.register(tcp.as_raw_fd())?;
            *slot = Some((h, key));
        }
        slot.clone()
    }
}

impl Drop for Standing {
    fn drop(&mut self) {
        if let Some((h, key)) = self.0.get_mut().take() {
            h.release(key);
        }
    }
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
