//! nginx's gzip module against real nginx on the same configuration, files and backend:
//! which responses are compressed (`gzip_types`, `gzip_min_length`, statuses, an upstream
//! `Content-Encoding`, `gzip_proxied` on the upstream's `Expires` / `Cache-Control` /
//! `ETag` for requests with `Via`, `gzip_disable`, `gzip_http_version`, the forms of
//! `Accept-Encoding`), the head (`Content-Encoding`, no `Content-Length` or
//! `Accept-Ranges`, chunked or close-delimited, a weak `ETag`, `Vary`), HEAD, 304 and
//! ranges of a compressed file, and the body, which must decompress to the original
//! (the compressed bytes themselves differ: zlib-rs is not nginx's zlib).

mod common;

use std::io::Read;

use common::{fill, port};
use ringfront_testkit::{Backend, Canned, Client, Nginx, Response, Ringfront};

/// The files both servers serve (made once per test process).
fn files() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ringfront-gzip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test folder");
        for (name, body) in [
            ("big.html", html(64 << 10)),
            ("index.html", html(300)),
            ("small.txt", b"tiny\n".to_vec()),
            (
                "app.json",
                br#"{"ok":true,"items":[1,2,3,4,5,6,7,8,9]}"#.repeat(40),
            ),
            ("pic.gif", b"GIF89a".repeat(100)),
            ("empty.html", Vec::new()),
        ] {
            std::fs::write(dir.join(name), body).expect("test file");
        }
        dir
    })
    .clone()
}

/// An HTML-looking body of `n` bytes.
fn html(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let mut i = 0u32;
    while out.len() < n {
        out.extend_from_slice(format!("<li class=\"row\">item {i} of the list</li>\n").as_bytes());
        i = i.wrapping_mul(7).wrapping_add(13) % 10_007;
    }
    out.truncate(n);
    out
}

fn config(p: u16, backend: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    gzip on;
    gzip_vary on;
    gzip_types text/plain application/json;
    upstream backend {
        server 127.0.0.1:{BACKEND};
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {DIR};
        location / {
        }
        location /lvl9/ {
            alias {DIR}/;
            gzip_comp_level 9;
            gzip_min_length 1000;
        }
        location /novary/ {
            alias {DIR}/;
            gzip_vary off;
        }
        location /off/ {
            alias {DIR}/;
            gzip off;
        }
        location /up/ {
            proxy_pass http://backend;
        }
        location /exp/ {
            proxy_pass http://backend;
            gzip_proxied expired no-cache;
        }
        location /auth/ {
            proxy_pass http://backend;
            gzip_proxied auth no_etag;
        }
        location /store/ {
            proxy_pass http://backend;
            gzip_proxied no-store private no_last_modified;
        }
        location /any/ {
            proxy_pass http://backend;
            gzip_proxied any;
            gzip_types *;
        }
        location /v10/ {
            proxy_pass http://backend;
            gzip_http_version 1.0;
        }
        location /dis/ {
            proxy_pass http://backend;
            gzip_disable msie6 "^curl/";
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DIR", files().display().to_string()),
        ],
    )
}

/// The backend's canned answers (paths as the proxies pass them).
fn routes(b: &Backend) {
    let page = String::from_utf8(html(5000)).unwrap_or_default();
    let canned = |path: &str, headers: &[(&str, &str)]| {
        let mut c = Canned::status(200, &page);
        c.headers = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        b.set_route(path, c);
    };
    let html_type = ("Content-Type", "text/html");
    for prefix in ["/up", "/exp", "/auth", "/store", "/any"] {
        canned(&format!("{prefix}/page"), &[html_type]);
        canned(
            &format!("{prefix}/expired"),
            &[html_type, ("Expires", "Thu, 01 Jan 1970 00:00:01 GMT")],
        );
        canned(
            &format!("{prefix}/future"),
            &[html_type, ("Expires", "Thu, 31 Dec 2037 23:55:55 GMT")],
        );
        canned(
            &format!("{prefix}/badexp"),
            &[html_type, ("Expires", "tomorrow")],
        );
        canned(
            &format!("{prefix}/nocache"),
            &[html_type, ("Cache-Control", "max-age=0, No-Cache")],
        );
        canned(
            &format!("{prefix}/nostore"),
            &[html_type, ("Cache-Control", "no-store")],
        );
        canned(
            &format!("{prefix}/private"),
            &[html_type, ("Cache-Control", "private=\"x\"")],
        );
        canned(&format!("{prefix}/etag"), &[html_type, ("ETag", "\"abc\"")]);
        canned(
            &format!("{prefix}/lm"),
            &[
                html_type,
                ("Last-Modified", "Mon, 28 Sep 1970 06:00:00 GMT"),
            ],
        );
    }
    canned("/up/weak", &[html_type, ("ETag", "W/\"abc\"")]);
    canned("/up/bare-etag", &[html_type, ("ETag", "abc")]);
    canned("/up/encoded", &[html_type, ("Content-Encoding", "br")]);
    canned("/up/empty-encoding", &[html_type, ("Content-Encoding", "")]);
    canned("/up/ranges", &[html_type, ("Accept-Ranges", "bytes")]);
    canned(
        "/up/json",
        &[("Content-Type", "application/json; charset=utf-8")],
    );
    canned("/up/param", &[("Content-Type", "text/html; level=1")]);
    canned("/up/png", &[("Content-Type", "image/png")]);
    canned("/up/notype", &[]);
    canned("/any/notype", &[]);
    let mut small = Canned::status(200, "<p>small</p>");
    small.headers = vec![("Content-Type".into(), "text/html".into())];
    b.set_route("/up/small", small);
    let mut missing = Canned::status(404, &page);
    missing.headers = vec![("Content-Type".into(), "text/html".into())];
    b.set_route("/up/404", missing.clone());
    missing.status = 500;
    b.set_route("/up/500", missing);
}

const GZ: &[(&str, &str)] = &[("Accept-Encoding", "gzip, deflate")];

/// (request, extra header lines) in order.
fn requests(etag: &str) -> Vec<(String, Vec<(&'static str, String)>)> {
    let mut out = Vec::new();
    let plain = |r: &str| (r.to_string(), Vec::new());
    let gz = |r: &str| {
        (
            r.to_string(),
            GZ.iter().map(|(n, v)| (*n, v.to_string())).collect(),
        )
    };
    let with = |r: &str, extra: &[(&'static str, &str)]| {
        let mut h: Vec<(&'static str, String)> =
            GZ.iter().map(|(n, v)| (*n, v.to_string())).collect();
        h.extend(extra.iter().map(|(n, v)| (*n, v.to_string())));
        (r.to_string(), h)
    };
    let ae = |r: &str, v: &str| (r.to_string(), vec![("Accept-Encoding", v.to_string())]);
    // Static files.
    for f in [
        "/big.html",
        "/",
        "/small.txt",
        "/app.json",
        "/pic.gif",
        "/empty.html",
        "/lvl9/big.html",
        "/lvl9/index.html",
        "/novary/big.html",
        "/off/big.html",
    ] {
        out.push(gz(f));
        out.push(plain(f));
    }
    out.push(gz("HEAD /big.html"));
    out.push(with("/big.html", &[("Range", "bytes=0-99")]));
    out.push(with("/big.html", &[("Range", "bytes=999999-")]));
    out.push(with("/big.html", &[("If-None-Match", etag)]));
    out.push(with(
        "/big.html",
        &[("If-None-Match", &format!("W/{etag}"))],
    ));
    // Accept-Encoding as nginx reads it.
    for v in [
        "gzip",
        "GZIP",
        "deflate,gzip",
        "br, gzip;q=0.5",
        "gzip;q=0",
        "gzip; q=0.000",
        "gzip;q=1.5",
        "x-gzip",
        "gzipx",
        "identity",
        "gzip;level=2",
    ] {
        out.push(ae("/big.html", v));
    }
    // Proxied responses.
    for p in [
        "/up/page",
        "/up/x?chunked=1&size=70000",
        "/up/x?chunked=1&size=0",
        "/up/x?size=100000",
        "/up/x?size=10",
        "/up/x?code=404&size=3000",
        "/up/x?code=201&size=3000",
        "/up/404",
        "/up/500",
        "/up/etag",
        "/up/weak",
        "/up/bare-etag",
        "/up/encoded",
        "/up/empty-encoding",
        "/up/ranges",
        "/up/json",
        "/up/param",
        "/up/png",
        "/up/notype",
        "/any/notype",
        "/up/small",
        "HEAD /up/page",
        "HEAD /up/x?chunked=1",
    ] {
        out.push(gz(p));
    }
    out.push(plain("/up/page"));
    // gzip_proxied: only requests with Via are concerned.
    for prefix in ["/up", "/exp", "/auth", "/store", "/any"] {
        for r in [
            "page", "expired", "future", "badexp", "nocache", "nostore", "private", "etag", "lm",
        ] {
            out.push(with(&format!("{prefix}/{r}"), &[("Via", "1.1 cache")]));
        }
    }
    out.push(with(
        "/auth/nocache",
        &[("Via", "1.1 cache"), ("Authorization", "Basic eDp5")],
    ));
    // gzip_disable and the HTTP version.
    for ua in [
        "curl/8.5.0",
        "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)",
        "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)",
        "Mozilla/5.0 (X11; Linux x86_64)",
    ] {
        out.push(with("/dis/x?size=3000", &[("User-Agent", ua)]));
    }
    for r in [
        "HTTP/1.0 /up/x?size=3000",
        "HTTP/1.0 /v10/x?size=3000",
        "HTTP/1.0 /v10/x?size=3000&chunked=1",
        "HTTP/1.0 /big.html",
    ] {
        out.push(gz(r));
    }
    out
}

/// Fields compared (their order is not: nginx writes `Vary` before the upstream's).
const FIELDS: &[&str] = &[
    "Content-Type",
    "Content-Length",
    "Content-Encoding",
    "Transfer-Encoding",
    "Vary",
    "ETag",
    "Accept-Ranges",
    "Content-Range",
    "Last-Modified",
    "Expires",
    "Cache-Control",
    "Connection",
];

/// One request's answer as a line: status, the fields, and the body after gunzip.
fn answer(port: u16, req: &str, headers: &[(&str, String)]) -> String {
    let h: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let r = match req.strip_prefix("HTTP/1.0 ") {
        Some(path) => http10(port, path, &h),
        None => {
            let (method, path) = req.split_once(' ').unwrap_or(("GET", req));
            Client::connect(("127.0.0.1", port)).request(method, path, &h, b"")
        }
    };
    let mut line = format!("{} {req} {h:?}", r.status);
    for f in FIELDS {
        let all = r.header_all(f);
        let v = if all.is_empty() {
            "-".to_string()
        } else {
            all.join("|")
        };
        line.push_str(&format!(" {f}={v}"));
    }
    // A HEAD answer has no body.
    let gzipped = r.header_all("Content-Encoding").contains(&"gzip");
    let body = match gzipped && !r.body.is_empty() {
        true => gunzip(&r.body),
        false => r.body.clone(),
    };
    line.push_str(&format!(" body={} bytes sum={}", body.len(), sum(&body)));
    line
}

/// An HTTP/1.0 request, read to the close.
fn http10(port: u16, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut c = Client::connect(("127.0.0.1", port));
    let mut raw = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n");
    for (n, v) in headers {
        raw.push_str(&format!("{n}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    c.send_raw(raw.as_bytes());
    c.read_response()
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("not a gzip stream: {e}"));
    out
}

fn sum(b: &[u8]) -> u64 {
    b.iter()
        .enumerate()
        .map(|(i, &x)| (i as u64 + 1) * u64::from(x))
        .sum()
}

#[test]
fn gzip_matches_nginx() {
    let b = Backend::start();
    routes(&b);
    let (np, rp) = (port(), port());
    let _n = Nginx::start(&config(np, b.port()), np);
    let _r = Ringfront::start(&config(rp, b.port()));
    let meta = std::fs::metadata(files().join("big.html")).expect("file");
    let mtime = std::os::unix::fs::MetadataExt::mtime(&meta);
    let etag = format!("\"{:x}-{:x}\"", mtime, meta.len());
    let mut same = true;
    let mut lines = Vec::new();
    for (req, headers) in requests(&etag) {
        let n = answer(np, &req, &headers);
        let r = answer(rp, &req, &headers);
        if n != r {
            same = false;
            println!("! {req}\n  nginx: {n}\n     rf: {r}");
        }
        lines.push(n);
    }
    assert!(same, "answers differ (above)");
    let count = |want: &str| lines.iter().filter(|l| l.contains(want)).count();
    // The comparison covers both outcomes and both framings.
    assert!(count("Content-Encoding=gzip") > 30, "{lines:#?}");
    assert!(count("Content-Encoding=-") > 30, "{lines:#?}");
    assert!(count("Transfer-Encoding=chunked") > 20, "{lines:#?}");
    assert!(count("ETag=W/") > 2, "{lines:#?}");
    assert!(count("Vary=Accept-Encoding") > 30, "{lines:#?}");
}

/// A backend that ends every body by closing (no length, not chunked), to any version.
fn close_delimited_backend(body: Vec<u8>) -> u16 {
    let listener = ringfront_testkit::fresh_listener();
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match std::io::Read::read(&mut conn, &mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let mut out =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n".to_vec();
            out.extend_from_slice(&body);
            let _ = std::io::Write::write_all(&mut conn, &out);
        }
    });
    port
}

/// An upstream body that ends with the connection: compressed whole and chunked to an
/// HTTP/1.1 client (the connection kept), close-delimited to HTTP/1.0, as nginx.
#[test]
fn close_delimited_upstream_bodies_are_compressed_whole() {
    let body = html(90_000);
    let backend = close_delimited_backend(body.clone());
    let (np, rp) = (port(), port());
    let _n = Nginx::start(&config(np, backend), np);
    let _r = Ringfront::start(&config(rp, backend));
    for req in ["/up/closed", "HTTP/1.0 /v10/closed"] {
        let h = [("Accept-Encoding", "gzip".to_string())];
        let n = answer(np, req, &h);
        let r = answer(rp, req, &h);
        assert_eq!(n, r, "{req}");
        assert!(n.contains("Content-Encoding=gzip"), "{n}");
        assert!(
            n.contains(&format!("body={} bytes sum={}", body.len(), sum(&body))),
            "{n}"
        );
    }
    // The kept connection answers again.
    let mut c = Client::connect(("127.0.0.1", rp));
    for _ in 0..2 {
        let r = c.request("GET", "/up/closed", &[("Accept-Encoding", "gzip")], b"");
        assert_eq!(gunzip(&r.body), body);
    }
}
