//! The request URI as nginx reads it, against real nginx: `%XX` decoded before the
//! location search and in `$uri` (a decoded `/` or `.` taking part in `//`, `.`, `..`),
//! fragments cut from `$uri` and `$args`, broken escapes and `..` above the root 400 in
//! any location, an absolute-form target without a path, and the URI sent upstream:
//! as received without a `proxy_pass` URI part, escaped again after one or a rewrite; a
//! capture of an escaped URI copied into a rewrite's arguments is escaped.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn config(p: u16, b: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    upstream be { server 127.0.0.1:{B}; }
    server {
        listen 127.0.0.1:{PORT};
        location /abc { return 200 "abc [$uri] [$args] [$request_uri]\n"; }
        location /raw/ { proxy_pass http://be; }
        location /part/ { proxy_pass http://be/to/; }
        location /cap/ { rewrite ^(.*)$ $1?c=$1; return 200 "cap [$uri] [$args]\n"; }
        location /rw/ { rewrite ^/rw/(.*)$ /to/$1 break; proxy_pass http://be; }
        location / { return 200 "root [$uri] [$args]\n"; }
    }
}
"#,
        &[("PORT", p.to_string()), ("B", b.to_string())],
    )
}

const TARGETS: &[&str] = &[
    "/%61bc",
    "/x/../abc?q=1",
    "/abc/./d//e/..",
    "/abc%2Fdef",
    "/abc?a=1#frag",
    "/abc#frag?x",
    "/a%25b?c",
    "/x%3Fy",
    "/%2e%2e/abc",
    "/bad%zz",
    "/bad%4",
    "/raw/a%20b/../c?k=v",
    "/part/a%20b/%25x?k=v",
    "/part/plain",
    "/cap/%25%20x?a=b",
    "/cap/plain?a=b",
    "/rw/a%20b%25c?k",
    "http://localhost?only=args",
    "http://localhost/abc?q",
];

fn answers(p: u16, b: &Backend) -> Vec<String> {
    TARGETS
        .iter()
        .map(|t| {
            let before = b.requests().len();
            let mut c = Client::connect(("127.0.0.1", p));
            c.send_raw(format!("GET {t} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes());
            let r = c.read_response();
            let up = b.requests().get(before..).and_then(|r| r.last().cloned());
            let body = if r.status >= 400 {
                String::new()
            } else {
                r.text()
            };
            format!(
                "{t} -> {} {} upstream {:?}",
                r.status,
                body.trim_end(),
                up.map(|u| u.target)
            )
        })
        .collect()
}

#[test]
fn uris_read_as_nginx_reads_them() {
    let b = Backend::start();
    let (_n, _r, np, rp) = common::nginx_and_ringfront(|p| config(p, b.port()));
    let n = answers(np, &b);
    let r = answers(rp, &b);
    for (a, c) in n.iter().zip(&r) {
        let mark = if a == c { " " } else { "≠" };
        println!("{mark} nginx {a}\n{mark}    rf {c}");
    }
    assert_eq!(r, n);
    assert!(n[0].contains("abc [/abc]"), "{n:?}");
    assert!(n[9].contains(" 400 "), "{n:?}");
}
