//! Differential: what reaches the upstream with `proxy_set_body` (variables included),
//! `proxy_pass_request_body off`, `proxy_pass_request_headers off` and `proxy_method`.
//! (`proxy_pass_request_body off` alone sends the client's `Content-Length` without a body,
//! as nginx does — a backend then waits for bytes that never come — so it is tested with
//! `proxy_set_header Content-Length ""`, the configuration nginx's docs pair it with.)
//! Real nginx 1.22 and ringfront run the same configuration against the same raw upstream;
//! per request the request line, the header fields the upstream got (sorted; `Connection`
//! aside, which ringfront manages for its upstream keepalive) and the body must agree.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{fill, port};
use ringfront_testkit::{After, Nginx, RawBackend, Ringfront};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    upstream up { server 127.0.0.1:{UP}; }
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        location /set { proxy_pass http://up; proxy_set_body \"body of $request_method $arg_a\"; }
        location /set-empty { proxy_pass http://up; proxy_set_body \"\"; }
        location /no-body-cl {
            proxy_pass http://up;
            proxy_pass_request_body off;
            proxy_set_header Content-Length \"\";
        }
        location /no-headers { proxy_pass http://up; proxy_pass_request_headers off; }
        location /both {
            proxy_pass http://up;
            proxy_pass_request_headers off;
            proxy_pass_request_body off;
            proxy_set_body replaced;
            proxy_method PUT;
        }
    }
}
";

const REPLY: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// (method, path, body).
const REQUESTS: &[(&str, &str, &str)] = &[
    ("GET", "/set?a=1", ""),
    ("POST", "/set", "client body"),
    ("POST", "/set-empty", "client body"),
    ("POST", "/no-body-cl", "client body"),
    ("POST", "/no-headers", "client body"),
    ("POST", "/both", "client body"),
];

fn send(port: u16, (method, path, body): (&str, &str, &str)) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let len = if body.is_empty() {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: a.test\r\nX-Client: c\r\n{len}Connection: close\r\n\r\n{body}"
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(out.starts_with(b"HTTP/1.1 200"), "{method} {path}");
}

/// The request the upstream got: request line, sorted fields, body.
fn upstream_saw(bytes: &[u8]) -> (String, Vec<String>, String) {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole request");
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_string();
    let mut fields: Vec<String> = lines
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| {
            let (n, v) = l.split_once(": ").unwrap_or((l, ""));
            format!("{}: {v}", n.to_ascii_lowercase())
        })
        .collect();
    fields.sort();
    (line, fields, body.to_string())
}

fn run(port: u16, up: &RawBackend) -> Vec<(String, Vec<String>, String)> {
    REQUESTS
        .iter()
        .map(|r| {
            let before = up.received().len();
            send(port, *r);
            upstream_saw(&up.received()[before..])
        })
        .collect()
}

#[test]
fn upstream_request_directives_match_nginx() {
    let up = RawBackend::start(REPLY.as_bytes(), After::Keep);
    let config = |p: u16| {
        fill(
            CONFIG,
            &[("PORT", p.to_string()), ("UP", up.port().to_string())],
        )
    };
    let np = port();
    let nginx = {
        let _n = Nginx::start(&config(np), np);
        run(np, &up)
    };
    let rp = port();
    let ours = {
        let _r = Ringfront::start(&config(rp));
        run(rp, &up)
    };
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(n, r, "{:?}", REQUESTS[i]);
    }
    // The cases say what they should: spot checks on what nginx sent.
    assert_eq!(nginx[0].2, "body of GET 1");
    assert_eq!(nginx[3].2, "", "no body");
    assert!(!nginx[3].1.iter().any(|f| f.starts_with("content-length")));
    assert!(!nginx[4].1.iter().any(|f| f.starts_with("x-client")));
    assert!(nginx[5].0.starts_with("PUT /both "));
    assert_eq!(nginx[5].2, "replaced");
}
