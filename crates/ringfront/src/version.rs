//! `-v` and `-V` in nginx's format, for tools and test harnesses that ask nginx what it is:
//! Test::Nginx greps `-V` for `--without-http_<name>_module` to skip tests of modules a
//! build lacks, so `configure arguments:` names, as `--without-...`, every module stock
//! nginx builds by default that ringfront does not implement (whole: a module ringfront
//! implements only in part is listed; the rewrite module is not, though `if` lacks the file
//! tests and configuration switching). Modules
//! nginx builds only `--with-...` are named as `--with-...` when ringfront has them
//! (ssl, stub_status, realip) and otherwise not named (http2, stream, mail, ...), as in an
//! nginx built without them.

/// The first line of `-v`/`-V`. Not `nginx/X.Y.Z`: a harness's version checks then treat
/// ringfront as predating every version-gated behaviour.
pub fn version_line() -> String {
    format!("nginx version: ringfront/{}", env!("CARGO_PKG_VERSION"))
}

/// The default nginx modules ringfront does not implement, as configure spells them.
#[rustfmt::skip]
pub const WITHOUT: &[&str] = &[
    "http_charset_module", "http_ssi_module", "http_userid_module",
    "http_mirror_module", "http_autoindex_module",
    "http_referer_module",
    "http_fastcgi_module", "http_uwsgi_module", "http_scgi_module",
    "http_grpc_module", "http_memcached_module",
    "http_empty_gif_module", "http_browser_module",
    "http_tunnel_module", "http-cache",
];

/// Modules nginx builds only on request that ringfront has.
pub const WITH: &[&str] = &[
    "http_ssl_module",
    "http_stub_status_module",
    "http_realip_module",
];

/// `-V`: the version line, nginx's SNI line (harnesses look for it before TLS tests that
/// need SNI; no `built with OpenSSL` line, since the TLS library is rustls), and
/// `configure arguments:`.
pub fn configure_text() -> String {
    let args: Vec<String> = WITH
        .iter()
        .map(|m| format!("--with-{m}"))
        .chain(WITHOUT.iter().map(|m| format!("--without-{m}")))
        .collect();
    format!(
        "{}\nTLS SNI support enabled\nconfigure arguments: {}",
        version_line(),
        args.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_nginx() {
        let text = configure_text();
        assert!(text.starts_with("nginx version: ringfront/"), "{text}");
        assert_eq!(text.lines().nth(1), Some("TLS SNI support enabled"));
        let second = text.lines().nth(2).unwrap_or_default();
        assert!(second.starts_with(
            "configure arguments: --with-http_ssl_module --with-http_stub_status_module "
        ));
        assert!(text.contains(" --without-http_ssi_module "));
        for present in [
            "proxy",
            "access",
            "upstream_hash",
            "upstream_keepalive",
            "pcre",
            "map",
            "geo",
            "split_clients",
            "rewrite",
            "gzip",
        ] {
            assert!(
                !text.contains(&format!("without-http_{present}")),
                "{present}"
            );
        }
        assert!(text.contains("--with-http_ssl_module"));
    }
}
