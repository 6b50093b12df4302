//! How a unix-domain `listen` (`listen unix:/path`) travels as a [`SocketAddr`], so that
//! server selection by local address, reload matching and claims stay one address
//! comparison, with nothing added to the TCP path.
//!
//! No `listen` can name either form: both use port 0 (refused by the parser) inside the
//! IPv6 discard prefix `100::/64` (RFC 6666), and no TCP peer has port 0.
//!
//! - a listen's *key*: `[100::H]:0`, `H` a 64-bit FNV-1a hash of the path (never 0), the
//!   same for the same path on every load, so a reload keeps the socket;
//! - a unix client: `[100::]:0` ([`UNIX_CLIENT`]): nginx's `$remote_addr` `unix:`, matched
//!   only by `allow`/`deny` `unix:` and `all`.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The address of every client on a unix-domain socket.
pub const UNIX_CLIENT: SocketAddr = SocketAddr::new(IpAddr::V6(DISCARD), 0);

const DISCARD: Ipv6Addr = Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0);

/// The key of `listen unix:PATH`.
pub fn listen_key(path: &std::path::Path) -> SocketAddr {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let ip = (u128::from(DISCARD) | u128::from(h.max(1))).into();
    SocketAddr::new(IpAddr::V6(ip), 0)
}

/// Whether `addr` is a unix listen's key or the unix client.
pub fn is_unix(addr: SocketAddr) -> bool {
    addr.port() == 0 && is_unix_ip(addr.ip())
}

/// Whether `ip` is in the prefix of the unix forms (the unix client's address when it is
/// a client's).
pub fn is_unix_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(a) => u128::from(a) >> 64 == u128::from(DISCARD) >> 64,
        IpAddr::V4(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn keys_are_stable_distinct_and_unix() {
        let a = listen_key(Path::new("/tmp/a.sock"));
        assert_eq!(a, listen_key(Path::new("/tmp/a.sock")));
        assert_ne!(a, listen_key(Path::new("/tmp/b.sock")));
        assert_ne!(a, UNIX_CLIENT);
        assert!(is_unix(a) && is_unix(UNIX_CLIENT));
        assert!(!is_unix("127.0.0.1:80".parse().unwrap()));
        assert!(!is_unix("[100::1]:80".parse().unwrap()));
        assert!(!is_unix_ip("::1".parse().unwrap()));
    }
}
