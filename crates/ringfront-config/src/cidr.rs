//! Networks as nginx writes them (`10.0.0.0/8`, `::1`, `2001:db8::/32`): parsed once, and
//! the containment test `allow`/`deny` and `geo` share (IPv4-mapped IPv6 addresses count as
//! IPv4).

use std::net::IpAddr;

/// A network: its address (as written) and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub bits: u8,
}

impl Cidr {
    /// `ADDR[/BITS]`; a bare address is a host (/32, /128).
    pub fn parse(text: &str) -> Option<Cidr> {
        let (addr, bits) = match text.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) if !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()) => {
                b.parse::<u8>().ok().filter(|&n| n <= max)?
            }
            Some(_) => return None,
            None => max,
        };
        Some(Cidr { addr, bits })
    }

    /// Whether `ip` is in the network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_contain() {
        let n = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.0.1".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
        assert_eq!(Cidr::parse("::1").unwrap().bits, 128);
        assert!(Cidr::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "x", "10.0.0.0/", "10.0.0.0/a"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }
}
