//! A TLS stream cut into a read half and a write half for a tunnel (an upgraded
//! connection copies both ways at once). The halves share the rustls connection through a
//! `RefCell` borrowed only between I/Os, never across one; each half has its own socket half
//! and its own buffer. Records the read side makes rustls queue (a key update answer) leave
//! with the next write.

use std::cell::RefCell;
use std::io;
use std::ops::DerefMut;
use std::rc::Rc;

use monoio::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};
use monoio::io::{
    AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt, OwnedReadHalf, OwnedWriteHalf, Splitable,
};
use monoio::net::TcpStream;
use monoio::BufResult;
use rustls::{ConnectionCommon, SideData};

use crate::records::{drain, eof, feed, put_plain, take_plain, Incoming, Plain};
use crate::stream::TlsStream;

pub struct TlsReadHalf<C> {
    io: OwnedReadHalf<TcpStream>,
    conn: Rc<RefCell<C>>,
    inc: Incoming,
}

pub struct TlsWriteHalf<C> {
    io: OwnedWriteHalf<TcpStream>,
    conn: Rc<RefCell<C>>,
    out: Vec<u8>,
}

impl<C, D> TlsStream<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    pub fn into_split(self) -> (TlsReadHalf<C>, TlsWriteHalf<C>) {
        let (io, conn, inc) = self.into_parts();
        let (r, w) = io.into_split();
        let conn = Rc::new(RefCell::new(conn));
        (
            TlsReadHalf {
                io: r,
                conn: conn.clone(),
                inc,
            },
            TlsWriteHalf {
                io: w,
                conn,
                out: Vec::new(),
            },
        )
    }
}

impl<C, D> TlsReadHalf<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    async fn read_plain(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Plain::Read(n) = take_plain(&mut self.conn.borrow_mut(), dst)? {
                return Ok(n);
            }
            if !self.inc.pending() {
                let b = self.inc.take_for_read(crate::records::READ_CHUNK);
                let cap = b.capacity();
                let (r, s) = self.io.read(b.slice_mut(0..cap)).await;
                self.inc.buf = s.into_inner();
                if r? == 0 {
                    let mut c = self.conn.borrow_mut();
                    eof(&mut c)?;
                    return match take_plain(&mut c, dst)? {
                        Plain::Read(n) => Ok(n),
                        Plain::Empty => Ok(0),
                    };
                }
            }
            feed(&mut self.conn.borrow_mut(), &mut self.inc)?;
        }
    }
}

impl<C, D> TlsWriteHalf<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    async fn send(
        &mut self,
        put: impl FnOnce(&mut ConnectionCommon<D>) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let mut out = std::mem::take(&mut self.out);
        let n = {
            let mut c = self.conn.borrow_mut();
            let n = put(&mut c)?;
            drain(&mut c, &mut out)?;
            n
        };
        let (r, b) = self.io.write_all(out).await;
        self.out = b;
        r.map(|_| n)
    }
}

impl<C, D> AsyncReadRent for TlsReadHalf<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    async fn read<T: IoBufMut>(&mut self, mut buf: T) -> BufResult<usize, T> {
        let dst = crate::iobuf::spare(&mut buf);
        let r = self.read_plain(dst).await;
        crate::iobuf::filled(buf, r)
    }

    async fn readv<T: IoVecBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        (Err(io::ErrorKind::Unsupported.into()), buf)
    }
}

impl<C, D> AsyncWriteRent for TlsWriteHalf<C>
where
    C: DerefMut<Target = ConnectionCommon<D>>,
    D: SideData,
{
    async fn write<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        let r = self.send(|c| put_plain(c, crate::iobuf::bytes(&buf))).await;
        (r, buf)
    }

    async fn writev<T: IoVecBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        let r = self.send(|c| crate::stream::put_slices(c, &buf)).await;
        (r, buf)
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.send(|_| Ok(0)).await.map(|_| ())
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        self.send(|c| {
            c.send_close_notify();
            Ok(0)
        })
        .await?;
        self.io.shutdown().await
    }
}
