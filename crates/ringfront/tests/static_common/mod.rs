//! What the static-file differential tests share: the files both servers serve, the
//! configuration over them, and the comparison of answers (status, the head's fields and
//! their order, body) between nginx and ringfront.
#![allow(dead_code)]

use std::path::PathBuf;

use crate::common::fill;
use ringfront_testkit::Client;

/// The files both servers serve (made once per test process).
pub fn files() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(make_files).clone()
}

fn make_files() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-static-{}", std::process::id()));
    let www = dir.join("www");
    for d in [
        "dir", "noindex", "idx", "hdr", "ctypes", "plain", "sub", "dirs", "app/dir", "idx2",
    ] {
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
        ("www/app/dir/index.html", b"app dir index\n"),
        ("www/idx2/index.html", b"never served\n"),
        ("www/sub/re-alias.txt", b"re alias\n"),
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

pub fn config(p: u16) -> String {
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
        location = /idx2/index.html {
            return 200 "exact index uri=$uri args=$args\n";
        }
        location /own/ {
            alias {DIR}/www/;
            # nginx keeps the file's ETag field where it was (the value replaced) and adds
            # Last-Modified: in this order ringfront's fields read the same.
            add_header ETag "\"own\"";
            add_header Last-Modified "Mon, 28 Sep 1970 06:00:00 GMT";
        }
        location /abs/ {
            index /a.txt;
        }
        location /varidx/ {
            alias {DIR}/www/;
            index $arg_name.html;
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

pub fn answers(p: u16, requests: &[(&str, &[(&str, &str)])], ringfront: bool) -> Vec<String> {
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
pub fn compare(
    config: impl Fn(u16) -> String,
    requests: &[(&str, &[(&str, &str)])],
) -> Vec<String> {
    let (_n, _r, np, rp) = crate::common::nginx_and_ringfront(config);
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
