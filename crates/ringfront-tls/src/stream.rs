//! A TLS connection over a monoio `TcpStream`, driven through the ring with owned buffers:
//! ciphertext is read into a buffer this stream owns and handed to rustls, records rustls
//! wants sent are written from another; no readiness shim, no borrowed buffer in flight.
//!
//! This type is the record layer's one seam: kernel TLS would replace it (handshake here in
//! user space, then the keys handed to the kernel and plain socket I/O) without touching its
//! callers. See docs/decisions/0008-kernel-tls-plan.md.

use std::io;
use std::ops::DerefMut;

use monoio::buf::{IoBuf, IoBufMut, IoVecBuf};
use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use monoio::BufResult;
use rustls::{ConnectionCommon, SideData};

use crate::records::{drain, eof, feed, put_plain, take_plain, Incoming, Plain};

pub struct TlsStream<C> {
    io: TcpStream,
    conn: C,
    inc: Incoming,
    out: Vec<u8>,
}

impl<C, D> TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    /// `leftover`: ciphertext already read from `io` and not yet handed to `conn`.
    pub fn new(io: TcpStream, conn: C, leftover: Incoming) -> Self {
        TlsStream {
            io,
            conn,
            inc: leftover,
            out: Vec::new(),
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.io
    }

    pub fn conn(&self) -> &C {
        &self.conn
    }

    pub fn into_parts(self) -> (TcpStream, C, Incoming) {
        (self.io, self.conn, self.inc)
    }

    /// Plaintext or ciphertext is waiting here: the next read needs no bytes from the socket.
    pub fn buffered(&mut self) -> bool {
        self.inc.pending()
            || self
                .conn
                .process_new_packets()
                .map_or(true, |s| s.plaintext_bytes_to_read() > 0)
    }

    /// Gives back the buffers of an idle connection (rustls keeps its own, small when empty).
    pub fn release_buffers(&mut self) {
        self.inc.release();
        if self.out.is_empty() {
            self.out = Vec::new();
        }
    }

    /// Whether the connection may wait idle for another request: every record already read
    /// is processed (a late session ticket is taken in here) and it left no plaintext and
    /// no close_notify. The idle watcher only sees the socket, not what is buffered here.
    pub fn settled(&mut self) -> bool {
        if feed(&mut self.conn, &mut self.inc).is_err() || self.inc.pending() {
            return false;
        }
        self.conn
            .process_new_packets()
            .is_ok_and(|s| s.plaintext_bytes_to_read() == 0 && !s.peer_has_closed())
    }

    /// Sends every record rustls has queued (handshake messages, alerts, data).
    pub async fn flush_records(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            let mut out = std::mem::take(&mut self.out);
            drain(&mut self.conn, &mut out)?;
            let (r, mut b) = self.io.write_all(out).await;
            b.clear();
            self.out = b;
            r?;
        }
        Ok(())
    }

    /// Reads ciphertext (when none is pending) and processes it. False: the socket ended.
    /// A protocol error sends rustls's alert, then returns the error.
    pub async fn fill(&mut self) -> io::Result<bool> {
        if !self.inc.pending() {
            let b = self.inc.take_for_read(crate::records::READ_CHUNK);
            let cap = b.capacity();
            let (r, s) = self.io.read(b.slice_mut(0..cap)).await;
            self.inc.buf = s.into_inner();
            if r? == 0 {
                eof(&mut self.conn)?;
                return Ok(false);
            }
        }
        if let Err(e) = feed(&mut self.conn, &mut self.inc) {
            let _ = self.flush_records().await;
            return Err(e);
        }
        Ok(true)
    }

    /// Runs the handshake to its end (the caller bounds it in time).
    pub async fn handshake(&mut self) -> io::Result<()> {
        loop {
            self.flush_records().await?;
            if !self.conn.is_handshaking() {
                return Ok(());
            }
            if !self.fill().await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// Reads plaintext into `dst` (not empty); 0 is the end of the stream.
    pub async fn read_plain(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Plain::Read(n) = take_plain(&mut self.conn, dst)? {
                return Ok(n);
            }
            self.flush_records().await?;
            if !self.fill().await? {
                return match take_plain(&mut self.conn, dst)? {
                    Plain::Read(n) => Ok(n),
                    Plain::Empty => Ok(0),
                };
            }
        }
    }

    /// Encrypts and sends `src`, returning how much of it went (all of it, unless rustls's
    /// send buffer filled, when the caller writes the rest after this flush).
    pub async fn write_plain(&mut self, src: &[u8]) -> io::Result<usize> {
        if src.is_empty() {
            return Ok(0);
        }
        let n = put_plain(&mut self.conn, src)?;
        self.flush_records().await?;
        Ok(n)
    }

    /// close_notify, then the socket's write side.
    pub async fn close(&mut self) -> io::Result<()> {
        self.conn.send_close_notify();
        self.flush_records().await?;
        self.io.shutdown().await
    }
}

/// Encrypts the slices of `buf` in order, as far as rustls takes them.
pub(crate) fn put_slices<D: SideData, T: IoVecBuf>(
    c: &mut ConnectionCommon<D>,
    buf: &T,
) -> io::Result<usize> {
    let mut n = 0;
    for s in crate::iobuf::slices(buf) {
        let k = put_plain(c, s)?;
        n += k;
        if k < s.len() {
            break;
        }
    }
    Ok(n)
}

impl<C, D> AsyncReadRent for TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    async fn read<T: IoBufMut>(&mut self, mut buf: T) -> BufResult<usize, T> {
        let dst = crate::iobuf::spare(&mut buf);
        let r = self.read_plain(dst).await;
        crate::iobuf::filled(buf, r)
    }

    async fn readv<T: monoio::buf::IoVecBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        (Err(io::ErrorKind::Unsupported.into()), buf)
    }
}

impl<C, D> AsyncWriteRent for TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    async fn write<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        let r = self.write_plain(crate::iobuf::bytes(&buf)).await;
        (r, buf)
    }

    async fn writev<T: IoVecBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        let put = put_slices(&mut self.conn, &buf);
        let n = match put {
            Ok(n) => n,
            Err(e) => return (Err(e), buf),
        };
        let r = self.flush_records().await.map(|()| n);
        (r, buf)
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.flush_records().await
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        self.close().await
    }
}
