//! nginx's `ngx_http_test_reading` while a response waits to go out: a `limit_rate` wait
//! ends early when the client closes its side, so the connection is not held (active,
//! writing) until the paced body would have been sent. Bytes a client pipelined are left
//! where they are (a peek), and only the close counts.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use monoio::net::TcpStream;

use crate::stream::ClientStream;

/// Sleeps `wait`, or less when the client closed its connection first; `true` then.
pub async fn sleep_unless_gone(s: &ClientStream, wait: Duration) -> bool {
    let Some(tcp) = s.tcp() else {
        monoio::time::sleep(wait).await;
        return false;
    };
    let mut sleep = std::pin::pin!(monoio::time::sleep(wait));
    monoio::select! {
        _ = &mut sleep => return false,
        _ = tcp.readable(false) => {}
    }
    if closed(tcp) {
        return true;
    }
    // Pipelined bytes (or TLS records): readable from now on, so no second watch.
    sleep.await;
    false
}

/// What a write after the client's close would have failed with, for the caller's log.
pub fn gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "client prematurely closed connection",
    )
}

/// A one-byte peek: end of stream or a socket error (a reset) means the client is gone.
#[allow(unsafe_code)]
fn closed(tcp: &TcpStream) -> bool {
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
    match n {
        0 => true,
        n if n > 0 => false,
        _ => !matches!(
            io::Error::last_os_error().kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        ),
    }
}
