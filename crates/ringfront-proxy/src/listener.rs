//! A worker's listening socket: TCP (its own `SO_REUSEPORT` socket, `listen.rs`) or
//! unix-domain (its descriptor of the engine's one socket, `unix_listen.rs`), and what an
//! accept on it gives.

use std::net::SocketAddr;

use monoio::io::CancelHandle;
use monoio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use crate::snapshot::ListenRt;
use crate::unix_listen::UnixSockets;

/// Bound on the engine's thread, registered with a worker's ring by [`Listener::from_std`].
pub enum StdListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

pub enum Listener {
    /// With the address it is bound to, unless that is a wildcard: then the local address
    /// of every connection it accepts, which needs no `getsockname` per connection.
    Tcp(TcpListener, Option<SocketAddr>),
    /// With the listen's key (`ringfront_config::unix_addr`), the local address of its
    /// connections.
    Unix(UnixListener, SocketAddr),
}

pub enum Accepted {
    /// The client's address comes with the accept (no `getpeername`); the local one when
    /// the listener's is not a wildcard.
    Tcp(TcpStream, SocketAddr, Option<SocketAddr>),
    Unix(UnixStream, SocketAddr),
}

/// A worker's socket for `l`: a fresh TCP one, or a descriptor of the unix one.
pub fn for_worker(l: &ListenRt, unix: &UnixSockets) -> std::io::Result<StdListener> {
    match l.unix {
        None => crate::listen::bind_std(l).map(StdListener::Tcp),
        Some(_) => unix.listener(l.addr).map(StdListener::Unix),
    }
}

impl Listener {
    /// Registers `l` (with the key of its listen) with the current worker's runtime.
    pub fn from_std(l: StdListener, key: SocketAddr) -> std::io::Result<Listener> {
        Ok(match l {
            StdListener::Tcp(t) => {
                let bound = t.local_addr().ok().filter(|a| !a.ip().is_unspecified());
                Listener::Tcp(TcpListener::from_std(t)?, bound)
            }
            StdListener::Unix(u) => Listener::Unix(UnixListener::from_std(u)?, key),
        })
    }

    pub async fn accept(&self, handle: CancelHandle) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(l, bound) => l
                .cancelable_accept(handle)
                .await
                .map(|(s, peer)| Accepted::Tcp(s, peer, *bound)),
            Listener::Unix(l, key) => l
                .cancelable_accept(handle)
                .await
                .map(|(s, _)| Accepted::Unix(s, *key)),
        }
    }
}
