//! The synchronous half of driving rustls: handing it ciphertext the ring read, taking
//! plaintext out, and collecting the records it wants sent. The asynchronous half
//! ([`crate::stream`]) only moves owned buffers through the ring between these steps, so no
//! borrow of the connection is ever held across an I/O.

use std::io::{self, Read, Write};

use rustls::{ConnectionCommon, SideData};

/// Bytes asked of the socket per read: one full TLS record with its header and tag.
pub const READ_CHUNK: usize = 16 * 1024 + 512;

/// Ciphertext read from the socket and not yet taken by rustls: `buf[pos..]`.
#[derive(Debug, Default)]
pub struct Incoming {
    pub buf: Vec<u8>,
    pub pos: usize,
}

impl Incoming {
    pub fn pending(&self) -> bool {
        self.pos < self.buf.len()
    }

    /// An empty buffer with room for one read of `chunk` bytes, reusing the old allocation.
    pub fn take_for_read(&mut self, chunk: usize) -> Vec<u8> {
        let mut b = std::mem::take(&mut self.buf);
        b.clear();
        b.reserve(chunk);
        self.pos = 0;
        b
    }

    /// Frees the buffer when nothing is pending in it (an idle connection keeps none).
    pub fn release(&mut self) {
        if !self.pending() {
            self.buf = Vec::new();
            self.pos = 0;
        }
    }
}

/// What taking plaintext found.
pub enum Plain {
    /// This many bytes were copied; 0 is the end of the stream (close_notify, or the peer
    /// closed the socket: HTTP frames its own messages, as nginx reads it).
    Read(usize),
    /// Nothing yet: read more ciphertext.
    Empty,
}

/// Copies decrypted bytes into `dst` (not empty).
pub fn take_plain<D: SideData>(c: &mut ConnectionCommon<D>, dst: &mut [u8]) -> io::Result<Plain> {
    match c.reader().read(dst) {
        Ok(n) => Ok(Plain::Read(n)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Plain::Empty),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(Plain::Read(0)),
        Err(e) => Err(e),
    }
}

/// Hands pending ciphertext to rustls and processes it. An error is rustls's verdict on the
/// peer's bytes (the alert it queued is sent by the caller before closing).
pub fn feed<D: SideData>(c: &mut ConnectionCommon<D>, inc: &mut Incoming) -> io::Result<()> {
    while inc.pending() {
        let mut src = &inc.buf[inc.pos..];
        let before = src.len();
        match c.read_tls(&mut src) {
            Ok(0) => break,
            Ok(_) => {}
            // Backpressure: the plaintext buffer is full; the reader drains it first.
            Err(e) if e.kind() == io::ErrorKind::Other => break,
            Err(e) => return Err(e),
        }
        inc.pos += before - src.len();
        if c.process_new_packets()
            .map_err(invalid)?
            .plaintext_bytes_to_read()
            > 0
        {
            break;
        }
    }
    Ok(())
}

/// Tells rustls the socket reached its end.
pub fn eof<D: SideData>(c: &mut ConnectionCommon<D>) -> io::Result<()> {
    c.read_tls(&mut io::empty())?;
    c.process_new_packets().map_err(invalid)?;
    Ok(())
}

/// Moves every record rustls wants sent into `out` (cleared first).
pub fn drain<D: SideData>(c: &mut ConnectionCommon<D>, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    while c.wants_write() {
        c.write_tls(out)?;
    }
    Ok(())
}

/// Encrypts as much of `src` as rustls takes now (all of it unless its send buffer is full).
pub fn put_plain<D: SideData>(c: &mut ConnectionCommon<D>, src: &[u8]) -> io::Result<usize> {
    c.writer().write(src)
}

/// A rustls error as an I/O error (its text is the TLS reason, logged by the caller).
pub fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}
