//! A response after which the connection closes reaches the client's end of stream only
//! once the request's log lines are in their files, as with nginx (which writes the
//! access-log line, and its error-log lines, before it closes): a client that reads to the
//! close and reads the logs at once finds them — the access line of an answer and the
//! error line of a denied request. Run against real nginx and ringfront on the same
//! configuration, many times in a row, with no retry. A refused head's line is there too
//! with ringfront; nginx logs that one after its lingering close has sent the FIN (the
//! unread rest of the head), so it is not asked of nginx.

mod common;

use std::io::{Read, Write};

use common::fill;
use ringfront_testkit::TempDir;

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        "worker_processes 1;
error_log {DIR}/e.log info;
events { worker_connections 64; }
http {
    log_format t '$request_uri $status';
    access_log {DIR}/a.log t;
    server {
        listen 127.0.0.1:{PORT};
        location /ok { return 200 ok; }
        location /deny { deny all; }
    }
}
",
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

/// Sends `raw` and reads to the close.
fn exchange(p: u16, raw: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", p)).expect("connect");
    s.write_all(raw.as_bytes()).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn count(path: &std::path::Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter(|l| l.contains(needle)).count()
}

const ROUNDS: usize = 60;

/// What was missing right after each close (empty when every line was there).
fn missing(p: u16, dir: &std::path::Path) -> Vec<String> {
    let (a, e) = (dir.join("a.log"), dir.join("e.log"));
    let mut missing = Vec::new();
    for i in 1..=ROUNDS {
        let r = exchange(p, &format!("GET /ok?{i} HTTP/1.0\r\n\r\n"));
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        if count(&a, &format!("/ok?{i} 200")) != 1 {
            missing.push(format!("access line {i}"));
        }
        exchange(
            p,
            "GET /deny HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        if count(&e, "access forbidden by rule") != i {
            missing.push(format!("error line {i}"));
        }
        exchange(p, &format!("GET /{i}\x01 HTTP/1.1\r\n\r\n"));
        if count(&a, " 400") != i {
            missing.push(format!("refused head's line {i}"));
        }
    }
    missing
}

#[test]
fn the_logs_are_written_before_the_close() {
    let (nd, rd) = (
        TempDir::new("nginx-log-close"),
        TempDir::new("rf-log-close"),
    );
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = ringfront_testkit::Nginx::start(&config(np, nd.path()), np);
        missing(np, nd.path())
    };
    let r = {
        let _r = ringfront_testkit::Ringfront::start(&config(rp, rd.path()));
        missing(rp, rd.path())
    };
    let n: Vec<String> = n
        .into_iter()
        .filter(|m| !m.starts_with("refused"))
        .collect();
    assert_eq!(n, Vec::<String>::new(), "nginx");
    assert_eq!(r, Vec::<String>::new(), "ringfront");
}
