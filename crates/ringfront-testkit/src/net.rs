//! Ports and unusual listeners on loopback: a free port, and a listener whose accept queue is
//! full so that connects to it hang (the loopback way to provoke `proxy_connect_timeout`,
//! since unroutable addresses are intercepted on the test machines).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use socket2::Socket;

/// A port on 127.0.0.1 for a process a test starts (ringfront, nginx) or keeps dead: free
/// now, and nobody else's until this process ends.
///
/// - It lies outside the kernel's ephemeral range (`ip_local_port_range`), so no process's
///   outgoing connection can take it as its source port before the proxy binds it (with a
///   port from `bind(0)` that happened: nginx failed with "Address already in use").
/// - It is reserved for this process's life under an abstract socket name, so no other test
///   process is given it (two tests on one port would share connections: ringfront and nginx
///   bind with `SO_REUSEPORT`).
///
/// Where the ephemeral range leaves no room, a kernel-chosen port as [`fresh_listener`] gives.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let Some((lo, hi)) = handout_range() else {
        return fresh_listener().local_addr().expect("local_addr").port();
    };
    let span = u32::from(hi - lo);
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let port = lo + ((start + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        if take(port) {
            return port;
        }
    }
    panic!("no free port in 127.0.0.1:{lo}..{hi}");
}

/// Two neighbouring ports, `p` and `p + 1` (a `listen` range), each free now and reserved
/// for this process as [`free_port`] reserves one, so no other test is given the second.
pub fn free_port_pair() -> u16 {
    for _ in 0..1000 {
        let p = free_port();
        if p.checked_add(1).is_some_and(take) {
            return p;
        }
    }
    panic!("no two neighbouring free ports on 127.0.0.1");
}

/// Reserves `port` for this process's life when it is free on 127.0.0.1 now.
fn take(port: u16) -> bool {
    static HELD: std::sync::Mutex<Vec<std::os::unix::net::UnixListener>> =
        std::sync::Mutex::new(Vec::new());
    let Ok(lock) = reserve(port) else {
        return false;
    };
    if TcpListener::bind(("127.0.0.1", port)).is_err() {
        return false;
    }
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push(lock);
    true
}

/// Writes `PORT` for each mention of a port as a whole number (not inside a longer run of
/// digits, so `max-age=315360000` stays as it is beside port 31536): for comparing the
/// answers of servers that listen on different ports.
pub trait MaskPort {
    fn mask_port(&self, port: u16) -> String {
        self.mask_port_as(port, "PORT")
    }

    /// The same, writing `label` in place of the port.
    fn mask_port_as(&self, port: u16, label: &str) -> String;
}

impl<T: AsRef<str> + ?Sized> MaskPort for T {
    fn mask_port_as(&self, port: u16, label: &str) -> String {
        let text = self.as_ref();
        let needle = port.to_string();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while let Some(at) = text[i..].find(&needle) {
            let (start, end) = (i + at, i + at + needle.len());
            let digit_before = text[..start]
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_digit());
            let digit_after = text[end..]
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit());
            out.push_str(&text[i..start]);
            out.push_str(if digit_before || digit_after {
                &needle
            } else {
                label
            });
            i = end;
        }
        out.push_str(&text[i..]);
        out
    }
}

/// Up to 10,000 ports just below the ephemeral range (or just above it), never under 10000.
fn handout_range() -> Option<(u16, u16)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u32>().ok());
    let (low, high) = (it.next()??, it.next()??);
    if low >= 11_000 {
        Some((low.saturating_sub(10_000).max(10_000) as u16, low as u16))
    } else if high <= 54_535 {
        Some(((high + 1) as u16, (high + 10_001) as u16))
    } else {
        None
    }
}

/// Holds `port` for this process: an abstract unix socket name only one process can bind.
fn reserve(port: u16) -> io::Result<std::os::unix::net::UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("ringfront-testkit/port/{port}");
    let sa = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    std::os::unix::net::UnixListener::bind_addr(&sa)
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
    fn mask_port_masks_whole_numbers_only() {
        let text = "http://h:31536/ max-age=315360000 131536 31536";
        assert_eq!(
            text.mask_port(31536),
            "http://h:PORT/ max-age=315360000 131536 PORT"
        );
        assert_eq!(String::from("no port").mask_port(80), "no port");
    }

    #[test]
    fn free_ports_are_outside_the_ephemeral_range_and_reserved() {
        let (lo, hi) = handout_range().expect("room beside the ephemeral range here");
        let a = free_port();
        let b = free_port();
        assert_ne!(a, b);
        for p in [a, b] {
            assert!((lo..hi).contains(&p), "{p} not in {lo}..{hi}");
            // Another process asking now would find the name taken.
            assert!(reserve(p).is_err(), "{p} is not reserved");
        }
    }

    #[test]
    fn both_ports_of_a_pair_are_free_and_reserved() {
        let p = free_port_pair();
        for port in [p, p + 1] {
            TcpListener::bind(("127.0.0.1", port)).expect("a port of the pair can be bound");
            // A range test's second port is not handed to a test running beside it.
            assert!(reserve(port).is_err(), "{port} is not reserved");
        }
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
