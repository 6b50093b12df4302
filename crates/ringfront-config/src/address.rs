//! Addresses as nginx's `ngx_parse_url` reads them: `host`, `host:port`, `[v6]:port`, a bare
//! port for `listen`, and resolution of host names through the caller's [`Host`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::host::Host;

/// Why an address was refused; `as_str` is nginx's `u.err` wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddrError {
    InvalidPort,
    InvalidPortRange,
    NoHost,
    NoPath,
    LongPath,
    InvalidHost,
    Unix,
    HostNotFound,
}

impl AddrError {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AddrError::InvalidPort => "invalid port",
            AddrError::InvalidPortRange => "invalid port range",
            AddrError::NoHost => "no host",
            AddrError::NoPath => "no path in the unix domain socket",
            AddrError::LongPath => "too long path in the unix domain socket",
            AddrError::InvalidHost => "invalid host",
            AddrError::Unix => "unix domain sockets are not supported",
            AddrError::HostNotFound => "host not found",
        }
    }
}

/// A host (brackets removed from IPv6) and the port if one was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPort {
    pub host: String,
    pub port: Option<u16>,
}

fn parse_port(text: &str) -> Result<u16, AddrError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AddrError::InvalidPort);
    }
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err(AddrError::InvalidPort),
        Ok(port) => Ok(port),
    }
}

/// Splits `host[:port]` / `[v6][:port]`.
pub(crate) fn split_host_port(text: &str) -> Result<HostPort, AddrError> {
    if text.starts_with("unix:") {
        return Err(AddrError::Unix);
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or(AddrError::InvalidHost)?;
        if inside.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(AddrError::InvalidHost);
        }
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or(AddrError::InvalidHost)?),
        };
        (inside, port)
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = port.map(parse_port).transpose()?;
    if host.is_empty() {
        return Err(AddrError::NoHost);
    }
    let bad =
        |c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '@' | ':' | '[' | ']' | '\\');
    if !text.starts_with('[') && host.contains(bad) {
        return Err(AddrError::InvalidHost);
    }
    Ok(HostPort {
        host: host.to_string(),
        port,
    })
}

/// nginx's `ngx_parse_addr_port` (`proxy_bind`): `IP`, `IP:PORT`, `[V6]:PORT` or a bare
/// IPv6 address; port 0 (the kernel's choice) when none is written.
pub fn parse_addr_port(text: &str) -> Option<SocketAddr> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr);
    }
    let ip = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    ip.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 0))
}

/// Resolves a host; literal addresses never reach the resolver. Every address is kept, once,
/// IPv4 ones first (nginx's `ngx_inet_resolve_host` order), otherwise in the resolver's order.
pub(crate) fn resolve(host: &str, port: u16, sys: &dyn Host) -> Result<Vec<SocketAddr>, AddrError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    match sys.resolve(host, port) {
        Ok(addrs) if !addrs.is_empty() => {
            let mut unique: Vec<SocketAddr> = Vec::with_capacity(addrs.len());
            for addr in addrs {
                if !unique.contains(&addr) {
                    unique.push(addr);
                }
            }
            unique.sort_by_key(|a| a.is_ipv6());
            Ok(unique)
        }
        _ => Err(AddrError::HostNotFound),
    }
}

/// A `listen` address: `8080` (all IPv4 addresses), `*:8080`, `127.0.0.1` (port 80),
/// `127.0.0.1:8080`, `[::]:8080`, `localhost:8080`; a port may be a range `8182-8183`
/// (nginx 1.15.10+), one address per port.
pub(crate) fn listen_addrs(text: &str, sys: &dyn Host) -> Result<Vec<SocketAddr>, AddrError> {
    let (text, last) = split_range(text)?;
    let first = listen_addrs_one(&text, sys)?;
    let Some(last) = last else {
        return Ok(first);
    };
    let mut all = Vec::new();
    for port in first.first().map_or(last, SocketAddr::port)..=last {
        all.extend(first.iter().map(|a| SocketAddr::new(a.ip(), port)));
    }
    Ok(all)
}

/// `ADDR:FIRST-LAST` -> (`ADDR:FIRST`, `Some(LAST)`), as nginx's `ngx_parse_inet_url` for
/// `listen`: both ports valid, `FIRST <= LAST`.
fn split_range(text: &str) -> Result<(String, Option<u16>), AddrError> {
    let port_start = match text.rfind(']') {
        Some(close) => text[close..]
            .find(':')
            .map_or(text.len(), |i| close + i + 1),
        None => text.rfind(':').map_or(0, |i| i + 1),
    };
    let Some((first, last)) = text[port_start..].split_once('-') else {
        return Ok((text.to_string(), None));
    };
    let last = parse_port(last)?;
    if parse_port(first)? > last {
        return Err(AddrError::InvalidPortRange);
    }
    Ok((format!("{}{first}", &text[..port_start]), Some(last)))
}

fn listen_addrs_one(text: &str, sys: &dyn Host) -> Result<Vec<SocketAddr>, AddrError> {
    let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(vec![SocketAddr::new(any, parse_port(text)?)]);
    }
    if let Some(rest) = text.strip_prefix('*') {
        let port = match rest {
            "" => 80,
            _ => parse_port(rest.strip_prefix(':').ok_or(AddrError::InvalidHost)?)?,
        };
        return Ok(vec![SocketAddr::new(any, port)]);
    }
    let hp = split_host_port(text)?;
    resolve(&hp.host, hp.port.unwrap_or(80), sys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::MemoryHost;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|ip| ip.parse().unwrap()).collect()
    }

    fn hp(host: &str, port: Option<u16>) -> Result<HostPort, AddrError> {
        Ok(HostPort {
            host: host.into(),
            port,
        })
    }

    #[test]
    fn splits() {
        assert_eq!(split_host_port("a"), hp("a", None));
        assert_eq!(split_host_port("a:81"), hp("a", Some(81)));
        assert_eq!(
            split_host_port("127.0.0.1:9001"),
            hp("127.0.0.1", Some(9001))
        );
        assert_eq!(split_host_port("[::1]:8080"), hp("::1", Some(8080)));
        assert_eq!(split_host_port("[::1]"), hp("::1", None));
        assert_eq!(split_host_port("a:0"), Err(AddrError::InvalidPort));
        assert_eq!(split_host_port("a:65536"), Err(AddrError::InvalidPort));
        assert_eq!(split_host_port("a:x"), Err(AddrError::InvalidPort));
        assert_eq!(split_host_port("a:"), Err(AddrError::InvalidPort));
        assert_eq!(split_host_port(":80"), Err(AddrError::NoHost));
        assert_eq!(split_host_port("unix:/tmp/s"), Err(AddrError::Unix));
        assert_eq!(split_host_port("::1"), Err(AddrError::InvalidHost));
        assert_eq!(split_host_port("[zz]:1"), Err(AddrError::InvalidHost));
        assert_eq!(split_host_port("a/b"), Err(AddrError::InvalidHost));
    }

    #[test]
    fn addr_port_as_proxy_bind_reads_it() {
        let a = |s: &str| parse_addr_port(s).map(|a| a.to_string());
        assert_eq!(a("127.0.0.2"), Some("127.0.0.2:0".into()));
        assert_eq!(a("127.0.0.2:81"), Some("127.0.0.2:81".into()));
        assert_eq!(a("::1"), Some("[::1]:0".into()));
        assert_eq!(a("[::1]"), Some("[::1]:0".into()));
        assert_eq!(a("[::1]:81"), Some("[::1]:81".into()));
        assert_eq!(a("localhost"), None);
        assert_eq!(a("127.0.0.2:x"), None);
    }

    #[test]
    fn listen_forms() {
        let no_dns = MemoryHost::new();
        let one = |s: &str| listen_addrs(s, &no_dns).map(|v| v[0].to_string());
        assert_eq!(one("8080"), Ok("0.0.0.0:8080".into()));
        assert_eq!(one("*:8080"), Ok("0.0.0.0:8080".into()));
        assert_eq!(one("127.0.0.1"), Ok("127.0.0.1:80".into()));
        assert_eq!(one("127.0.0.1:8080"), Ok("127.0.0.1:8080".into()));
        assert_eq!(one("[::]:8080"), Ok("[::]:8080".into()));
        assert_eq!(one("70000"), Err(AddrError::InvalidPort));
        assert_eq!(one("bad:80"), Err(AddrError::HostNotFound));
    }

    #[test]
    fn listen_port_ranges() {
        let no_dns = MemoryHost::new();
        let all = |s: &str| {
            listen_addrs(s, &no_dns).map(|v| v.iter().map(|a| a.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            all("127.0.0.1:8182-8184"),
            Ok(vec![
                "127.0.0.1:8182".to_string(),
                "127.0.0.1:8183".into(),
                "127.0.0.1:8184".into()
            ])
        );
        assert_eq!(
            all("[::1]:81-82"),
            Ok(vec!["[::1]:81".to_string(), "[::1]:82".into()])
        );
        assert_eq!(
            all("81-82"),
            Ok(vec!["0.0.0.0:81".to_string(), "0.0.0.0:82".into()])
        );
        assert_eq!(all("*:81-81"), Ok(vec!["0.0.0.0:81".to_string()]));
        assert_eq!(all("127.0.0.1:82-81"), Err(AddrError::InvalidPortRange));
        assert_eq!(all("127.0.0.1:81-0"), Err(AddrError::InvalidPort));
        assert_eq!(all("127.0.0.1:81-x"), Err(AddrError::InvalidPort));
    }

    #[test]
    fn resolver_gets_host_and_port_and_duplicates_go() {
        let dns = MemoryHost::new().name("backend", &ips(&["10.0.0.1", "10.0.0.1"]));
        let got = resolve("backend", 81, &dns).unwrap();
        assert_eq!(got, ["10.0.0.1:81".parse().unwrap()]);
        let empty = MemoryHost::new().name("none", &[]);
        assert_eq!(resolve("none", 81, &empty), Err(AddrError::HostNotFound));
    }

    #[test]
    fn every_address_ipv4_first() {
        let dns = MemoryHost::new().name("h", &ips(&["::1", "127.0.0.1", "::2", "10.0.0.1"]));
        let got: Vec<String> = resolve("h", 80, &dns)
            .unwrap()
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(got, ["127.0.0.1:80", "10.0.0.1:80", "[::1]:80", "[::2]:80"]);
    }
}
