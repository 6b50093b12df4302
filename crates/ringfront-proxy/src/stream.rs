//! A connection that is plain TCP or TLS, on either side: the client's (`listen ... ssl`)
//! or the upstream's (`proxy_pass https://`). Everything that reads or writes a connection
//! goes through monoio's owned-buffer traits, which both variants implement; the plain
//! variant costs one branch per I/O.

use std::io;
use std::net::SocketAddr;
use std::ops::DerefMut;

use monoio::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRent, OwnedReadHalf, OwnedWriteHalf, Splitable};
use monoio::net::TcpStream;
use monoio::BufResult;
use ringfront_tls::{ClientConnection, ServerConnection, TlsReadHalf, TlsStream, TlsWriteHalf};

pub enum Stream<C> {
    Plain(TcpStream),
    Tls(Box<TlsStream<C>>),
}

pub type ClientStream = Stream<ServerConnection>;
pub type UpstreamStream = Stream<ClientConnection>;

impl<C> From<TcpStream> for Stream<C> {
    fn from(s: TcpStream) -> Self {
        Stream::Plain(s)
    }
}

impl<C, D> Stream<C>
where
    C: DerefMut<Target = ringfront_tls::rustls::ConnectionCommon<D>>,
    D: ringfront_tls::rustls::SideData,
{
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => t.tcp(),
        }
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.tcp().peer_addr()
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp().local_addr()
    }

    /// Waits until a read would find bytes: at once when TLS holds some already.
    pub async fn readable(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.readable(false).await,
            Stream::Tls(t) => {
                if t.buffered() {
                    return Ok(());
                }
                t.tcp().readable(false).await
            }
        }
    }

    /// An idle connection gives back its TLS buffers.
    pub fn release_buffers(&mut self) {
        if let Stream::Tls(t) = self {
            t.release_buffers();
        }
    }

    /// Whether it may wait idle for reuse: a plain connection always (its watcher sees any
    /// byte that arrives); a TLS one when nothing it already read is left unprocessed,
    /// unread or a close_notify, which its watcher could not see.
    pub fn settled(&mut self) -> bool {
        match self {
            Stream::Plain(_) => true,
            Stream::Tls(t) => t.settled(),
        }
    }

    pub fn into_split(self) -> (ReadHalf<C>, WriteHalf<C>) {
        match self {
            Stream::Plain(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Plain(r), WriteHalf::Plain(w))
            }
            Stream::Tls(t) => {
                let (r, w) = t.into_split();
                (ReadHalf::Tls(r), WriteHalf::Tls(w))
            }
        }
    }
}

impl<C, D> AsyncReadRent for Stream<C>
where
    C: DerefMut<Target = ringfront_tls::rustls::ConnectionCommon<D>>,
    D: ringfront_tls::rustls::SideData,
{
    async fn read<T: IoBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            Stream::Plain(s) => s.read(buf).await,
            Stream::Tls(t) => t.read(buf).await,
        }
    }

    async fn readv<T: IoVecBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            Stream::Plain(s) => s.readv(buf).await,
            Stream::Tls(t) => t.readv(buf).await,
        }
    }
}

impl<C, D> AsyncWriteRent for Stream<C>
where
    C: DerefMut<Target = ringfront_tls::rustls::ConnectionCommon<D>>,
    D: ringfront_tls::rustls::SideData,
{
    async fn write<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            Stream::Plain(s) => s.write(buf).await,
            Stream::Tls(t) => t.write(buf).await,
        }
    }

    async fn writev<T: IoVecBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            Stream::Plain(s) => s.writev(buf).await,
            Stream::Tls(t) => t.writev(buf).await,
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush().await,
            Stream::Tls(t) => t.flush().await,
        }
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.shutdown().await,
            Stream::Tls(t) => t.shutdown().await,
        }
    }
}

/// The read side of a split connection (tunnels).
pub enum ReadHalf<C> {
    Plain(OwnedReadHalf<TcpStream>),
    Tls(TlsReadHalf<C>),
}

/// The write side of a split connection (tunnels).
pub enum WriteHalf<C> {
    Plain(OwnedWriteHalf<TcpStream>),
    Tls(TlsWriteHalf<C>),
}

impl<C, D> AsyncReadRent for ReadHalf<C>
where
    C: DerefMut<Target = ringfront_tls::rustls::ConnectionCommon<D>>,
    D: ringfront_tls::rustls::SideData,
{
    async fn read<T: IoBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            ReadHalf::Plain(s) => s.read(buf).await,
            ReadHalf::Tls(t) => t.read(buf).await,
        }
    }

    async fn readv<T: IoVecBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            ReadHalf::Plain(s) => s.readv(buf).await,
            ReadHalf::Tls(t) => t.readv(buf).await,
        }
    }
}

impl<C, D> AsyncWriteRent for WriteHalf<C>
where
    C: DerefMut<Target = ringfront_tls::rustls::ConnectionCommon<D>>,
    D: ringfront_tls::rustls::SideData,
{
    async fn write<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            WriteHalf::Plain(s) => s.write(buf).await,
            WriteHalf::Tls(t) => t.write(buf).await,
        }
    }

    async fn writev<T: IoVecBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            WriteHalf::Plain(s) => s.writev(buf).await,
            WriteHalf::Tls(t) => t.writev(buf).await,
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            WriteHalf::Plain(s) => s.flush().await,
            WriteHalf::Tls(t) => t.flush().await,
        }
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            WriteHalf::Plain(s) => s.shutdown().await,
            WriteHalf::Tls(t) => t.shutdown().await,
        }
    }
}
