//! The access-log lines of requests whose head never came whole or was refused, against
//! real nginx 1.22 on the same configuration: a head that times out part-way
//! (`client_header_timeout`, 408; nothing logged when no byte came), one the client ends
//! by closing (400), and the refusals answered while reading it (a bad request line 400,
//! a bad version 505, a bad header line 400, an unknown `Transfer-Encoding`
//! 501, a request line too long 414, a header line too long 494 logged
//! as 400). Each goes to the server level's `access_log` of the
//! server its `Host` (or absolute target) chose, else the default server's, never the
//! location's; `$request`, `$uri`, `$args`, `$request_method`, `$http_*`,
//! `$request_length` and `$connection_requests` as nginx has them then; and the `info`
//! error-log lines of the timeouts and closes (`... while waiting for request` when no
//! byte came). The lines are
//! compared sorted (the clients run at once); byte counts are left out (the built-in pages
//! name the server).

mod common;

use ringfront_testkit::MaskPort;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use common::fill;

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
error_log {DIR}/error.log info;
events { worker_connections 64; }
http {
    client_header_timeout 1s;
    large_client_header_buffers 2 1k;
    log_format t '$status "$request" srv=$server_name uri=$uri args=$args m=$request_method ru=$request_uri proto=$server_protocol rl=$request_length ua=$http_user_agent host=$host conn=$connection_requests';
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        access_log {DIR}/server.log t;
        location / { access_log {DIR}/location.log t; return 200 "a\n"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name b.test;
        access_log {DIR}/server.log t;
        location / { access_log {DIR}/location.log t; return 200 "b\n"; }
    }
}
"#,
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

/// (bytes sent, then close our side).
fn cases() -> Vec<(Vec<u8>, bool)> {
    let long = |prefix: &[u8], n: usize, suffix: &[u8]| {
        let mut v = prefix.to_vec();
        v.extend(std::iter::repeat_n(b'x', n));
        v.extend_from_slice(suffix);
        v
    };
    vec![
        // Timed out.
        (b"".to_vec(), false),
        (b"GET /abc?x=1".to_vec(), false),
        (b"\r\n".to_vec(), false),
        (b"GET /line?x=1 HTTP/1.1\r\n".to_vec(), false),
        (
            b"GET /nohost HTTP/1.1\r\nUser-Agent: ua1\r\nX-A: 1".to_vec(),
            false,
        ),
        (
            b"GET /tob HTTP/1.1\r\nHost: b.test\r\nUser-Agent: ua2\r\nX-A".to_vec(),
            false,
        ),
        (b"GET http://b.test/abs HTTP/1.1\r\nX-A: 1".to_vec(), false),
        (b"GET /a%20b?q HTTP/1.0\r\nHost: b.test\r\n".to_vec(), false),
        (
            b"GET /first HTTP/1.1\r\nHost: b.test\r\n\r\nGET /second HTTP/1.1\r\nHost: b.test\r\nX"
                .to_vec(),
            false,
        ),
        // Closed by the client.
        (b"GET /closed".to_vec(), true),
        (
            b"GET /closedhdr HTTP/1.1\r\nHost: b.test\r\nX-A".to_vec(),
            true,
        ),
        // Refused.
        (b"GARBAGE\r\n\r\n".to_vec(), false),
        (
            b"GET /te HTTP/1.1\r\nHost: b.test\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(),
            false,
        ),
        (b"GET /v HTTP/9.9\r\nHost: b.test\r\n\r\n".to_vec(), false),
        (
            b"GET /badhdr HTTP/1.1\r\nHost: b.test\r\nBad Header\r\n\r\n".to_vec(),
            false,
        ),
        (
            b"GET /badhdr2 HTTP/1.1\r\nUser-Agent: ua3\r\nBad Header\r\n\r\n".to_vec(),
            false,
        ),
        (
            long(b"GET /", 1500, b" HTTP/1.1\r\nHost: b.test\r\n\r\n"),
            false,
        ),
        (long(b"GET /", 3000, b""), false),
        (
            long(
                b"GET /big HTTP/1.1\r\nHost: b.test\r\nX-Big: ",
                1500,
                b"\r\n\r\n",
            ),
            false,
        ),
        (
            long(
                b"GET /bigpart HTTP/1.1\r\nHost: b.test\r\nX-Big: ",
                1500,
                b"",
            ),
            false,
        ),
        (
            long(
                b"GET /bignohost HTTP/1.1\r\nUser-Agent: u\r\nX-Big: ",
                1500,
                b"\r\n\r\n",
            ),
            false,
        ),
    ]
}

fn exchange(port: u16, (bytes, close): (Vec<u8>, bool)) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if !bytes.is_empty() {
        s.write_all(&bytes).unwrap();
    }
    if close {
        s.shutdown(Shutdown::Write).unwrap();
    }
    // Until the server closes (after its timeout, refusal or our close).
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
}

/// The log lines after every case ran at once: the server level's (sorted), the
/// location's and the error log's about timeouts and closes.
fn lines(port: u16, dir: &std::path::Path) -> (Vec<String>, Vec<String>, Vec<String>) {
    std::thread::scope(|sc| {
        for c in cases() {
            sc.spawn(move || exchange(port, c));
        }
    });
    // Every case but the one that sent nothing logs one line at server level.
    let mut server = common::log_lines(&dir.join("server.log"), cases().len() - 1);
    server.sort();
    let location = common::log_lines(&dir.join("location.log"), 1);
    (server, location, error_lines(dir))
}

/// The error log's lines about heads that timed out or were closed, without the time,
/// process and connection numbers (sorted).
fn error_lines(dir: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains("client timed out") || l.contains("prematurely closed"))
        .filter_map(|l| l.split_once(": *").map(|(_, rest)| rest.to_string()))
        .map(|l| {
            l.split_once(' ')
                .map_or(l.clone(), |(_, msg)| msg.to_string())
        })
        .map(|l| l.replace(&"x".repeat(1000), "x{1000}"))
        .collect();
    lines.sort();
    lines
}

#[test]
fn refused_and_unfinished_heads_are_logged_as_nginx() {
    let base = std::env::temp_dir().join(format!("ringfront-headlog-{}", std::process::id()));
    let (nd, rd) = (base.join("nginx"), base.join("ringfront"));
    std::fs::create_dir_all(&nd).expect("dir");
    std::fs::create_dir_all(&rd).expect("dir");
    let (np, rp) = (common::port(), common::port());
    let n = ringfront_testkit::Nginx::start(&config(np, &nd), np);
    let nginx = lines(np, &nd);
    drop(n);
    let r = ringfront_testkit::Ringfront::start(&config(rp, &rd));
    let ours = lines(rp, &rd);
    drop(r);
    let shorten = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|l| l.replace(&"x".repeat(1000), "x{1000}"))
            .collect()
    };
    common::assert_same("server-level log", &shorten(&nginx.0), &shorten(&ours.0));
    common::assert_same("location log", &nginx.1, &ours.1);
    let port_free =
        |v: &[String], p: u16| -> Vec<String> { v.iter().map(|l| l.mask_port(p)).collect() };
    common::assert_same(
        "error log",
        &port_free(&nginx.2, np),
        &port_free(&ours.2, rp),
    );
    assert!(
        nginx
            .2
            .iter()
            .any(|l| l.contains("while waiting for request")),
        "{:#?}",
        nginx.2
    );
    // The oracle logged what the cases are about.
    let has = |want: &str| nginx.0.iter().any(|l| l.contains(want));
    for want in [
        r#"408 "GET /abc?x=1" srv=a.test uri=- args=- m=-"#,
        r#"408 "" srv=a.test"#,
        r#"408 "GET /line?x=1 HTTP/1.1" srv=a.test uri=/line args=x=1 m=GET"#,
        "ua=ua1 host=a.test",
        r#"408 "GET /tob HTTP/1.1" srv=b.test"#,
        "uri=/a b args=q",
        r#"408 "GET /second HTTP/1.1" srv=b.test"#,
        "conn=2",
        r#"400 "GET /closed" srv=a.test"#,
        r#"400 "GET /closedhdr HTTP/1.1" srv=b.test"#,
        r#"400 "GARBAGE" srv=a.test uri=-"#,
        r#"505 "GET /v HTTP/9.9" srv=a.test"#,
        r#"501 "GET /te HTTP/1.1" srv=b.test uri=/te"#,
        r#"400 "GET /badhdr HTTP/1.1" srv=b.test"#,
        "414 \"GET /xxx",
        r#"400 "GET /big HTTP/1.1" srv=b.test"#,
        r#"400 "GET /bignohost HTTP/1.1" srv=a.test"#,
    ] {
        assert!(has(want), "{want}: {:#?}", nginx.0);
    }
    assert!(nginx.1[0].contains("GET /first"), "{:?}", nginx.1);
    let _ = std::fs::remove_dir_all(&base);
}
