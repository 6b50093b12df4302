//! The realip module: the one place a request's client address is decided. nginx runs
//! `ngx_http_realip_handler` twice, in post-read (with the server level's settings) and
//! again in preaccess (with the location's); whichever replaces the address first wins,
//! once per request. Every consumer then reads [`Client::addr`]: `$remote_addr`,
//! `$binary_remote_addr`, `$remote_port`, `allow`/`deny`, `geo`, `ip_hash`, `hash`, logs,
//! `$proxy_add_x_forwarded_for`.

use std::net::SocketAddr;

use ringfront_config::{RealIp, RealIpHeader};
use ringfront_http::{ProxyHeader, RequestHead};

/// A request's client address, and the connection's own when realip replaced it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    pub addr: SocketAddr,
    /// `$realip_remote_addr` / `_port`: the address before realip (`None`: not replaced).
    pub from: Option<SocketAddr>,
}

impl Client {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        Client { addr, from: None }
    }

    /// One run of the module with the settings in effect; nothing once the address was
    /// replaced.
    pub(crate) fn apply(
        &mut self,
        conf: Option<&RealIp>,
        buf: &[u8],
        head: &RequestHead,
        pp: Option<&ProxyHeader>,
    ) {
        let Some(conf) = conf else { return };
        if self.from.is_some() {
            return;
        }
        // An address without a port in 100::/64 would read as a unix-domain client
        // (`ringfront_config::unix_addr`): not taken.
        let taken = real(conf, self.addr, buf, head, pp)
            .filter(|a| !ringfront_config::unix_addr::is_unix(*a));
        if let Some(real) = taken {
            self.from = Some(self.addr);
            self.addr = real;
        }
    }
}

/// The address the module puts in place of `addr`, `None` where it declines.
fn real(
    conf: &RealIp,
    addr: SocketAddr,
    buf: &[u8],
    head: &RequestHead,
    pp: Option<&ProxyHeader>,
) -> Option<SocketAddr> {
    let trusted = |ip| conf.from.iter().any(|t| t.contains(ip));
    let value = match &conf.header {
        RealIpHeader::XRealIp => fields(head, buf, "x-real-ip").next()?,
        RealIpHeader::Other(name) => fields(head, buf, name).next()?,
        RealIpHeader::ProxyProtocol => pp?.src_addr.as_bytes(),
        RealIpHeader::XForwardedFor => {
            let values: Vec<&[u8]> = fields(head, buf, "x-forwarded-for").collect();
            if values.is_empty() {
                return None;
            }
            return crate::forwarded::forwarded_addr(addr, &values, &trusted, conf.recursive);
        }
    };
    let real = crate::forwarded::forwarded_addr(addr, &[value], &trusted, conf.recursive)?;
    Some(match (&conf.header, pp) {
        (RealIpHeader::ProxyProtocol, Some(pp)) => SocketAddr::new(real.ip(), pp.src_port),
        _ => real,
    })
}

/// The values of the request's fields named `name` (any case), in order.
fn fields<'a, 'n>(
    head: &'a RequestHead,
    buf: &'a [u8],
    name: &'n str,
) -> impl Iterator<Item = &'a [u8]> + 'n
where
    'a: 'n,
{
    head.headers
        .iter()
        .filter(move |h| h.name.get(buf).eq_ignore_ascii_case(name.as_bytes()))
        .map(move |h| h.value.get(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringfront_config::{Cidr, Trusted};

    fn run(conf: &RealIp, from: &str, head: &str, pp: Option<&ProxyHeader>) -> Client {
        let buf = head.as_bytes();
        let mut h = RequestHead::new();
        h.parse(buf).unwrap();
        let mut c = Client::new(from.parse().unwrap());
        c.apply(Some(conf), buf, &h, pp);
        c
    }

    fn conf(header: RealIpHeader, recursive: bool) -> RealIp {
        RealIp {
            from: vec![Trusted::Net(Cidr::parse("127.0.0.0/8").unwrap())],
            header,
            recursive,
        }
    }

    #[test]
    fn x_real_ip_from_a_trusted_address_only() {
        let c = conf(RealIpHeader::XRealIp, false);
        let head =
            "GET / HTTP/1.1\r\nHost: a\r\nX-Real-IP: 192.0.2.1\r\nX-Real-IP: 192.0.2.2\r\n\r\n";
        let got = run(&c, "127.0.0.1:4000", head, None);
        assert_eq!(got.addr, "192.0.2.1:0".parse().unwrap());
        assert_eq!(got.from, "127.0.0.1:4000".parse().ok());
        let got = run(&c, "10.0.0.1:4000", head, None);
        assert_eq!(
            (got.addr, got.from),
            ("10.0.0.1:4000".parse().unwrap(), None)
        );
        // Not taken: it would read as a unix-domain client.
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Real-IP: 100::\r\n\r\n";
        let got = run(&c, "127.0.0.1:4000", head, None);
        assert_eq!(got.from, None);
    }

    #[test]
    fn forwarded_for_reads_every_field_and_other_names_the_first() {
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 192.0.2.1, 127.0.0.2\r\n\
                    X-Forwarded-For: 127.0.0.3\r\nMy: 192.0.2.7:81\r\n\r\n";
        let got = run(
            &conf(RealIpHeader::XForwardedFor, false),
            "127.0.0.1:1",
            head,
            None,
        );
        assert_eq!(got.addr.ip().to_string(), "127.0.0.3");
        let got = run(
            &conf(RealIpHeader::XForwardedFor, true),
            "127.0.0.1:1",
            head,
            None,
        );
        assert_eq!(got.addr.ip().to_string(), "192.0.2.1");
        let got = run(
            &conf(RealIpHeader::Other("my".into()), false),
            "127.0.0.1:1",
            head,
            None,
        );
        assert_eq!(got.addr, "192.0.2.7:81".parse().unwrap());
    }

    #[test]
    fn proxy_protocol_gives_its_port_and_a_second_run_changes_nothing() {
        let pp = ProxyHeader {
            src_addr: "192.0.2.5".into(),
            src_port: 4321,
            ..Default::default()
        };
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Real-IP: 192.0.2.1\r\n\r\n";
        let mut got = run(
            &conf(RealIpHeader::ProxyProtocol, false),
            "127.0.0.1:1",
            head,
            Some(&pp),
        );
        assert_eq!(got.addr, "192.0.2.5:4321".parse().unwrap());
        let buf = head.as_bytes();
        let mut h = RequestHead::new();
        h.parse(buf).unwrap();
        let mut c = conf(RealIpHeader::XRealIp, false);
        c.from = vec![Trusted::Net(Cidr::parse("0.0.0.0/0").unwrap())];
        got.apply(Some(&c), buf, &h, None);
        assert_eq!(got.addr, "192.0.2.5:4321".parse().unwrap());
        assert_eq!(got.from, "127.0.0.1:1".parse().ok());
    }
}
