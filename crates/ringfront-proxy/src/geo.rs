//! `geo` at request time: the address (the client's, or the rendered source; one that does
//! not parse is 255.255.255.255, as nginx; behind a `proxy` the one `X-Forwarded-For`
//! gives), then the longest matching network, or the range holding it in `ranges` mode,
//! or the default.

use std::net::{IpAddr, Ipv4Addr};

use ringfront_config::GeoBlock;

/// The address `geo` looks up for `client` (no source variable): 255.255.255.255 for a
/// unix-domain client, as nginx's lookup of an address that is not IPv4 or IPv6.
pub fn client(client: std::net::SocketAddr) -> IpAddr {
    if ringfront_config::unix_addr::is_unix(client) {
        IpAddr::V4(Ipv4Addr::BROADCAST)
    } else {
        client.ip()
    }
}

/// The value for `addr`.
pub fn pick(g: &GeoBlock, addr: IpAddr) -> &str {
    if !g.ranges.is_empty() {
        let v4 = match addr {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(a) => a.to_ipv4_mapped(),
        };
        let Some(a) = v4.map(u32::from) else {
            return &g.default;
        };
        return ringfront_config::geo_ranges::find(&g.ranges, a).unwrap_or(&g.default);
    }
    g.nets
        .iter()
        .filter(|(n, _)| n.contains(addr))
        .max_by_key(|(n, _)| n.bits)
        .map_or(&g.default, |(_, v)| v)
}

/// The address to look up: `addr`, or behind one of the block's `proxy` networks the one
/// the request's `X-Forwarded-For` fields give.
pub fn real(g: &GeoBlock, addr: IpAddr, head: &ringfront_http::RequestHead, buf: &[u8]) -> IpAddr {
    if g.proxies.is_empty() {
        return addr;
    }
    let xff: Vec<&[u8]> = head
        .headers
        .iter()
        .filter(|h| h.name.get(buf).eq_ignore_ascii_case(b"x-forwarded-for"))
        .map(|h| h.value.get(buf))
        .collect();
    crate::forwarded::real_addr(addr, &xff, &g.proxies, g.proxy_recursive)
}

/// A source value as an address (nginx's INADDR_NONE when it is not one).
pub fn address(text: &[u8]) -> IpAddr {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(IpAddr::V4(Ipv4Addr::BROADCAST))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringfront_config::Cidr;

    fn geo(nets: &[(&str, &str)], ranges: Vec<(u32, u32, String)>) -> GeoBlock {
        GeoBlock {
            name: "g".into(),
            source: None,
            default: "def".into(),
            nets: nets
                .iter()
                .map(|(n, v)| (Cidr::parse(n).unwrap(), v.to_string()))
                .collect(),
            ranges,
            proxies: Vec::new(),
            proxy_recursive: false,
        }
    }

    #[test]
    fn longest_prefix_and_ranges() {
        let g = geo(
            &[
                ("10.0.0.0/8", "ten"),
                ("10.1.0.0/16", "ten-one"),
                ("::1", "v6"),
            ],
            vec![],
        );
        let pick = |a: &str| pick(&g, a.parse().unwrap()).to_string();
        assert_eq!(pick("10.1.2.3"), "ten-one");
        assert_eq!(pick("10.2.2.3"), "ten");
        assert_eq!(pick("::1"), "v6");
        assert_eq!(pick("192.0.2.1"), "def");
        assert_eq!(address(b"not an address"), IpAddr::V4(Ipv4Addr::BROADCAST));
        let r = geo(
            &[],
            vec![(
                u32::from(Ipv4Addr::new(1, 0, 0, 0)),
                u32::from(Ipv4Addr::new(1, 0, 0, 9)),
                "r".into(),
            )],
        );
        assert_eq!(pick_str(&r, "1.0.0.5"), "r");
        assert_eq!(pick_str(&r, "1.0.0.10"), "def");
    }

    fn pick_str<'a>(g: &'a GeoBlock, a: &str) -> &'a str {
        pick(g, a.parse().unwrap())
    }
}
