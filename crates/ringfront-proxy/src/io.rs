//! Owned-buffer I/O helpers over monoio's rent traits: append-reads into a `Vec`, whole
//! writes, each under a deadline. On timeout the in-flight operation is cancelled and the
//! buffer goes with it, so callers get an empty replacement (the connection is closed anyway).

use std::io;
use std::time::Duration;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};

/// Why an I/O step failed.
#[derive(Debug)]
pub enum IoFail {
    Timeout,
    Io(io::Error),
}

/// Reads at least one byte appended to `buf` (making room for `spare` more bytes first).
/// `Ok(0)` is end of stream.
pub async fn read_more<S: AsyncReadRent>(
    s: &mut S,
    mut buf: Vec<u8>,
    spare: usize,
    limit: Duration,
) -> (Result<usize, IoFail>, Vec<u8>) {
    if buf.capacity() - buf.len() < spare {
        buf.reserve(spare);
    }
    let (len, cap) = (buf.len(), buf.capacity());
    match crate::deadline::timeout(limit, s.read(buf.slice_mut(len..cap))).await {
        Ok((Ok(n), slice)) => (Ok(n), slice.into_inner()),
        Ok((Err(e), slice)) => (Err(IoFail::Io(e)), slice.into_inner()),
        Err(_) => (Err(IoFail::Timeout), Vec::new()),
    }
}

/// Writes the whole buffer.
pub async fn write_all<S: AsyncWriteRent>(
    s: &mut S,
    buf: Vec<u8>,
    limit: Duration,
) -> (Result<(), IoFail>, Vec<u8>) {
    if buf.is_empty() {
        return (Ok(()), buf);
    }
    match crate::deadline::timeout(limit, s.write_all(buf)).await {
        Ok((Ok(_), b)) => (Ok(()), b),
        Ok((Err(e), b)) => (Err(IoFail::Io(e)), b),
        Err(_) => (Err(IoFail::Timeout), Vec::new()),
    }
}

/// nginx's wording of an errno: `(111: Connection refused)`.
pub fn errno_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => {
            let msg = e.to_string();
            let msg = msg.split(" (os error").next().unwrap_or(&msg).to_string();
            format!("({code}: {msg})")
        }
        None => format!("({e})"),
    }
}
