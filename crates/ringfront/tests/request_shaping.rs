//! What reaches the upstream, against real nginx on the same configuration:
//! `proxy_method`, `proxy_pass_request_headers off`, `proxy_pass_request_body off`,
//! `proxy_set_body` (with variables). Compared: method, target, header names and values
//! (in order), body. (`proxy_pass_request_body off` alone sends the client's Content-Length
//! without the body, as nginx does — which is why configurations pair it with
//! `proxy_set_header Content-Length ""`, as here.)

mod common;

use common::{fill, port};
use ringfront_testkit::{Backend, Client, Nginx, Recorded, Ringfront};

fn config(p: u16, backend: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location /method { proxy_method PUT; proxy_pass http://127.0.0.1:{B}; }
        location /nohead { proxy_pass_request_headers off; proxy_pass http://127.0.0.1:{B}; }
        location /nobody {
            proxy_pass_request_body off;
            proxy_set_header Content-Length \"\";
            proxy_pass http://127.0.0.1:{B};
        }
        location /setbody { proxy_set_body \"a=$arg_a&m=$request_method\"; proxy_pass http://127.0.0.1:{B}; }
        location /both {
            proxy_method POST;
            proxy_pass_request_headers off;
            proxy_set_body \"fixed\";
            proxy_set_header X-Kept yes;
            proxy_pass http://127.0.0.1:{B};
        }
    }
}
",
        &[("PORT", p.to_string()), ("B", backend.to_string())],
    )
}

const CASES: &[(&str, &str, &[u8])] = &[
    ("GET", "/method?q=1", b""),
    ("POST", "/method", b"hello"),
    ("GET", "/nohead", b""),
    ("POST", "/nohead", b"body"),
    ("POST", "/nobody", b"dropped"),
    ("GET", "/nobody", b""),
    ("GET", "/setbody?a=7", b""),
    ("POST", "/setbody?a=8", b"replaced"),
    ("GET", "/both", b""),
];

/// Method, target, the header fields as a sorted set and the body. Left out: `Host` (the
/// backends' ports differ), `Connection` and the HTTP version (ringfront's documented
/// upstream keep-alive defaults), and the order of fields.
fn shape(r: &Recorded) -> String {
    let mut headers: Vec<String> = r
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .filter(|(n, _)| n != "host" && n != "connection")
        .map(|(n, v)| format!("{n}: {v}"))
        .collect();
    headers.sort();
    format!(
        "{} {} [{}] {:?}",
        r.method,
        r.target,
        headers.join(", "),
        String::from_utf8_lossy(&r.body)
    )
}

fn seen(p: u16, b: &Backend) -> Vec<String> {
    let mut out = Vec::new();
    for (method, path, body) in CASES {
        b.reset_hits();
        let mut c = Client::connect(("127.0.0.1", p));
        let r = c.request(method, path, &[("Host", "front"), ("X-Client", "c1")], body);
        assert_eq!(r.status, 200, "{method} {path}");
        let reqs = b.requests();
        out.push(reqs.last().map(shape).unwrap_or_default());
    }
    out
}

#[test]
fn request_shaping_matches_nginx() {
    let (nb, rb) = (Backend::start(), Backend::start());
    let (np, rp) = (port(), port());
    let _n = Nginx::start(&config(np, nb.port()), np);
    let _r = Ringfront::start(&config(rp, rb.port()));
    let n = seen(np, &nb);
    let r = seen(rp, &rb);
    for (i, (a, b)) in n.iter().zip(&r).enumerate() {
        println!("{:?}\n  nginx: {a}\n     rf: {b}", CASES[i]);
    }
    assert_eq!(r, n);
}
