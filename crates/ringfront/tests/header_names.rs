//! `underscores_in_headers` and `ignore_invalid_headers` against real nginx: with nginx's
//! defaults a request line whose name has `_` or punctuation other than `-` is dropped (not
//! passed to the upstream, not in `$http_*`, logged at info); `underscores_in_headers on`
//! keeps `_`; `ignore_invalid_headers off` keeps every line. Each server on its own port, as
//! nginx reads these from the address's default server.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client, Nginx, Ringfront};

fn config(ports: [u16; 3], backend: u16) -> String {
    fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{P0};
        location / { return 200 \"[$http_x_api_key][$http_x_ok]\"; }
        location /up/ { proxy_pass http://127.0.0.1:{B}; }
    }
    server {
        listen 127.0.0.1:{P1};
        underscores_in_headers on;
        location / { return 200 \"[$http_x_api_key][$http_x_ok]\"; }
        location /up/ { proxy_pass http://127.0.0.1:{B}; }
    }
    server {
        listen 127.0.0.1:{P2};
        ignore_invalid_headers off;
        location / { return 200 \"[$http_x_api_key][$http_x_ok]\"; }
        location /up/ { proxy_pass http://127.0.0.1:{B}; }
    }
}
",
        &[
            ("P0", ports[0].to_string()),
            ("P1", ports[1].to_string()),
            ("P2", ports[2].to_string()),
            ("B", backend.to_string()),
        ],
    )
}

const SENT: &[(&str, &str)] = &[
    ("X_Api_Key", "k1"),
    ("X-Ok", "ok"),
    ("X.Dot", "d"),
    ("X~Tilde", "t"),
];

/// Per port: the `return` body, then the sent names the backend received.
fn observed(ports: [u16; 3], backend: &Backend) -> Vec<String> {
    let mut out = Vec::new();
    for p in ports {
        let mut headers = vec![("Host", "a")];
        headers.extend_from_slice(SENT);
        let r = Client::connect(("127.0.0.1", p)).request("GET", "/", &headers, b"");
        out.push(format!("{p_} {} {}", r.status, r.text(), p_ = out.len()));
        let before = backend.requests().len();
        let r = Client::connect(("127.0.0.1", p)).request("GET", "/up/x", &headers, b"");
        let got = backend.requests();
        let seen: Vec<String> = got[before..]
            .iter()
            .flat_map(|q| q.headers.iter())
            .filter(|(n, _)| SENT.iter().any(|(s, _)| s.eq_ignore_ascii_case(n)))
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        out.push(format!("up {} {seen:?}", r.status));
    }
    out
}

#[test]
fn invalid_header_lines_are_dropped_as_nginx_drops_them() {
    let backend = Backend::start();
    let np = [common::port(), common::port(), common::port()];
    let rp = [common::port(), common::port(), common::port()];
    let (n, nlog) = {
        let nginx = Nginx::start(&config(np, backend.port()), np[0]);
        let seen = observed(np, &backend);
        (seen, nginx.error_log_contents())
    };
    let rf = Ringfront::start(&config(rp, backend.port()));
    let r = observed(rp, &backend);
    common::assert_same("header names", &n, &r);
    assert_eq!(n[0], "0 200 [][ok]");
    assert_eq!(n[1], "up 200 [\"X-Ok=ok\"]");
    assert_eq!(n[2], "2 200 [k1][ok]");
    assert_eq!(n[3], "up 200 [\"X_Api_Key=k1\", \"X-Ok=ok\"]");
    assert_eq!(
        n[5],
        "up 200 [\"X_Api_Key=k1\", \"X-Ok=ok\", \"X.Dot=d\", \"X~Tilde=t\"]"
    );
    let line = "[info] ";
    let msg =
        "client sent invalid header line: \"X_Api_Key: k1\" while reading client request headers";
    assert!(nlog.contains(msg), "{nlog}");
    assert!(
        rf.wait_for_stderr(msg, std::time::Duration::from_secs(5)),
        "{:?}",
        rf.stderr_lines()
    );
    assert!(
        rf.stderr_lines()
            .iter()
            .any(|l| l.contains(line) && l.contains("\"X.Dot: d\"")),
        "{:?}",
        rf.stderr_lines()
    );
}
