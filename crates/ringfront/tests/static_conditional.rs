//! Conditional requests, byte ranges and `expires` against real nginx on the same
//! configuration and files: 304 / 412 by `If-Modified-Since`, `If-None-Match`, `If-Match`,
//! `If-Unmodified-Since`; 206 / 416 by `Range` and `If-Range`; `Expires` and
//! `Cache-Control` on files, `return` and proxied responses.

mod common;
mod static_common;

use common::fill;
use ringfront_testkit::Client;
use static_common::{answers, config, files};

fn cond_config(p: u16) -> String {
    config(p)
        .replace(
            "        location /hdr/ {",
            "        location /exp/epoch/ {
            alias {DIR}/www/;
            expires epoch;
        }
        location /exp/max/ {
            alias {DIR}/www/;
            expires max;
        }
        location /exp/neg/ {
            alias {DIR}/www/;
            expires -1;
        }
        location /exp/zero/ {
            alias {DIR}/www/;
            expires 0;
            add_header X-Static after;
        }
        location /hdr/ {",
        )
        .replace("{DIR}", &files().display().to_string())
}

/// Conditional requests, byte ranges and `expires`.
#[test]
fn conditionals_ranges_and_expires_match_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(cond_config);
    let first = Client::connect(("127.0.0.1", np)).request("GET", "/a.txt", &[], b"");
    let lm = first
        .header("Last-Modified")
        .expect("Last-Modified")
        .to_string();
    let etag = first.header("ETag").expect("ETag").to_string();
    let weak = format!("W/{etag}");
    let list = format!("\"x\", {etag}");
    let old = "Thu, 01 Jan 1970 00:00:00 GMT".to_string();
    let h = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        pairs.iter().map(|(n, v)| (*n, v.to_string())).collect()
    };
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("/a.txt", h(&[("If-Modified-Since", &lm)])),
        ("/a.txt", h(&[("If-Modified-Since", &old)])),
        ("/a.txt", h(&[("If-Modified-Since", "garbage")])),
        ("/a.txt", h(&[("If-None-Match", &etag)])),
        ("/a.txt", h(&[("If-None-Match", &weak)])),
        ("/a.txt", h(&[("If-None-Match", &list)])),
        ("/a.txt", h(&[("If-None-Match", "*")])),
        ("/a.txt", h(&[("If-None-Match", "\"other\"")])),
        (
            "/a.txt",
            h(&[("If-None-Match", &etag), ("If-Modified-Since", &old)]),
        ),
        ("/a.txt", h(&[("If-Match", "\"other\"")])),
        ("/a.txt", h(&[("If-Match", &etag)])),
        ("/a.txt", h(&[("If-Unmodified-Since", &old)])),
        ("/a.txt", h(&[("If-Unmodified-Since", &lm)])),
        ("/a.txt", h(&[("Range", "bytes=0-4")])),
        ("/a.txt", h(&[("Range", "bytes=6-")])),
        ("/a.txt", h(&[("Range", "bytes=-3")])),
        ("/a.txt", h(&[("Range", "bytes=5-1000")])),
        ("/a.txt", h(&[("Range", "bytes=100-200")])),
        ("/a.txt", h(&[("Range", "bytes=x")])),
        ("/a.txt", h(&[("Range", "items=0-1")])),
        ("/a.txt", h(&[("Range", "bytes=0-1"), ("If-Range", &etag)])),
        (
            "/a.txt",
            h(&[("Range", "bytes=0-1"), ("If-Range", "\"other\"")]),
        ),
        ("/a.txt", h(&[("Range", "bytes=0-1"), ("If-Range", &lm)])),
        ("/a.txt", h(&[("Range", "bytes=0-1"), ("If-Range", &old)])),
        (
            "/a.txt",
            h(&[("Range", "bytes=0-1"), ("If-None-Match", &etag)]),
        ),
        ("/big.bin", h(&[("Range", "bytes=70000-200000")])),
        ("/a.txt", h(&[("Range", "bytes=0-1,5-6")])),
        ("/a.txt", h(&[("Range", "bytes=0-1, 3-4 ,-2")])),
        ("/a.txt", h(&[("Range", "bytes=0-5,3-10")])),
        ("HEAD /a.txt", h(&[("Range", "bytes=0-1,5-6")])),
        ("/big.bin", h(&[("Range", "bytes=0-99999,150000-299999")])),
        ("/exp/max/a.txt", h(&[("Range", "bytes=1-2,4-5")])),
        ("HEAD /a.txt", h(&[("Range", "bytes=0-1")])),
        ("/hdr/a.txt", h(&[("If-None-Match", &etag)])),
        ("/exp/epoch/a.txt", h(&[])),
        ("/exp/max/a.txt", h(&[])),
        ("/exp/neg/a.txt", h(&[])),
        ("/exp/max/missing", h(&[])),
        ("/exp/max/a.txt", h(&[("If-None-Match", &etag)])),
        ("/exp/epoch/dir", h(&[])),
    ];
    let requests: Vec<(&str, Vec<(&str, &str)>)> = cases
        .iter()
        .map(|(r, hs)| (*r, hs.iter().map(|(n, v)| (*n, v.as_str())).collect()))
        .collect();
    let requests: Vec<(&str, &[(&str, &str)])> =
        requests.iter().map(|(r, hs)| (*r, hs.as_slice())).collect();
    let n = answers(np, &requests, false);
    let r = answers(rp, &requests, true);
    let mut same = true;
    for (i, (a, x)) in n.iter().zip(&r).enumerate() {
        if a != x {
            same = false;
            println!("! {:?}\n  nginx: {a}\n     rf: {x}", requests[i]);
        }
    }
    assert!(same, "answers differ (above)");
    if std::env::var_os("SHOW").is_some() {
        println!("{}", n.join("\n"));
    }
    for want in ["304 ", "206 ", "416 ", "412 ", "Cache-Control=no-cache"] {
        assert!(
            n.iter().any(|a| a.starts_with(want) || a.contains(want)),
            "{want}"
        );
    }
    // `expires 0`: Expires is the Date, max-age=0, before add_header's fields.
    for port in [np, rp] {
        let r = Client::connect(("127.0.0.1", port)).request("GET", "/exp/zero/a.txt", &[], b"");
        assert_eq!(r.header("Cache-Control"), Some("max-age=0"));
        let names: Vec<&str> = r.headers.iter().map(|(n, _)| n.as_str()).collect();
        let at = |n: &str| names.iter().position(|x| *x == n);
        assert!(at("Expires") < at("X-Static") && at("X-Static") < at("Accept-Ranges"));
        let (d, e) = (r.header("Date").unwrap(), r.header("Expires").unwrap());
        assert!(d == e || d[..23] == e[..23], "{d} {e}");
    }
}

/// `expires` on answers that are not files: a proxied response (the upstream's `Expires`
/// and `Cache-Control` replaced), a `return`, and a status `expires` leaves alone.
#[test]
fn expires_on_proxied_and_returned_answers() {
    use ringfront_testkit::{Backend, Canned};
    let b = Backend::start();
    b.set_route(
        "/p/cc",
        Canned::status(200, "cc")
            .header("Cache-Control", "private")
            .header("Expires", "Mon, 01 Jan 2001 00:00:00 GMT"),
    );
    b.set_route("/p/gone", Canned::status(404, "gone"));
    b.set_route(
        "/m/old",
        Canned::status(200, "old").header("Last-Modified", "Mon, 28 Sep 1970 06:00:00 GMT"),
    );
    let bp = b.port();
    let cfg = move |p: u16| {
        fill(
            r#"events {}
http {
    access_log off;
    server_tokens off;
    server {
        listen 127.0.0.1:{PORT};
        location /p/ {
            proxy_pass http://127.0.0.1:{BACKEND};
            expires max;
        }
        location /m/ {
            proxy_pass http://127.0.0.1:{BACKEND};
            expires modified 2048;
        }
        location /r/ {
            expires epoch;
            return 200 "r";
        }
        location /e/ {
            expires 1h;
            return 403;
        }
    }
}
"#,
            &[("PORT", p.to_string()), ("BACKEND", bp.to_string())],
        )
    };
    let (_n, _r, np, rp) = common::nginx_and_ringfront(cfg);
    for path in ["/p/cc", "/p/plain", "/p/gone", "/r/", "/e/", "/m/old"] {
        let get = |p: u16| {
            let r = Client::connect(("127.0.0.1", p)).request("GET", path, &[], b"");
            let cc = r.header_all("Cache-Control").join("|");
            let ex = r.header_all("Expires").join("|");
            format!("{} cc={cc} expires={ex}", r.status)
        };
        assert_eq!(get(rp), get(np), "{path}");
    }
}
