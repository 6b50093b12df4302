//! Owned-buffer I/O helpers over monoio's rent traits: append-reads into a `Vec`, whole
//! writes, each under a deadline. On timeout the in-flight operation is cancelled and the
//! buffer goes with it, so callers get an empty replacement (the connection is closed anyway).

use std::io;
use std::time::Duration;

use monoio::buf::{IoBufMut, SliceMut};
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
    read_ended(crate::deadline::timeout(limit, s.read(buf.slice_mut(len..cap))).await)
}

/// Like `read_more`, but takes at most `most` bytes, however much room the buffer has: an
/// upstream's response head is read `proxy_buffer_size`-sized as nginx reads it, so the body
/// bytes behind it that a read takes (and the relay copies) stay as few as nginx's.
pub async fn read_at_most<S: AsyncReadRent>(
    s: &mut S,
    mut buf: Vec<u8>,
    most: usize,
    limit: Duration,
) -> (Result<usize, IoFail>, Vec<u8>) {
    if buf.capacity() - buf.len() < most {
        buf.reserve(most);
    }
    let len = buf.len();
    let room = len..len + most;
    read_ended(crate::deadline::timeout(limit, s.read(buf.slice_mut(room))).await)
}

type Read = Result<(io::Result<usize>, SliceMut<Vec<u8>>), crate::deadline::Elapsed>;

/// A read's outcome with its buffer back (an empty one after a timeout).
fn read_ended(r: Read) -> (Result<usize, IoFail>, Vec<u8>) {
    match r {
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
