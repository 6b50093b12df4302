//! A `Location` that starts with `/` made absolute as nginx's header filter does
//! (`absolute_redirect on`, the default): the scheme, then the server's first name
//! (`server_name_in_redirect on`), else the request's `Host` name, else the address the
//! connection came to, then `:PORT` unless it is the scheme's default or
//! `port_in_redirect off`.

use std::io::Write as _;

use crate::req::Cx;

/// `url` as it goes out in `Location`.
pub fn absolute(cx: &Cx<'_>, url: Vec<u8>) -> Vec<u8> {
    let rules = &cx.settings().errors;
    if url.first() != Some(&b'/') || !rules.absolute_redirect {
        return url;
    }
    let req = cx.req;
    let tls = req.tls.is_some();
    let mut abs = Vec::with_capacity(url.len() + 64);
    abs.extend_from_slice(if tls { b"https://" } else { b"http://" });
    let host = crate::vars::host(req.buf, req.head);
    if rules.server_name_in_redirect {
        abs.extend_from_slice(req.server_name.as_bytes());
    } else if !host.is_empty() {
        abs.extend(host.iter().map(u8::to_ascii_lowercase));
    } else {
        push_addr(&mut abs, req.local.ip());
    }
    let port = req.local.port();
    if rules.port_in_redirect && port != if tls { 443 } else { 80 } {
        let _ = write!(abs, ":{port}");
    }
    abs.extend_from_slice(&url);
    abs
}

/// The local address as nginx prints it (`ngx_sock_ntop` without a port: an IPv6 one bare).
fn push_addr(out: &mut Vec<u8>, ip: std::net::IpAddr) {
    let _ = write!(out, "{ip}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn address_text() {
        let mut v = Vec::new();
        super::push_addr(&mut v, [127, 0, 0, 1].into());
        assert_eq!(v, b"127.0.0.1");
    }
}
