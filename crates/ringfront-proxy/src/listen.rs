//! Claiming a `listen` address before the workers bind it. Every worker binds its own
//! `SO_REUSEPORT` socket, and Linux lets any process of the same user join such a group: a
//! second instance on the same `listen` would silently take a share of the connections.
//! nginx binds without `SO_REUSEPORT` and refuses with `bind() to ADDR failed (98: Address
//! already in use)`; a [`Claim`] gives ringfront the same answer while keeping the
//! per-worker listeners.
//!
//! A claim is two things, taken in this order and held while the address is served:
//!
//! - a lock: an abstract Unix socket named after the address (`ringfront/listen/ADDR`).
//!   Binding it is atomic and the kernel releases it when the process dies, so of two
//!   ringfronts starting (or reloading) on the same address at the same moment only one gets
//!   past this step, whatever the timing of their TCP binds;
//! - a probe: a TCP socket bound with `SO_REUSEADDR` (as every listener is, so `TIME_WAIT`
//!   connections left by an earlier instance do not block it) and without `SO_REUSEPORT`,
//!   then closed. It fails with `EADDRINUSE` when anybody (nginx, another server, a ringfront
//!   that predates claims) listens on the address, a wildcard one included.
//!
//! What is left outside: a program that binds with `SO_REUSEPORT` between a probe and the
//! workers' binds. A program without `SO_REUSEPORT` that starts later fails its own bind.

use std::io;
use std::net::SocketAddr;
use std::os::unix::net::UnixListener;

/// An address this process may bind its per-worker listeners on; dropping it lets another
/// instance claim the address (close the listeners first).
#[derive(Debug)]
pub struct Claim {
    addr: SocketAddr,
    _lock: Option<UnixListener>,
}

impl Claim {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Claims `addr`, or says why not in nginx's words:
/// `bind() to 127.0.0.1:8080 failed (98: Address already in use)`.
/// A unix-domain `listen` (its key, `ringfront_config::unix_addr`) needs no claim: its one
/// socket is bound by the engine, whose bind finds one somebody listens on
/// (`unix_listen.rs`).
pub fn claim(addr: SocketAddr) -> io::Result<Claim> {
    if ringfront_config::unix_addr::is_unix(addr) {
        return Ok(Claim { addr, _lock: None });
    }
    let lock = lock(addr).map_err(|e| bind_failed(addr, &e))?;
    probe(addr).map_err(|e| bind_failed(addr, &e))?;
    Ok(Claim {
        addr,
        _lock: Some(lock),
    })
}

fn lock(addr: SocketAddr) -> io::Result<UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("ringfront/listen/{addr}");
    let sa = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    UnixListener::bind_addr(&sa)
}

fn probe(addr: SocketAddr) -> io::Result<()> {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    // As the listener will be (nginx's default): `[::]:80` beside `0.0.0.0:80` is no clash.
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.bind(&addr.into())
}

/// nginx's wording for a failed bind: `bind() to ADDR failed (ERRNO: TEXT)`.
pub(crate) fn bind_failed(addr: impl std::fmt::Display, e: &io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("bind() to {addr} failed ({})", os_error(e)),
    )
}

/// `98: Address already in use` (nginx's `(errno: strerror)`), from Rust's
/// `Address already in use (os error 98)`.
pub(crate) fn os_error(e: &io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(n) => {
            let msg = text
                .strip_suffix(&format!(" (os error {n})"))
                .unwrap_or(&text);
            format!("{n}: {msg}")
        }
        None => text,
    }
}

/// A listening socket with `SO_REUSEPORT` (one per worker and address) and nginx's backlog.
/// Bound on the calling thread, so start-up errors reach the caller. The binary claims the
/// address first (`listen::claim`), so no other instance is in the group.
pub fn bind_std(l: &crate::snapshot::ListenRt) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let addr = l.addr;
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    sock.set_nonblocking(true)?;
    if addr.is_ipv6() {
        // nginx sets IPV6_V6ONLY on every IPv6 listener, on unless `ipv6only=off`.
        sock.set_only_v6(l.options.ipv6only.unwrap_or(true))?;
    }
    set_options(&sock, &l.options)?;
    sock.bind(&addr.into())
        .map_err(|e| crate::listen::bind_failed(addr, &e))?;
    sock.listen(l.backlog)?;
    Ok(sock.into())
}

/// `rcvbuf=`, `sndbuf=`, `so_keepalive=`, `fastopen=` on the listening socket; accepted
/// connections inherit them (as nginx sets them on its listening sockets). `TCP_NODELAY`,
/// which every client connection gets, is inherited the same way: set here once, it costs
/// no `setsockopt` per accept.
fn set_options(sock: &socket2::Socket, o: &ringfront_config::SocketOptions) -> std::io::Result<()> {
    use ringfront_config::KeepAlive;
    sock.set_nodelay(true)?;
    if let Some(n) = o.rcvbuf {
        sock.set_recv_buffer_size(usize::try_from(n).unwrap_or(usize::MAX))?;
    }
    if let Some(n) = o.sndbuf {
        sock.set_send_buffer_size(usize::try_from(n).unwrap_or(usize::MAX))?;
    }
    if let Some(n) = o.fastopen {
        set_fastopen(sock, n)?;
    }
    match o.keepalive {
        None => {}
        Some(KeepAlive::Off) => sock.set_keepalive(false)?,
        Some(KeepAlive::On) => sock.set_keepalive(true)?,
        Some(KeepAlive::Tuned {
            idle,
            interval,
            count,
        }) => {
            let mut k = socket2::TcpKeepalive::new();
            if let Some(t) = idle {
                k = k.with_time(t);
            }
            if let Some(t) = interval {
                k = k.with_interval(t);
            }
            if let Some(n) = count {
                k = k.with_retries(n);
            }
            sock.set_tcp_keepalive(&k)?;
        }
    }
    Ok(())
}

/// `TCP_FASTOPEN` with the queue length `n` (socket2 has no setter for it).
#[allow(unsafe_code)]
fn set_fastopen(sock: &socket2::Socket, n: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
    // SAFETY: the descriptor is the open socket `sock` owns; the option value is a live
    // `c_int` whose size is passed with it, as setsockopt(2) requires.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN,
            std::ptr::addr_of!(value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free() -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }

    /// `fastopen=` and `ipv6only=` reach the listening socket, as nginx sets them (on the
    /// wildcard address: Linux makes a socket bound to one IPv6 address v6-only anyway).
    #[test]
    #[allow(unsafe_code)]
    fn fastopen_and_ipv6only_are_set_on_the_listener() {
        use std::os::fd::AsRawFd;
        let get = |fd: i32, level: i32, name: i32| {
            let mut v: libc::c_int = -1;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: `fd` is an open socket; `v` and `len` are live and sized for it.
            let rc = unsafe {
                libc::getsockopt(fd, level, name, std::ptr::addr_of_mut!(v).cast(), &mut len)
            };
            assert_eq!(rc, 0);
            v
        };
        let rt = |addr: &str, options| crate::snapshot::ListenRt {
            addr: addr.parse().unwrap(),
            ssl: false,
            proxy_protocol: false,
            backlog: 16,
            options,
            unix: None,
        };
        let options = ringfront_config::SocketOptions {
            fastopen: Some(7),
            ..Default::default()
        };
        let l = bind_std(&rt("127.0.0.1:0", options)).unwrap();
        assert_eq!(get(l.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_FASTOPEN), 7);
        let v6 = bind_std(&rt("[::]:0", Default::default())).unwrap();
        assert_eq!(
            get(v6.as_raw_fd(), libc::IPPROTO_IPV6, libc::IPV6_V6ONLY),
            1,
            "nginx's default"
        );
        let off = ringfront_config::SocketOptions {
            ipv6only: Some(false),
            ..Default::default()
        };
        let v6 = bind_std(&rt("[::]:0", off)).unwrap();
        assert_eq!(
            get(v6.as_raw_fd(), libc::IPPROTO_IPV6, libc::IPV6_V6ONLY),
            0
        );
    }

    /// Every client connection has `TCP_NODELAY` without a `setsockopt` of its own: the
    /// accepted socket takes it from the listener.
    #[test]
    fn accepted_connections_inherit_nodelay() {
        let l = bind_std(&crate::snapshot::ListenRt {
            addr: "127.0.0.1:0".parse().unwrap(),
            ssl: false,
            proxy_protocol: false,
            backlog: 16,
            options: Default::default(),
            unix: None,
        })
        .unwrap();
        let _client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (accepted, _) = l.accept().unwrap();
        assert!(accepted.nodelay().unwrap());
    }

    #[test]
    fn errors_read_like_nginx() {
        let e = bind_failed(
            "127.0.0.1:80".parse::<SocketAddr>().unwrap(),
            &io::Error::from_raw_os_error(libc::EADDRINUSE),
        );
        assert_eq!(
            e.to_string(),
            "bind() to 127.0.0.1:80 failed (98: Address already in use)"
        );
    }

    #[test]
    fn a_claimed_address_cannot_be_claimed_again_until_dropped() {
        let addr = free();
        let first = claim(addr).unwrap();
        let err = claim(addr).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
        drop(first);
        claim(addr).unwrap();
    }

    #[test]
    fn an_address_another_socket_listens_on_is_refused() {
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = other.local_addr().unwrap();
        let err = claim(addr).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("failed (98: Address already in use)"),
            "{err}"
        );
        drop(other);
        claim(addr).unwrap();
    }
}
