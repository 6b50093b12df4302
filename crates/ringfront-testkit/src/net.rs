//! Ports and unusual listeners on loopback: a free port, and a listener whose accept queue is
//! full so that connects to it hang (the loopback way to provoke `proxy_connect_timeout`,
//! since unroutable addresses are intercepted on the test machines).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use socket2::Socket;

/// A port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close), and that
/// this process has not handed out before: the kernel may give a just-closed port to the
/// next `bind(0)`, and two tests running in parallel with the same port would both listen
/// on it (ringfront and nginx bind with `SO_REUSEPORT`) and share each other's connections.
pub fn free_port() -> u16 {
    let listener = fresh_listener();
    listener.local_addr().expect("local_addr").port()
}

/// A listener on a kernel-chosen 127.0.0.1 port that no other test of this process was given
/// by [`free_port`] or holds through this function: a test's own listeners (backends) must not
/// take a port that was handed out for a proxy still starting or for a peer kept dead.
pub fn fresh_listener() -> TcpListener {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    // Ports refused here stay bound until one is accepted, so bind(0) cannot return them
    // again in this loop.
    let mut refused = Vec::new();
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return listener;
        }
        drop(given);
        refused.push(listener);
    }
}

/// A listener on 127.0.0.1 that never accepts and whose accept queue is full, so the kernel
/// drops further SYNs and connects to it time out instead of being refused.
///
/// Linux counts the accept queue as full when it holds *more* than `backlog` connections
/// (`sk_acceptq_is_full`), so with backlog 0 one connection completes and later SYNs are
/// dropped (LISTENOVERFLOWS). The filler connections are kept open for the listener's life.
pub struct FullBacklogListener {
    addr: SocketAddr,
    _listener: Socket,
    _fillers: Vec<TcpStream>,
}

impl FullBacklogListener {
    /// Binds, fills the queue and checks that a further connect really hangs; panics if the
    /// kernel does not behave that way.
    pub fn start() -> FullBacklogListener {
        // listen() again on a listening socket sets its backlog anew (Linux).
        let listener = Socket::from(fresh_listener());
        listener.listen(0).expect("listen");
        let addr = listener
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .expect("local_addr");
        let mut fillers = Vec::new();
        for _ in 0..8 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(150)) {
                Ok(s) => fillers.push(s),
                Err(e) if is_timeout(&e) => {
                    return FullBacklogListener {
                        addr,
                        _listener: listener,
                        _fillers: fillers,
                    }
                }
                Err(e) => panic!("FullBacklogListener: filler connect to {addr} failed: {e}"),
            }
        }
        panic!(
            "FullBacklogListener: {} connects to a backlog-0 listener all succeeded; this \
             kernel does not drop SYNs on a full accept queue",
            fillers.len()
        );
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// Closes `s` with `SO_LINGER` 0: the peer gets a TCP reset instead of an end of stream.
pub fn reset(s: TcpStream) {
    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
    drop(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn free_port_is_bindable() {
        let port = free_port();
        assert_ne!(port, 0);
        TcpListener::bind(("127.0.0.1", port)).expect("free port can be bound");
    }

    #[test]
    fn full_backlog_listener_makes_connects_time_out() {
        let l = FullBacklogListener::start();
        for _ in 0..2 {
            let t = Instant::now();
            let err = TcpStream::connect_timeout(&l.addr(), Duration::from_millis(300))
                .expect_err("connect to a full backlog must not succeed");
            assert!(is_timeout(&err), "expected a timeout, got {err}");
            assert!(t.elapsed() >= Duration::from_millis(290));
        }
    }
}
