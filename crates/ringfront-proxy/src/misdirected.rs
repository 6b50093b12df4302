//! nginx's 421 (`ngx_http_set_virtual_server`): on a TLS connection whose client sent SNI,
//! a request whose `Host` differs from that name and selects (or, matching none, falls to
//! the default) a server with `ssl_verify_client` on, `optional` or `optional_no_ca` is
//! refused: its certificate was judged by the handshake's server, not by that one. The
//! handshake's server answers, and the connection closes.

use ringfront_http::RequestHead;

use crate::snapshot::{ServerRt, Snapshot};

/// The server the handshake chose (by SNI), when the request is misdirected.
pub(crate) fn check<'s>(
    snap: &'s Snapshot,
    candidates: &[usize],
    sni: Option<&str>,
    (buf, head): (&[u8], &RequestHead),
    chosen: &ServerRt,
) -> Option<&'s ServerRt> {
    let sni = sni?;
    head.host?;
    if same_name(sni.as_bytes(), crate::vars::host(buf, head)) || !chosen.verify_client {
        return None;
    }
    crate::route::server(snap, candidates, sni.to_ascii_lowercase().as_bytes())
        .or_else(|| candidates.first().and_then(|&i| snap.servers.get(i)))
}

/// Names compared as nginx compares the validated (lower-cased, trailing dot dropped) ones.
fn same_name(a: &[u8], b: &[u8]) -> bool {
    let trim = |n: &[u8]| n.strip_suffix(b".").unwrap_or(n).to_vec();
    trim(a).eq_ignore_ascii_case(&trim(b))
}

#[cfg(test)]
mod tests {
    use super::same_name;

    #[test]
    fn names_compare_as_nginx_validates_them() {
        assert!(same_name(b"a.test", b"A.Test"));
        assert!(same_name(b"a.test.", b"a.test"));
        assert!(!same_name(b"a.test", b"b.test"));
        assert!(!same_name(b"a.test", b""));
    }
}
