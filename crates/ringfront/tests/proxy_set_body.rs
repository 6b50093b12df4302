//! `proxy_set_body` against real nginx 1.22 on the same configuration and the same raw
//! upstream: what the upstream receives — the value as the body (variables, the client's
//! `$request_body` among them, an empty value, one set at an outer location and one a location
//! replaces), a `Content-Length` of its length whatever the client framed (a chunked
//! client body's `Transfer-Encoding` is not passed), `proxy_set_header Content-Length`
//! still winning, with `proxy_pass_request_body off`, and after an `X-Accel-Redirect` from
//! a POST (the redirected GET carries the value, as nginx's proxy_set_body.t "twice", or
//! without `proxy_set_body` the client's body, which nginx keeps).
//! Per request: the request line, the header fields (sorted; `Connection` aside) and the
//! body must agree.

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
        location /inherit {
            proxy_set_body \"outer level $request_method\";
            location /inherit/in { proxy_pass http://up; }
        }
        location /vars {
            proxy_pass http://up;
            proxy_set_body \"m=$request_method a=$arg_a h=$http_x_client body=[$request_body]\";
        }
        location /empty { proxy_pass http://up; proxy_set_body \"\"; }
        location /long { proxy_pass http://up; proxy_set_body \"0123456789abcdefghijklmnopqrstuvwxyz $uri $args\"; }
        location /cl {
            proxy_pass http://up;
            proxy_set_body \"twelve bytes\";
            proxy_set_header Content-Length 5;
        }
        location /nobody {
            proxy_pass http://up;
            proxy_pass_request_body off;
            proxy_set_body \"set anyway\";
        }
        location /px/ { proxy_pass http://127.0.0.1:{PORT}/xar/; }
        location /xar/ {
            add_header X-Accel-Redirect /redirected?r=1;
            return 204;
        }
        location /pxplain/ { proxy_pass http://127.0.0.1:{PORT}/xarplain/; }
        location /xarplain/ {
            add_header X-Accel-Redirect /plain;
            return 204;
        }
        location /plain { proxy_pass http://up; }
        location /redirected {
            proxy_pass http://up;
            proxy_set_body \"after redirect $request_method $args\";
        }
    }
}
";

const REPLY: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// How the client frames its body.
#[derive(Clone, Copy)]
enum Framing {
    None,
    Length,
    Chunked,
}

/// (method, path, body, framing).
const REQUESTS: &[(&str, &str, &str, Framing)] = &[
    ("GET", "/inherit/in", "", Framing::None),
    ("POST", "/inherit/in", "client body", Framing::Length),
    ("POST", "/vars?a=1", "client body", Framing::Length),
    ("POST", "/vars?a=2", "chunked client body", Framing::Chunked),
    ("PUT", "/empty", "client body", Framing::Length),
    ("POST", "/empty", "chunked", Framing::Chunked),
    ("GET", "/long?q=2", "", Framing::None),
    ("POST", "/cl", "client body", Framing::Length),
    ("POST", "/nobody", "client body", Framing::Length),
    ("POST", "/nobody", "chunked", Framing::Chunked),
    ("POST", "/px/a", "client body", Framing::Length),
    ("POST", "/pxplain/a", "client body", Framing::Length),
];

fn send(port: u16, (method, path, body, framing): (&str, &str, &str, Framing)) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (field, wire) = match framing {
        Framing::None => (String::new(), String::new()),
        Framing::Length => (
            format!("Content-Length: {}\r\n", body.len()),
            body.to_string(),
        ),
        Framing::Chunked => (
            "Transfer-Encoding: chunked\r\n".to_string(),
            format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()),
        ),
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: a.test\r\nX-Client: c\r\n{field}Connection: close\r\n\r\n{wire}"
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(out.starts_with(b"HTTP/1.1 200"), "{method} {path}");
}

/// The request the upstream got: request line, sorted fields, body.
fn upstream_saw(bytes: &[u8]) -> (String, Vec<String>, String) {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return (
            format!("no whole request: {text:?}"),
            Vec::new(),
            String::new(),
        );
    };
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
fn proxy_set_body_matches_nginx() {
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
        assert_eq!(n, r, "{:?}", REQUESTS[i].1);
    }
    // The cases say what they should: spot checks on what nginx sent.
    let cl = |i: usize| {
        nginx[i]
            .1
            .iter()
            .find(|f| f.starts_with("content-length"))
            .cloned()
    };
    assert_eq!(nginx[0].2, "outer level GET");
    assert_eq!(nginx[2].2, "m=POST a=1 h=c body=[client body]");
    assert_eq!(nginx[3].2, "m=POST a=2 h=c body=[chunked client body]");
    assert!(!nginx[3]
        .1
        .iter()
        .any(|f| f.starts_with("transfer-encoding")));
    assert_eq!(cl(3).as_deref(), Some("content-length: 41"));
    assert_eq!(cl(4).as_deref(), Some("content-length: 0"));
    assert_eq!(nginx[8].2, "set anyway");
    assert!(
        nginx[10].0.starts_with("GET /redirected?r=1 "),
        "{:?}",
        nginx[10]
    );
    assert_eq!(nginx[10].2, "after redirect GET r=1");
    // Without `proxy_set_body` the redirected GET carries the body read (nginx keeps it).
    assert!(nginx[11].0.starts_with("GET /plain "), "{:?}", nginx[11]);
    assert_eq!(nginx[11].2, "client body");
}
