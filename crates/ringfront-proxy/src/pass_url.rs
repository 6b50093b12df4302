//! The URL of a `proxy_pass` with variables, read per request as nginx's `ngx_http_proxy_eval`
//! reads it (`ngx_parse_url` with a URI part and no resolving): the scheme, the host as
//! written (`[::1]` keeps its brackets), the port, the URI part, and the address when the
//! host is a literal IP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// One evaluated `proxy_pass` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassUrl<'a> {
    /// `https://`.
    pub tls: bool,
    /// As written, IPv6 with its brackets (nginx's `url.host`), what upstream names are
    /// compared with.
    pub host: &'a str,
    /// The port written, else the scheme's (80 or 443).
    pub port: u16,
    /// No port was written.
    pub no_port: bool,
    /// `$proxy_host` and the `Host` sent: the host, with `:PORT` as written unless it is the
    /// scheme's default (nginx's `ngx_http_proxy_set_vars`).
    pub host_header: &'a str,
    /// The URI part (`/x`, `/?a` for a bare `?a`), empty when none was written: it then
    /// passes the client's URI, as without variables.
    pub uri: Vec<u8>,
    /// The host is a literal address.
    pub addr: Option<SocketAddr>,
    /// `http://unix:PATH[:URI]`: the socket's path (`host` is the path too, the port 0 and
    /// the `Host` sent `localhost`, as nginx).
    pub unix: Option<&'a str>,
}

/// Why an evaluated URL cannot be used; nginx logs these words and answers 500.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    /// Not `http://` or `https://` (`invalid URL prefix in "URL"`).
    Prefix,
    /// `ngx_parse_url`'s `u.err` (`... in upstream "REST"`).
    Invalid(&'static str),
}

impl UrlError {
    /// nginx's error-log line for `url` (the whole evaluated value).
    pub fn message(&self, url: &[u8]) -> String {
        let text = String::from_utf8_lossy(url);
        match self {
            UrlError::Prefix => format!("invalid URL prefix in \"{text}\""),
            UrlError::Invalid(why) => {
                let rest = text
                    .split_once("://")
                    .map_or(text.as_ref(), |(_, rest)| rest);
                format!("{why} in upstream \"{rest}\"")
            }
        }
    }
}

/// Reads an evaluated `proxy_pass` value.
pub fn parse(url: &[u8]) -> Result<PassUrl<'_>, UrlError> {
    let starts = |p: &[u8]| url.len() > p.len() && url[..p.len()].eq_ignore_ascii_case(p);
    let (tls, rest) = if starts(b"http://") {
        (false, &url[7..])
    } else if starts(b"https://") {
        (true, &url[8..])
    } else {
        return Err(UrlError::Prefix);
    };
    let rest = std::str::from_utf8(rest).map_err(|_| UrlError::Invalid("invalid host"))?;
    if rest.len() >= 5 && rest[..5].eq_ignore_ascii_case("unix:") {
        return unix(tls, &rest[5..]);
    }
    let default_port = if tls { 443 } else { 80 };
    let (host, port_text, uri) = if rest.starts_with('[') {
        split_v6(rest)?
    } else {
        split_v4(rest)
    };
    let port = match port_text {
        Some(p) => parse_port(p).ok_or(UrlError::Invalid("invalid port"))?,
        None => default_port,
    };
    if host.is_empty() {
        return Err(UrlError::Invalid("no host"));
    }
    let host_header = match port_text {
        Some(_) if port != default_port => &rest[..host.len() + 1 + port_text.map_or(0, str::len)],
        _ => host,
    };
    let mut uri_part = Vec::with_capacity(uri.len() + 1);
    if uri.starts_with('?') {
        uri_part.push(b'/');
    }
    uri_part.extend_from_slice(uri.as_bytes());
    Ok(PassUrl {
        tls,
        host,
        port,
        no_port: port_text.is_none(),
        host_header,
        uri: uri_part,
        addr: literal(host).map(|ip| SocketAddr::new(ip, port)),
        unix: None,
    })
}

/// `unix:PATH[:URI]`: the first `:` ends the path (nginx's `ngx_parse_unix_domain_url`).
fn unix(tls: bool, rest: &str) -> Result<PassUrl<'_>, UrlError> {
    let (path, uri) = rest.split_once(':').unwrap_or((rest, ""));
    if path.is_empty() {
        return Err(UrlError::Invalid("no path in the unix domain socket"));
    }
    if tls {
        return Err(UrlError::Invalid(
            "https to a unix domain socket is not supported by ringfront",
        ));
    }
    Ok(PassUrl {
        tls,
        host: path,
        port: 0,
        no_port: false,
        host_header: "localhost",
        uri: uri.as_bytes().to_vec(),
        addr: None,
        unix: Some(path),
    })
}

/// `host[:port][/uri | ?args]`: the port is after the first `:` before the URI.
fn split_v4(rest: &str) -> (&str, Option<&str>, &str) {
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, uri) = rest.split_at(end);
    match authority.split_once(':') {
        Some((host, port)) => (host, Some(port), uri),
        None => (authority, None, uri),
    }
}

/// `[v6][:port][/uri]` (nginx looks only for `/` after the bracket).
fn split_v6(rest: &str) -> Result<(&str, Option<&str>, &str), UrlError> {
    let close = rest.find(']').ok_or(UrlError::Invalid("invalid host"))?;
    let after = &rest[close + 1..];
    let end = after.find('/').unwrap_or(after.len());
    let (port, uri) = after.split_at(end);
    let port = match port {
        "" => None,
        p => Some(
            p.strip_prefix(':')
                .ok_or(UrlError::Invalid("invalid host"))?,
        ),
    };
    if close == 1 {
        return Err(UrlError::Invalid("no host"));
    }
    Ok((&rest[..=close], port, uri))
}

/// nginx's `ngx_atoi` on a port: digits only, 1..=65535.
fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|&p| p > 0)
}

/// A literal IPv4 address (`ngx_inet_addr`: four dotted decimals) or a bracketed IPv6 one.
fn literal(host: &str) -> Option<IpAddr> {
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> PassUrl<'_> {
        parse(url.as_bytes()).unwrap()
    }

    #[test]
    fn a_group_name_without_port_or_uri() {
        let u = ok("http://u");
        assert_eq!((u.host, u.port, u.no_port), ("u", 80, true));
        assert_eq!(
            (u.host_header, u.uri.as_slice(), u.addr),
            ("u", &b""[..], None)
        );
    }

    #[test]
    fn a_literal_address_with_port_and_uri() {
        let u = ok("http://127.0.0.1:8081/t?a=1");
        assert_eq!(u.addr, Some("127.0.0.1:8081".parse().unwrap()));
        assert_eq!((u.host, u.host_header), ("127.0.0.1", "127.0.0.1:8081"));
        assert_eq!(u.uri, b"/t?a=1");
        assert!(!u.no_port && !u.tls);
    }

    #[test]
    fn the_default_port_is_left_out_of_the_host_header() {
        assert_eq!(ok("http://b:80/").host_header, "b");
        assert_eq!(ok("https://b:443").host_header, "b");
        assert_eq!(ok("https://b:80").host_header, "b:80");
        assert_eq!(ok("HTTPS://b").port, 443);
    }

    #[test]
    fn ipv6_keeps_its_brackets() {
        let u = ok("http://[::1]:8182/t");
        assert_eq!((u.host, u.host_header), ("[::1]", "[::1]:8182"));
        assert_eq!(u.addr, Some("[::1]:8182".parse().unwrap()));
        assert_eq!(ok("http://[::1]").addr, Some("[::1]:80".parse().unwrap()));
    }

    #[test]
    fn a_unix_socket_with_and_without_uri() {
        let u = ok("http://unix:/tmp/s.sock:/x?a");
        assert_eq!(
            (u.unix, u.host, u.port),
            (Some("/tmp/s.sock"), "/tmp/s.sock", 0)
        );
        assert_eq!(
            (u.host_header, u.uri.as_slice()),
            ("localhost", &b"/x?a"[..])
        );
        assert!(!u.no_port && u.addr.is_none());
        assert_eq!(ok("http://unix:/tmp/s.sock").uri, b"");
        let e = parse(b"http://unix::/x").unwrap_err();
        assert_eq!(e, UrlError::Invalid("no path in the unix domain socket"));
    }

    #[test]
    fn bare_args_get_a_slash() {
        assert_eq!(ok("http://b?x=1").uri, b"/?x=1");
        assert_eq!(ok("http://b:81?x").host_header, "b:81");
    }

    #[test]
    fn names_are_not_addresses() {
        assert_eq!(ok("http://localhost:81").addr, None);
        assert_eq!(ok("http://1.2.3:81").addr, None);
    }

    #[test]
    fn nginx_refusals_and_their_words() {
        let e = |u: &str| parse(u.as_bytes()).unwrap_err().message(u.as_bytes());
        assert_eq!(e("ftp://b"), "invalid URL prefix in \"ftp://b\"");
        assert_eq!(e("http://"), "invalid URL prefix in \"http://\"");
        assert_eq!(e("http://b:0/"), "invalid port in upstream \"b:0/\"");
        assert_eq!(e("http://b:x"), "invalid port in upstream \"b:x\"");
        assert_eq!(e("http://:81"), "no host in upstream \":81\"");
        assert_eq!(e("http:///x"), "no host in upstream \"/x\"");
        assert_eq!(e("http://[::1"), "invalid host in upstream \"[::1\"");
    }
}
