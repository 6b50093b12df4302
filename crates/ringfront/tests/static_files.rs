//! The static module against real nginx on the same configuration and the same files:
//! `root`, `alias` (prefix and regex locations), `index`, `types` / `default_type` (with
//! Debian's mime.types), directories with and without their slash, missing files, methods,
//! URIs that need decoding and normalising; status, the head's fields and their order, body.

mod common;

use std::path::PathBuf;

use common::fill;
use ringfront_testkit::Client;

/// The files both servers serve (made once per test process).
fn files() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(make_files).clone()
}

fn make_files() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-static-{}", std::process::id()));
    let www = dir.join("www");
    for d in ["dir", "noindex", "idx", "hdr", "ctypes", "plain", "sub"] {
        std::fs::create_dir_all(www.join(d)).expect("test folder");
    }
    std::fs::create_dir_all(dir.join("images")).expect("test folder");
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    for (name, body) in [
        ("www/index.html", &b"<h1>home</h1>\n"[..]),
        ("www/a.txt", b"plain text\n"),
        ("www/style.css", b"body{}\n"),
        ("www/UPPER.HTML", b"upper\n"),
        ("www/empty.txt", b""),
        ("www/space name.txt", b"spaced\n"),
        ("www/noext", b"no extension\n"),
        ("www/big.bin", &big),
        ("www/dir/index.html", b"dir index\n"),
        ("www/idx/second.html", b"second\n"),
        ("www/hdr/a.txt", b"hdr\n"),
        ("www/ctypes/f.cust", b"custom\n"),
        ("www/plain/f.html", b"plain html\n"),
        ("images/pic.gif", b"GIF89a"),
    ] {
        std::fs::write(dir.join(name), body).expect("test file");
    }
    dir
}

fn config(p: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {DIR}/www;
        location / {
        }
        location /i/ {
            alias {DIR}/images/;
        }
        location = /one {
            alias {DIR}/www/a.txt;
        }
        location ~ \.regex$ {
            alias {DIR}/www/a.txt;
        }
        location /idx/ {
            index first.html second.html;
        }
        location /hdr/ {
            add_header X-Static yes;
        }
        location /ctypes/ {
            types {
                text/x-custom cust;
            }
        }
        location /plain/ {
            types { }
            default_type text/x-plain;
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("DIR", files().display().to_string()),
        ],
    )
}

const REQUESTS: &[&str] = &[
    "/",
    "/a.txt",
    "/style.css",
    "/UPPER.HTML",
    "/empty.txt",
    "/noext",
    "/big.bin",
    "/missing",
    "/dir",
    "/dir?x=1",
    "/dir/",
    "/noindex/",
    "/nodir/",
    "/a.txt/",
    "HEAD /a.txt",
    "HEAD /missing",
    "POST /a.txt",
    "POST /missing",
    "POST /noindex/",
    "PUT /a.txt",
    "DELETE /dir/",
    "/i/pic.gif",
    "/one",
    "/any.regex",
    "/idx/",
    "/hdr/a.txt",
    "/hdr/missing",
    "/ctypes/f.cust",
    "/plain/f.html",
    "/a%2etxt",
    "/sub/../a.txt",
    "/sub/./../a.txt",
    "//a.txt",
    "/space%20name.txt",
];

/// Fields compared (besides the order of all but `Date`).
const FIELDS: &[&str] = &[
    "Content-Type",
    "Content-Length",
    "Last-Modified",
    "ETag",
    "Accept-Ranges",
    "Location",
    "Content-Range",
    "Expires",
    "Cache-Control",
    "Connection",
    "X-Static",
];

fn answers(p: u16, requests: &[(&str, &[(&str, &str)])], ringfront: bool) -> Vec<String> {
    requests
        .iter()
        .map(|(req, headers)| {
            let mut c = Client::connect(("127.0.0.1", p));
            let (method, path) = req.split_once(' ').unwrap_or(("GET", req));
            let r = c.request(method, path, headers, b"");
            let mut line = format!("{} {req}", r.status);
            let names: Vec<&str> = r.headers.iter().map(|(n, _)| n.as_str()).collect();
            line.push_str(&format!(" [{}]", names.join(",")));
            // ringfront's pages name ringfront (4 bytes more) where nginx's name nginx.
            let ours =
                ringfront && r.status >= 300 && r.header("Content-Type") == Some("text/html");
            for f in FIELDS {
                let mut v = r
                    .header(f)
                    .unwrap_or("-")
                    .replace(&format!(":{p}"), ":PORT");
                // A relative `expires`: the time depends on the second it was answered in.
                let fixed = [
                    "-",
                    "Thu, 01 Jan 1970 00:00:01 GMT",
                    "Thu, 31 Dec 2037 23:55:55 GMT",
                ];
                if *f == "Expires" && !fixed.contains(&v.as_str()) {
                    v = "(relative)".to_string();
                }
                if ours && *f == "Content-Length" {
                    v = v.parse::<u64>().map_or(v, |n| (n - 4).to_string());
                }
                line.push_str(&format!(" {f}={v}"));
            }
            let body = r
                .text()
                .replace("<center>ringfront</center>", "<center>nginx</center>");
            match body.len() {
                0..=300 => line.push_str(&format!(" body={body:?}")),
                n => line.push_str(&format!(" body={n} bytes sum={}", sum(&r.body))),
            }
            line
        })
        .collect()
}

fn sum(b: &[u8]) -> u64 {
    b.iter()
        .enumerate()
        .map(|(i, &x)| (i as u64 + 1) * u64::from(x))
        .sum()
}

/// Runs `requests` against both and asserts the same answers.
fn compare(config: impl Fn(u16) -> String, requests: &[(&str, &[(&str, &str)])]) -> Vec<String> {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = answers(np, requests, false);
    let r = answers(rp, requests, true);
    let mut same = true;
    for (i, (a, x)) in n.iter().zip(&r).enumerate() {
        if a != x {
            same = false;
            println!("! {:?}\n  nginx: {a}\n     rf: {x}", requests[i].0);
        }
    }
    assert!(same, "answers differ (above)");
    n
}

#[test]
fn static_files_match_nginx() {
    let requests: Vec<(&str, &[(&str, &str)])> = REQUESTS.iter().map(|r| (*r, &[][..])).collect();
    let n = compare(config, &requests);
    let has = |want: &str| n.iter().any(|a| a.contains(want));
    for want in [
        "200 /style.css",
        "Content-Type=text/css",
        "301 /dir ",
        "403 /noindex/",
        "405 PUT",
        "Content-Type=text/x-custom",
        "sum=",
    ] {
        assert!(has(want), "{want}: {n:?}");
    }
}

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

/// Refused URIs: a `..` above the root and a broken escape are 400s.
#[test]
fn uris_nginx_refuses() {
    let requests: Vec<(&str, &[(&str, &str)])> =
        vec![("/../a.txt", &[]), ("/sub/../../a.txt", &[]), ("/%zz", &[])];
    compare(config, &requests);
}

/// nginx's error-log lines for a missing file, a directory without index and a missing
/// directory.
#[test]
fn error_log_lines_read_as_nginx() {
    let p = common::port();
    let dir = files();
    let cfg = config(p).replace("events {", "error_log stderr info;\nevents {");
    let rf = ringfront_testkit::Ringfront::start(&cfg);
    let www = dir.join("www").display().to_string();
    for (path, line) in [
        (
            "/missing",
            format!("open() \"{www}/missing\" failed (2: No such file or directory)"),
        ),
        (
            "/noindex/",
            format!("directory index of \"{www}/noindex/\" is forbidden"),
        ),
        (
            "/nodir/",
            format!("\"{www}/nodir\" is not found (2: No such file or directory)"),
        ),
    ] {
        let mut c = Client::connect(("127.0.0.1", p));
        c.request("GET", path, &[], b"");
        let want = format!(
            "{line}, client: 127.0.0.1, server: localhost, request: \"GET {path} HTTP/1.1\", host: \"127.0.0.1:{p}\""
        );
        assert!(
            rf.wait_for_stderr(&want, std::time::Duration::from_secs(5)),
            "{want}"
        );
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
    for path in ["/p/cc", "/p/plain", "/p/gone", "/r/", "/e/"] {
        let get = |p: u16| {
            let r = Client::connect(("127.0.0.1", p)).request("GET", path, &[], b"");
            let cc = r.header_all("Cache-Control").join("|");
            let ex = r.header_all("Expires").join("|");
            format!("{} cc={cc} expires={ex}", r.status)
        };
        assert_eq!(get(rp), get(np), "{path}");
    }
}
