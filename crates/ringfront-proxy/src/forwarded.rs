//! The client address behind trusted proxies, as nginx's `ngx_http_get_forwarded_addr`
//! reads `X-Forwarded-For` (used by `geo ... { proxy NET; }`, later by the realip module):
//! when the address is one of the proxies, the last address of the last header replaces
//! it; with `recursive`, the walk goes on leftwards (and into earlier headers) while the
//! address found is a proxy too. An entry that is not an address stops the walk.

use std::net::{IpAddr, SocketAddr};

use ringfront_config::Cidr;

/// The address `addr` stands for, given the header values in the order they came.
pub fn real_addr(addr: IpAddr, values: &[&[u8]], proxies: &[Cidr], recursive: bool) -> IpAddr {
    let trusted = |ip: IpAddr| proxies.iter().any(|p| p.contains(ip));
    forwarded_addr(SocketAddr::new(addr, 0), values, &trusted, recursive).map_or(addr, |a| a.ip())
}

/// nginx's `ngx_http_get_forwarded_addr`: the address (with the port written beside it,
/// else 0) that replaces `addr`, or `None` where nginx declines (`addr` not trusted, or
/// the last entry no address). `values`: the header values in the order they came.
pub fn forwarded_addr(
    addr: SocketAddr,
    values: &[&[u8]],
    trusted: &dyn Fn(IpAddr) -> bool,
    recursive: bool,
) -> Option<SocketAddr> {
    let mut addr = addr;
    let mut replaced = false;
    for value in values.iter().rev() {
        let (outcome, a) = walk(addr, value, trusted, recursive);
        addr = a;
        replaced |= outcome != Walk::Declined;
        if !recursive || outcome != Walk::Whole {
            break;
        }
    }
    replaced.then_some(addr)
}

#[derive(PartialEq, Eq, Debug)]
enum Walk {
    /// The address was not a proxy's (or the last entry no address): nothing replaced.
    Declined,
    /// Replaced, then stopped at an address that is not a proxy's or at a bad entry.
    Stopped,
    /// Replaced with every entry taken (or the first, without `recursive`).
    Whole,
}

/// One header value, from its end.
fn walk(
    mut addr: SocketAddr,
    value: &[u8],
    trusted: &dyn Fn(IpAddr) -> bool,
    recursive: bool,
) -> (Walk, SocketAddr) {
    let mut rest = value;
    let mut found = false;
    loop {
        let stop = if found { Walk::Stopped } else { Walk::Declined };
        if !trusted(addr.ip()) {
            return (stop, addr);
        }
        let end = rest
            .iter()
            .rposition(|&b| b != b' ' && b != b',')
            .map_or(0, |i| i + 1);
        let start = rest[..end]
            .iter()
            .rposition(|&b| b == b' ' || b == b',')
            .map_or(0, |i| i + 1);
        let Some(a) = parse_addr_port(&rest[start..end]) else {
            return (stop, addr);
        };
        addr = a;
        found = true;
        if !recursive || start == 0 {
            return (Walk::Whole, addr);
        }
        rest = &rest[..start - 1];
    }
}

/// nginx's `ngx_parse_addr_port`: an address (port 0), `[IPv6]:PORT` or `IPv4:PORT`.
fn parse_addr_port(text: &[u8]) -> Option<SocketAddr> {
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(a) = text.parse() {
        return Some(SocketAddr::new(a, 0));
    }
    let (host, port) = match text.strip_prefix('[') {
        Some(v6) => {
            let (h, p) = v6.split_once("]:")?;
            (h, p)
        }
        None => text.split_once(':')?,
    };
    let port: u32 = port
        .parse()
        .ok()
        .filter(|_| port.bytes().all(|b| b.is_ascii_digit()))?;
    if !(1..=65535).contains(&port) {
        return None;
    }
    Some(SocketAddr::new(
        host.parse().ok()?,
        u16::try_from(port).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(values: &[&str], recursive: bool) -> String {
        let proxies = [
            Cidr::parse("127.0.0.1").unwrap(),
            Cidr::parse("10.0.0.0/8").unwrap(),
        ];
        let v: Vec<&[u8]> = values.iter().map(|s| s.as_bytes()).collect();
        real_addr("127.0.0.1".parse().unwrap(), &v, &proxies, recursive).to_string()
    }

    #[test]
    fn the_last_entry_of_the_last_header() {
        assert_eq!(real(&["192.0.2.1"], false), "192.0.2.1");
        assert_eq!(real(&["10.0.0.1, 192.0.2.1"], false), "192.0.2.1");
        assert_eq!(real(&["192.0.2.1, 127.0.0.1"], false), "127.0.0.1");
        assert_eq!(real(&["192.0.2.1", "192.0.2.9"], false), "192.0.2.9");
        assert_eq!(real(&["192.0.2.1 ,, "], false), "192.0.2.1");
        assert_eq!(real(&["junk"], false), "127.0.0.1");
        assert_eq!(real(&["192.0.2.1:8080"], false), "192.0.2.1");
        assert_eq!(real(&["[2001:db8::1]:80"], false), "2001:db8::1");
        assert_eq!(real(&["192.0.2.1:0"], false), "127.0.0.1");
    }

    #[test]
    fn recursive_walks_past_proxies() {
        assert_eq!(real(&["192.0.2.1, 127.0.0.1"], true), "192.0.2.1");
        assert_eq!(real(&["192.0.2.7, 192.0.2.1, 10.1.1.1"], true), "192.0.2.1");
        assert_eq!(
            real(&["192.0.2.5", "10.2.2.2, 10.1.1.1"], true),
            "192.0.2.5"
        );
        assert_eq!(
            real(&["192.0.2.5", "192.0.2.6, 10.1.1.1"], true),
            "192.0.2.6"
        );
        assert_eq!(real(&["junk, 10.1.1.1"], true), "10.1.1.1");
    }

    #[test]
    fn the_port_is_kept_and_declining_is_told_apart() {
        let trusted = |ip: IpAddr| ip.is_loopback();
        let from: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let got = |v: &str, rec| forwarded_addr(from, &[v.as_bytes()], &trusted, rec);
        assert_eq!(got("192.0.2.1:8080", false), "192.0.2.1:8080".parse().ok());
        assert_eq!(got("192.0.2.1", false), "192.0.2.1:0".parse().ok());
        // Replaced by itself still counts (nginx sets the address).
        assert_eq!(got("127.0.0.1", false), "127.0.0.1:0".parse().ok());
        assert_eq!(got("junk", false), None);
        assert_eq!(got("junk, 127.0.0.2", true), "127.0.0.2:0".parse().ok());
        let other: SocketAddr = "192.0.2.9:1".parse().unwrap();
        assert_eq!(forwarded_addr(other, &[b"10.0.0.1"], &trusted, true), None);
    }
}
