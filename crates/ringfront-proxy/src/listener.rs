//! A worker's listening socket: TCP (its own `SO_REUSEPORT` socket, `listen.rs`) or
//! unix-domain (its descriptor of the engine's one socket, `unix_listen.rs`), and what an
//! accept on it gives.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use monoio::io::Canceller;
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

    /// The next connection. A TCP accept is not cancellable: [`Listener::shut`] ends it
    /// (monoio's cancellable accept costs two SipHash lookups per connection, ~600
    /// instructions, docs/benchmarks.md 2026-12-07 22:00 UTC). A unix listener's accept is
    /// cancelled through `canceller`.
    pub async fn accept(&self, canceller: &RefCell<Canceller>) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(l, bound) => l
                .accept()
                .await
                .map(|(s, peer)| Accepted::Tcp(s, peer, *bound)),
            Listener::Unix(l, key) => {
                let handle = canceller.borrow().handle();
                l.cancelable_accept(handle)
                    .await
                    .map(|(s, _)| Accepted::Unix(s, *key))
            }
        }
    }

    /// Ends every accept waiting on a TCP listener, for good: the socket is this worker's
    /// own (`SO_REUSEPORT`), so shutting it down completes them with an error, takes it out
    /// of the port's group at once, and resets the connections queued on it, as closing it
    /// does. A unix listener is every worker's one socket: it is left to its canceller.
    #[allow(unsafe_code)]
    pub fn shut(&self) {
        if let Listener::Tcp(l, _) = self {
            // SAFETY: the descriptor is the listener's open socket, borrowed for this call;
            // shutdown(2) touches no memory of ours.
            unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RD) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::time::Duration;

    /// A TCP accept in flight ends with an error once its listener is shut, under both
    /// drivers, and the address refuses connections from then on.
    #[test]
    fn shutting_a_tcp_listener_ends_its_accept_in_flight() {
        crate::testutil::on_both(|| async {
            let std = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            std.set_nonblocking(true).expect("nonblocking");
            let addr = std.local_addr().expect("address");
            let l = Rc::new(Listener::from_std(StdListener::Tcp(std), addr).expect("register"));
            let canceller = RefCell::default();
            let _client = monoio::net::TcpStream::connect(addr)
                .await
                .expect("connect");
            assert!(l.accept(&canceller).await.is_ok());
            let waiting = l.clone();
            let accept = monoio::spawn(async move {
                let canceller = RefCell::default();
                waiting.accept(&canceller).await.is_err()
            });
            // A timer makes the loop park, which submits the posted accept to the kernel.
            monoio::time::sleep(Duration::from_millis(1)).await;
            l.shut();
            let ended = monoio::time::timeout(Duration::from_secs(5), accept).await;
            assert_eq!(
                ended.ok(),
                Some(true),
                "the accept did not end with an error"
            );
            assert!(std::net::TcpStream::connect(addr).is_err());
        });
    }
}
