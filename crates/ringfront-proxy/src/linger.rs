//! nginx's lingering close (`lingering_close`, `lingering_time`, `lingering_timeout`):
//! before a connection that ends after a response is closed, the sending side is shut and
//! what the client still sends (the rest of a refused body, a pipelined request) is read
//! and dropped, so closing with unread bytes does not reset the connection and destroy the
//! response in flight.

use std::time::Instant;

use monoio::io::AsyncWriteRent;
use ringfront_config::{LingeringClose, LocationSettings};

use crate::io::{read_more, IoFail};
use crate::stream::{ClientStream, Stream};

/// Whether the connection lingers: always with `always`; with `on` (the default) only when
/// the client may still be sending (`pending`: a body left unread, or bytes of a next
/// request already in).
pub(crate) fn wanted(s: &LocationSettings, pending: bool) -> bool {
    match s.lingering_close {
        LingeringClose::Off => false,
        LingeringClose::On => pending,
        LingeringClose::Always => true,
    }
}

/// Ends a connection after its last response: lingers when [`wanted`]; else, with nothing
/// left unread, shuts the sending side at once, so the client sees the end right after the
/// response, as nginx's `close()` right after its last write gives it, and not only once
/// this connection's task has unwound and its close reached the ring. That is also the
/// cheaper order on loopback: the side that ends first leaves the last steps of the close
/// (the peer's end, the `TIME_WAIT` entry) to the peer. With bytes unread the close is
/// left to reset the connection, as nginx's does; a TLS connection has ended with its
/// close_notify already.
pub(crate) async fn close(stream: &mut ClientStream, s: &LocationSettings, pending: bool) {
    if wanted(s, pending) {
        linger(stream, s).await;
    } else if let (false, Stream::Plain(tcp)) = (pending, &mut *stream) {
        let _ = tcp.shutdown().await;
    }
}

/// Shuts the sending side (a TLS one has sent close_notify already), then reads and drops
/// until the client closes, a read waits `lingering_timeout`, or `lingering_time` is over.
pub(crate) async fn linger(stream: &mut ClientStream, s: &LocationSettings) {
    if !matches!(stream, Stream::Tls(_)) && stream.shutdown().await.is_err() {
        return;
    }
    let end = Instant::now() + s.lingering_time;
    let mut buf = Vec::new();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        buf.clear();
        let (r, b) = read_more(stream, buf, 4096, left.min(s.lingering_timeout)).await;
        buf = b;
        match r {
            Ok(n) if n > 0 => {}
            Ok(_) | Err(IoFail::Io(_)) | Err(IoFail::Timeout) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lingers_as_nginx_decides() {
        let mut s = LocationSettings::default();
        assert!(wanted(&s, true));
        assert!(!wanted(&s, false));
        s.lingering_close = LingeringClose::Always;
        assert!(wanted(&s, false));
        s.lingering_close = LingeringClose::Off;
        assert!(!wanted(&s, true));
    }
}
