//! A `Host` value nginx's `ngx_http_validate_host` refuses (`.`, `a..b`): nginx stops
//! reading the fields at that line and answers 400 from the listen's default server (not
//! the one the name would choose; an absolute target's host still chooses), through its
//! `error_page`, then closes. Against real nginx: statuses, bodies, the access-log line
//! (`$request_length` ends with the `Host` line, a field after it is not seen) and the
//! error-log line.

mod common;

use common::fill;
use ringfront_testkit::{Client, TempDir};

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        "worker_processes 1;
error_log {DIR}/e.log info;
events { worker_connections 64; }
http {
    log_format t '$server_name|$uri|$status|$request_length|$http_before|$http_after|$host';
    access_log {DIR}/a.log t;
    server {
        listen 127.0.0.1:{PORT};
        server_name default;
        error_page 400 /e400;
        location /e400 { return 200 \"default's page\"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name other .other;
        error_page 400 /e400;
        location / { return 200 other; }
        location /e400 { return 200 \"other's page\"; }
    }
}
",
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

/// (target, Host).
const HOSTS: &[(&str, &str)] = &[
    ("/x", "other"),
    ("/x", "."),
    ("/x", "a..other"),
    ("/x", "other"),
    ("http://other/x", "."),
];

fn observed(p: u16, dir: &std::path::Path) -> Vec<String> {
    let mut lines: Vec<String> = HOSTS
        .iter()
        .map(|(t, h)| {
            let mut c = Client::connect(("127.0.0.1", p));
            let head = format!("GET {t} HTTP/1.1\r\nBefore: 1\r\nHost: {h}\r\nAfter: 2\r\n\r\n");
            c.send_raw(head.as_bytes());
            let r = c.read_response();
            let closed = r.header("Connection").unwrap_or("-").to_string();
            format!("{h} -> {} {} {closed}", r.status, r.text())
        })
        .collect();
    lines.extend(common::log_lines(&dir.join("a.log"), HOSTS.len()));
    let errors = std::fs::read_to_string(dir.join("e.log")).unwrap_or_default();
    let refused = |l: &str| {
        l.find("client sent invalid host")
            .map(|i| l[i..].to_string())
    };
    lines.extend(errors.lines().filter_map(refused));
    lines
}

#[test]
fn a_refused_host_is_the_default_servers_400_through_its_error_page_as_nginx() {
    let (nd, rd) = (TempDir::new("nginx-bad-host"), TempDir::new("rf-bad-host"));
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = ringfront_testkit::Nginx::start(&config(np, nd.path()), np);
        observed(np, nd.path())
    };
    let r = {
        let _r = ringfront_testkit::Ringfront::start(&config(rp, rd.path()));
        observed(rp, rd.path())
    };
    common::assert_same("bad host", &n, &r);
    assert_eq!(n[1], ". -> 400 default's page close", "{n:?}");
    assert_eq!(n[6], "default|/e400|400|37|1|-|default", "{n:?}");
    // An absolute target's host chose the server before the fields were read.
    assert_eq!(n[4], ". -> 400 other's page close", "{n:?}");
    assert_eq!(n.len(), HOSTS.len() * 2 + 3, "three error-log lines: {n:?}");
}
