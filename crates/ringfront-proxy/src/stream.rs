//! A connection that is plain TCP or TLS, on either side: the client's (`listen ... ssl`)
//! or the upstream's (`proxy_pass https://`), or a unix-domain socket to an upstream
//! (`server unix:/path`). Everything that reads or writes a connection goes through monoio's
//! owned-buffer traits, which every variant implements; the plain variant, tested first,
//! costs one branch per I/O.

use std::io;
use std::ops::DerefMut;

use monoio::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRent, OwnedReadHalf, OwnedWriteHalf, Splitable};
use monoio::net::{TcpStream, UnixStream};
use monoio::BufResult;
use ringfront_tls::{ClientConnection, ServerConnection, TlsReadHalf, TlsStream, TlsWriteHalf};

pub enum Stream<C> {
    Plain(TcpStream),
    Tls(Box<TlsStream<C>>),
    /// A unix-domain socket (upstreams only).
    Unix(UnixStream),
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
    /// The TCP connection under it; `None` for a unix-domain socket.
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(s) => Some(s),
            Stream::Tls(t) => Some(t.tcp()),
            Stream::Unix(_) => None,
        }
    }

    /// The socket's addresses (tests; a client connection keeps its own from the accept).
    #[cfg(test)]
    pub fn peer_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.tcp().ok_or(io::ErrorKind::Unsupported)?.peer_addr()
    }

    #[cfg(test)]
    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.tcp().ok_or(io::ErrorKind::Unsupported)?.local_addr()
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
            Stream::Unix(s) => s.readable(false).await,
        }
    }

    /// The socket's descriptor (the pool's readiness watch registers it).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Plain(s) => s.as_raw_fd(),
            Stream::Tls(t) => t.tcp().as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    /// Waits until the socket itself is readable (bytes, or the peer's close), whatever
    /// TLS holds: the pool's watch on an idle connection.
    pub async fn socket_readable(&self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.readable(false).await,
            Stream::Tls(t) => t.tcp().readable(false).await,
            Stream::Unix(s) => s.readable(false).await,
        }
    }

    /// Waits until the socket itself has room for bytes (a spliced body's writes).
    pub async fn socket_writable(&self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.writable(false).await,
            Stream::Tls(t) => t.tcp().writable(false).await,
            Stream::Unix(s) => s.writable(false).await,
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
            Stream::Plain(_) | Stream::Unix(_) => true,
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
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
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
            Stream::Unix(s) => s.read(buf).await,
        }
    }

    async fn readv<T: IoVecBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            Stream::Plain(s) => s.readv(buf).await,
            Stream::Tls(t) => t.readv(buf).await,
            Stream::Unix(s) => s.readv(buf).await,
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
            Stream::Unix(s) => s.write(buf).await,
        }
    }

    async fn writev<T: IoVecBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            Stream::Plain(s) => s.writev(buf).await,
            Stream::Tls(t) => t.writev(buf).await,
            Stream::Unix(s) => s.writev(buf).await,
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush().await,
            Stream::Tls(t) => t.flush().await,
            Stream::Unix(s) => s.flush().await,
        }
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.shutdown().await,
            Stream::Tls(t) => t.shutdown().await,
            Stream::Unix(s) => s.shutdown().await,
        }
    }
}

/// The read side of a split connection (tunnels).
pub enum ReadHalf<C> {
    Plain(OwnedReadHalf<TcpStream>),
    Tls(TlsReadHalf<C>),
    Unix(OwnedReadHalf<UnixStream>),
}

/// The write side of a split connection (tunnels).
pub enum WriteHalf<C> {
    Plain(OwnedWriteHalf<TcpStream>),
    Tls(TlsWriteHalf<C>),
    Unix(OwnedWriteHalf<UnixStream>),
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
            ReadHalf::Unix(s) => s.read(buf).await,
        }
    }

    async fn readv<T: IoVecBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            ReadHalf::Plain(s) => s.readv(buf).await,
            ReadHalf::Tls(t) => t.readv(buf).await,
            ReadHalf::Unix(s) => s.readv(buf).await,
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
            WriteHalf::Unix(s) => s.write(buf).await,
        }
    }

    async fn writev<T: IoVecBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            WriteHalf::Plain(s) => s.writev(buf).await,
            WriteHalf::Tls(t) => t.writev(buf).await,
            WriteHalf::Unix(s) => s.writev(buf).await,
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            WriteHalf::Plain(s) => s.flush().await,
            WriteHalf::Tls(t) => t.flush().await,
            WriteHalf::Unix(s) => s.flush().await,
        }
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            WriteHalf::Plain(s) => s.shutdown().await,
            WriteHalf::Tls(t) => t.shutdown().await,
            WriteHalf::Unix(s) => s.shutdown().await,
        }
    }
}
