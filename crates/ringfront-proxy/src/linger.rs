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
