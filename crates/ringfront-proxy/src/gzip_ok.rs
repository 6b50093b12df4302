//! Whether a response is compressed: the tests of nginx's gzip header filter (status 200,
//! 403 or 404, no `Content-Encoding`, `Content-Length` at least `gzip_min_length` when
//! known, a type in `gzip_types`) and then the core module's `ngx_http_gzip_ok` on the
//! request (`Accept-Encoding` parsed as nginx parses it, `gzip_disable`, the HTTP version,
//! and `gzip_proxied` for requests that came through a proxy, read on the response's
//! headers). Pure: the time comes from the caller.

use ringfront_config::{Gzip, GzipTypes};

/// The response's side of the decision, as nginx's `r->headers_out` holds it then.
pub trait Fields {
    /// The first field `name` (lower-case), if any.
    fn first(&self, name: &str) -> Option<&[u8]>;
    /// Whether any `name` field has `token` as one of its comma-separated items
    /// (nginx's `ngx_http_parse_multi_header_lines`).
    fn has_token(&self, name: &str, token: &[u8]) -> bool;
}

/// What the filter decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not for this filter (nothing changes).
    Pass,
    /// Considered, not compressed: only `Vary: Accept-Encoding` (with `gzip_vary on`).
    Vary,
    /// Compressed.
    Compress,
}

impl Verdict {
    /// `Vary: Accept-Encoding` goes out (nginx's `r->gzip_vary` with `gzip_vary on`).
    pub fn vary(self, g: &Gzip) -> bool {
        g.vary && self != Verdict::Pass
    }
}

/// The request's side: the fields `ngx_http_gzip_ok` reads.
pub struct Request<'a> {
    pub accept_encoding: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    pub via: bool,
    pub authorization: bool,
    pub minor_version: u8,
}

impl<'a> Request<'a> {
    pub fn of(req: &crate::req::Req<'a>) -> Self {
        let h = |name| req.head.header(req.buf, name);
        Request {
            accept_encoding: h("accept-encoding"),
            user_agent: h("user-agent"),
            via: h("via").is_some(),
            authorization: h("authorization").is_some(),
            minor_version: req.head.minor_version,
        }
    }
}

/// The response facts the header filter tests first.
pub struct Response<'a> {
    pub status: u16,
    /// `Content-Type` as the response has it (a `charset=` parameter is cut off here).
    pub content_type: Option<&'a [u8]>,
    pub content_length: Option<u64>,
    pub content_encoding: Option<&'a [u8]>,
}

/// nginx's decision for one response; `now` is the time an `Expires` is compared with
/// (the upstream's `Date` is hidden, so nginx compares with its own time).
pub fn decide(
    g: &Gzip,
    req: &Request<'_>,
    resp: &Response<'_>,
    fields: &dyn Fields,
    now: i64,
) -> Verdict {
    let compressible = matches!(resp.status, 200 | 403 | 404)
        && resp.content_encoding.is_none_or(|e| e.is_empty())
        && resp.content_length.is_none_or(|n| n >= g.min_length)
        && type_listed(&g.types, resp.content_type);
    if !compressible {
        return Verdict::Pass;
    }
    if request_ok(g, req) && proxied_ok(g, req, fields, now) && !disabled(g, req) {
        Verdict::Compress
    } else {
        Verdict::Vary
    }
}

/// `ngx_http_test_content_type` over the part of the type nginx keeps for it.
fn type_listed(types: &GzipTypes, content_type: Option<&[u8]>) -> bool {
    let list = match types {
        GzipTypes::Any => return true,
        GzipTypes::List(list) => list,
    };
    let Some(t) = content_type.filter(|t| !t.is_empty()) else {
        return false;
    };
    let t = type_for_test(t);
    list.iter().any(|l| l.as_bytes().eq_ignore_ascii_case(t))
}

/// The type as nginx's `ngx_http_upstream_copy_content_type` keeps it for tests: the
/// part before a `;` only when a `charset=` parameter follows it, else the whole value.
pub fn type_for_test(value: &[u8]) -> &[u8] {
    let mut i = 0;
    while let Some(off) = value[i..].iter().position(|&b| b == b';') {
        let semi = i + off;
        let mut p = semi + 1;
        while value.get(p) == Some(&b' ') {
            p += 1;
        }
        if p >= value.len() {
            return value;
        }
        if value[p..]
            .get(..8)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"charset="))
        {
            return &value[..semi];
        }
        i = p;
    }
    value
}

/// The request tests before `Via`: the encoding, MSIE 4-6, the HTTP version.
fn request_ok(g: &Gzip, req: &Request<'_>) -> bool {
    let Some(ae) = req.accept_encoding.filter(|ae| ae.len() >= 4) else {
        return false;
    };
    if !ae.starts_with(b"gzip,") && !accepts_gzip(ae) {
        return false;
    }
    if g.disable_msie6 && req.user_agent.is_some_and(crate::user_agent::is_msie6) {
        return false;
    }
    req.minor_version >= g.http_version_minor
}

/// `gzip_disable REGEX`: the first `User-Agent` matches one.
fn disabled(g: &Gzip, req: &Request<'_>) -> bool {
    let Some(ua) = req.user_agent else {
        return false;
    };
    g.disable.iter().any(|re| re.0.is_match(ua))
}

/// `gzip_proxied`, only for requests with `Via`, as `ngx_http_gzip_ok` reads it.
fn proxied_ok(g: &Gzip, req: &Request<'_>, f: &dyn Fields, now: i64) -> bool {
    let p = &g.proxied;
    if !req.via {
        return true;
    }
    if p.off {
        return false;
    }
    if p.any || (req.authorization && p.auth) {
        return true;
    }
    if let Some(e) = f.first("expires") {
        if !p.expired {
            return false;
        }
        let Some(expires) = crate::http_time::parse(e) else {
            return false;
        };
        return expires < now;
    }
    if f.first("cache-control").is_some() {
        return (p.no_cache && f.has_token("cache-control", b"no-cache"))
            || (p.no_store && f.has_token("cache-control", b"no-store"))
            || (p.private && f.has_token("cache-control", b"private"));
    }
    if p.no_last_modified && f.first("last-modified").is_some() {
        return false;
    }
    !(p.no_etag && f.first("etag").is_some())
}

/// `ngx_http_gzip_accept_encoding`: the first `gzip` (any case) at the start or after
/// `,` or ` `, then only spaces up to `,`, the end, or `;q=` with a quantity above 0.
fn accepts_gzip(ae: &[u8]) -> bool {
    let mut start = 0;
    let mut p = loop {
        let Some(off) = find_ci(&ae[start..], b"gzip") else {
            return false;
        };
        let at = start + off;
        if at == 0 || matches!(ae[at - 1], b',' | b' ') {
            break at + 4;
        }
        start = at + 4;
    };
    loop {
        let Some(&c) = ae.get(p) else { return true };
        p += 1;
        match c {
            b',' => return true,
            b';' => break,
            b' ' => {}
            _ => return false,
        }
    }
    loop {
        let Some(&c) = ae.get(p) else { return true };
        p += 1;
        match c {
            b'q' | b'Q' => break,
            b' ' => {}
            _ => return false,
        }
    }
    if p + 2 > ae.len() || ae[p] != b'=' {
        return false;
    }
    quantity(&ae[p + 1..]) > 0
}

/// `ngx_http_gzip_quantity`, quirks kept: the digits after the point are added up
/// (`0.5` is 5, `1.000` is 100); more than three of them, or a sum above 100, is 0.
fn quantity(q: &[u8]) -> u32 {
    let mut it = q.iter();
    let whole = match it.next() {
        Some(&c @ (b'0' | b'1')) => u32::from(c - b'0') * 100,
        _ => return 0,
    };
    match it.next() {
        None | Some(b',' | b' ') => return whole,
        Some(b'.') => {}
        Some(_) => return 0,
    }
    let (mut sum, mut n) = (whole, 0);
    for &c in it {
        match c {
            b',' | b' ' => break,
            b'0'..=b'9' => {
                sum += u32::from(c - b'0');
                n += 1;
            }
            _ => return 0,
        }
    }
    if sum > 100 || n > 3 {
        0
    } else {
        sum
    }
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// `ngx_http_parse_multi_header_lines` with no value: `token` (any case) as an item of a
/// comma-separated list, followed by spaces and then the end or a `,`.
pub fn list_has_token(value: &[u8], token: &[u8]) -> bool {
    let mut s = 0;
    while s < value.len() {
        let rest = &value[s..];
        if rest.len() >= token.len() && rest[..token.len()].eq_ignore_ascii_case(token) {
            let mut p = s + token.len();
            while value.get(p) == Some(&b' ') {
                p += 1;
            }
            if p == value.len() || value[p] == b',' {
                return true;
            }
        }
        while s < value.len() && value[s] != b',' {
            s += 1;
        }
        s += 1;
        while value.get(s) == Some(&b' ') {
            s += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringfront_config::GzipProxied;

    struct Map(Vec<(&'static str, &'static [u8])>);

    impl Fields for Map {
        fn first(&self, name: &str) -> Option<&[u8]> {
            self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
        }
        fn has_token(&self, name: &str, token: &[u8]) -> bool {
            self.0
                .iter()
                .any(|(n, v)| *n == name && list_has_token(v, token))
        }
    }

    fn gzip() -> Gzip {
        Gzip {
            comp_level: 1,
            min_length: 20,
            types: GzipTypes::List(vec!["text/html".into(), "application/json".into()]),
            proxied: GzipProxied {
                off: true,
                ..Default::default()
            },
            vary: true,
            http_version_minor: 1,
            disable_msie6: false,
            disable: Vec::new(),
        }
    }

    fn request(ae: &'static str) -> Request<'static> {
        Request {
            accept_encoding: Some(ae.as_bytes()),
            user_agent: None,
            via: false,
            authorization: false,
            minor_version: 1,
        }
    }

    fn html(status: u16, length: Option<u64>) -> Response<'static> {
        Response {
            status,
            content_type: Some(b"text/html"),
            content_length: length,
            content_encoding: None,
        }
    }

    const NONE: Map = Map(Vec::new());

    #[test]
    fn accept_encoding_as_nginx_parses_it() {
        for yes in [
            "gzip",
            "gzip, deflate",
            "deflate, gzip",
            "deflate,gzip;q=0.5",
            "GZIP",
            "br, gzip ; q=1",
            "gzip;q=0.001",
            "gzip; q=1.000",
            "x-gzip, gzip",
            "gzip;",
        ] {
            assert!(request_ok(&gzip(), &request(yes)), "{yes}");
        }
        for no in [
            "gzip;q=0",
            "gzip;q=0.000",
            "gzip;q=1.5",
            "gzip;q=0.0001",
            "gzip;level=1",
            "x-gzip",
            "gzipx",
            "deflate",
            "gzi",
            "identity",
            "gzip;q=",
        ] {
            assert!(!request_ok(&gzip(), &request(no)), "{no}");
        }
        assert_eq!(quantity(b"0.5"), 5);
        assert_eq!(quantity(b"1"), 100);
    }

    #[test]
    fn header_filter_tests() {
        let g = gzip();
        let r = request("gzip");
        let d = |resp: &Response<'_>| decide(&g, &r, resp, &NONE, 0);
        assert_eq!(d(&html(200, None)), Verdict::Compress);
        assert_eq!(d(&html(404, Some(20))), Verdict::Compress);
        assert_eq!(d(&html(403, Some(19))), Verdict::Pass);
        for status in [201, 206, 301, 304, 500] {
            assert_eq!(d(&html(status, Some(100))), Verdict::Pass, "{status}");
        }
        let typed = |t: &'static [u8]| Response {
            content_type: Some(t),
            ..html(200, None)
        };
        assert_eq!(d(&typed(b"Text/HTML; charset=utf-8")), Verdict::Compress);
        assert_eq!(d(&typed(b"text/html; q=1")), Verdict::Pass);
        assert_eq!(d(&typed(b"application/json")), Verdict::Compress);
        assert_eq!(d(&typed(b"image/png")), Verdict::Pass);
        let encoded = Response {
            content_encoding: Some(b"br"),
            ..html(200, None)
        };
        assert_eq!(d(&encoded), Verdict::Pass);
        // Considered but not accepted: only Vary.
        let no = decide(&g, &request("br"), &html(200, None), &NONE, 0);
        assert_eq!(no, Verdict::Vary);
        assert!(no.vary(&g) && !Verdict::Pass.vary(&g));
        let any = Gzip {
            types: GzipTypes::Any,
            ..gzip()
        };
        let untyped = Response {
            content_type: None,
            ..html(200, None)
        };
        assert_eq!(decide(&any, &r, &untyped, &NONE, 0), Verdict::Compress);
        assert_eq!(d(&untyped), Verdict::Pass);
    }

    #[test]
    fn version_msie6_and_disable() {
        let mut g = gzip();
        let mut r = request("gzip");
        r.minor_version = 0;
        assert!(!request_ok(&g, &r));
        g.http_version_minor = 0;
        assert!(request_ok(&g, &r));
        g.disable_msie6 = true;
        for (ua, old) in [
            ("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)", true),
            (
                "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)",
                false,
            ),
            ("Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)", true),
            ("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)", false),
            ("Opera/9 (compatible; MSIE 6.0; X)", false),
        ] {
            r.user_agent = Some(ua.as_bytes());
            assert_eq!(!request_ok(&g, &r), old, "{ua}");
        }
        let g = Gzip {
            disable: vec![ringfront_config::gzip::UaRegex(
                regex::bytes::RegexBuilder::new("curl/")
                    .case_insensitive(true)
                    .build()
                    .unwrap(),
            )],
            ..gzip()
        };
        let mut r = request("gzip");
        r.user_agent = Some(b"CURL/8.0");
        assert_eq!(decide(&g, &r, &html(200, None), &NONE, 0), Verdict::Vary);
    }

    #[test]
    fn proxied_rules_read_the_response() {
        let with = |flags: GzipProxied, fields: Map, now: i64| {
            let g = Gzip {
                proxied: flags,
                ..gzip()
            };
            let mut r = request("gzip");
            r.via = true;
            decide(&g, &r, &html(200, None), &fields, now) == Verdict::Compress
        };
        let f = |set: fn(&mut GzipProxied)| {
            let mut p = GzipProxied::default();
            set(&mut p);
            p
        };
        let off = f(|p| p.off = true);
        assert!(!with(off, Map(vec![]), 0));
        assert!(with(f(|p| p.any = true), Map(vec![]), 0));
        // Nothing the flags name: compressed (no Expires, Cache-Control, and no test on).
        assert!(with(f(|p| p.expired = true), Map(vec![]), 0));
        let expires = || Map(vec![("expires", b"Thu, 01 Jan 1970 00:01:00 GMT")]);
        assert!(with(f(|p| p.expired = true), expires(), 61));
        assert!(!with(f(|p| p.expired = true), expires(), 60));
        assert!(!with(f(|p| p.no_cache = true), expires(), 61));
        let bad = Map(vec![("expires", b"soon")]);
        assert!(!with(f(|p| p.expired = true), bad, 61));
        let cc = || Map(vec![("cache-control", b"max-age=0, No-Cache")]);
        assert!(with(f(|p| p.no_cache = true), cc(), 0));
        assert!(!with(f(|p| p.no_store = true), cc(), 0));
        let private = Map(vec![("cache-control", b"private=\"x\"")]);
        assert!(!with(f(|p| p.private = true), private, 0));
        let lm = || Map(vec![("last-modified", b"x"), ("etag", b"\"e\"")]);
        assert!(!with(f(|p| p.no_last_modified = true), lm(), 0));
        assert!(!with(f(|p| p.no_etag = true), lm(), 0));
        assert!(with(f(|p| p.no_etag = true), Map(vec![]), 0));
        let auth = f(|p| p.auth = true);
        let g = Gzip {
            proxied: auth,
            ..gzip()
        };
        let mut r = request("gzip");
        r.via = true;
        r.authorization = true;
        assert_eq!(
            decide(&g, &r, &html(200, None), &cc(), 0),
            Verdict::Compress
        );
    }

    #[test]
    fn tokens_and_types() {
        assert!(list_has_token(b"no-store,no-cache", b"no-cache"));
        assert!(list_has_token(b"a, no-cache ", b"no-cache"));
        assert!(!list_has_token(b"no-cache=\"x\"", b"no-cache"));
        assert!(!list_has_token(b"xno-cache", b"no-cache"));
        assert_eq!(type_for_test(b"text/html;charset=x"), b"text/html");
        assert_eq!(
            type_for_test(b"text/html; a=b; charset=x"),
            b"text/html; a=b"
        );
        assert_eq!(type_for_test(b"text/html;"), b"text/html;");
        assert_eq!(type_for_test(b"text/html"), b"text/html");
    }
}
