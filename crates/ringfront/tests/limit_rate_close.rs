//! A client that closes while its `limit_rate` response waits to go out: nginx's
//! `ngx_http_test_reading` ends the request then (not when the paced body would have been
//! written), so the connection is no longer active. Differential against real nginx: the
//! stub_status `active` count right after the close, and the request's log line.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::fill;
use ringfront_testkit::{Client, TempDir};

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    log_format t '$request_uri $status';
    server {
        listen 127.0.0.1:{PORT};
        access_log {DIR}/a.log t;
        location /rate { limit_rate 10; return 200 0123456789012345678901234567890123456789; }
        location /stub { access_log off; stub_status; }
    }
}
",
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

/// `active` from the status page, asked until it is `want` or 50 tries have passed.
fn active_until(p: u16, want: u32) -> u32 {
    let mut last = 0;
    for _ in 0..50 {
        let body = Client::connect(("127.0.0.1", p))
            .request("GET", "/stub", &[("Host", "a")], b"")
            .text();
        last = body
            .strip_prefix("Active connections: ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if last == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    last
}

fn observe(p: u16, dir: &std::path::Path) -> Vec<String> {
    let mut s = TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.write_all(b"GET /rate HTTP/1.0\r\nHost: a\r\n\r\n")
        .unwrap();
    // The head and the first paced bytes, read so the close is a plain FIN.
    let mut first = [0u8; 64];
    let n = s.read(&mut first).unwrap();
    assert!(n > 0);
    let during = active_until(p, 2);
    drop(s);
    // The status request itself is the one active connection left.
    let after = active_until(p, 1);
    let log = common::log_lines(&dir.join("a.log"), 1);
    vec![
        format!("active while paced: {during}"),
        format!("active after the close: {after}"),
        format!("log: {log:?}"),
    ]
}

#[test]
fn a_client_closing_during_a_limit_rate_wait_ends_the_request_as_nginx() {
    let (nd, rd) = (TempDir::new("nginx-rate"), TempDir::new("rf-rate"));
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = ringfront_testkit::Nginx::start(&config(np, nd.path()), np);
        observe(np, nd.path())
    };
    let r = {
        let _r = ringfront_testkit::Ringfront::start(&config(rp, rd.path()));
        observe(rp, rd.path())
    };
    common::assert_same("limit_rate close", &n, &r);
    assert_eq!(n[1], "active after the close: 1");
}
