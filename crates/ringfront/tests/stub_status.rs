//! `stub_status` against real nginx on the same configuration: the page's text, byte for
//! byte, for the same sequence of connections (one idle keep-alive connection that served a
//! request, then the status request on a second one), and 405 for a POST.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::fill;

fn config(p: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"ok\\n\"; }
        location = /status { stub_status; }
        location = /old { stub_status on; }
    }
}
",
        &[("PORT", p.to_string())],
    )
}

/// One request on `s` (keep-alive); the whole response.
fn ask(s: &mut TcpStream, method: &str, path: &str) -> String {
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if body.len() >= len {
                return text;
            }
        }
    }
}

fn body(resp: &str) -> &str {
    resp.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn scenario(p: u16) -> (String, String, String) {
    let connect = || {
        let s = TcpStream::connect(("127.0.0.1", p)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    };
    let mut idle = connect();
    assert!(ask(&mut idle, "GET", "/").starts_with("HTTP/1.1 200"));
    let mut c = connect();
    let first = body(&ask(&mut c, "GET", "/status")).to_string();
    let second = body(&ask(&mut c, "GET", "/old")).to_string();
    let post = ask(&mut c, "POST", "/status");
    let post = post.lines().next().unwrap_or("").to_string();
    (first, second, post)
}

/// The page with accepts and handled masked (the test harness's own readiness probe of
/// nginx is one more accepted connection there), and those two numbers.
fn masked(page: &str) -> (String, u64, u64) {
    let mut lines: Vec<String> = page.split('\n').map(str::to_string).collect();
    let nums: Vec<u64> = lines[2]
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(nums.len(), 3, "{page:?}");
    lines[2] = format!(" N N {} ", nums[2]);
    (lines.join("\n"), nums[0], nums[1])
}

#[test]
fn stub_status_reads_as_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = scenario(np);
    let r = scenario(rp);
    let (n_page, n_acc, n_hand) = masked(&n.0);
    assert_eq!(
        n_page,
        "Active connections: 2 \nserver accepts handled requests\n N N 2 \nReading: 0 Writing: 1 Waiting: 1 \n",
        "nginx's page (the oracle) changed"
    );
    let (r_page, r_acc, r_hand) = masked(&r.0);
    assert_eq!(r_page, n_page);
    assert_eq!(
        (r_acc, r_hand),
        (2, 2),
        "two connections accepted and served"
    );
    assert_eq!(n_acc, n_hand);
    // One request later, on the same connection: requests + 1, nothing else moves.
    assert_eq!(masked(&r.1).0, masked(&n.1).0);
    assert!(masked(&r.1).0.contains(" N N 3 "), "{:?}", r.1);
    assert_eq!(r.2, n.2);
    assert_eq!(r.2, "HTTP/1.1 405 Not Allowed");
}

/// A request whose connection closes stops counting as writing once it is answered, as on
/// nginx (which frees the request, log line written, before it closes), even while
/// ringfront's connection still waits for the log writer. The writer is held here: the
/// access log is a FIFO whose pipe this test keeps full, so the wait lasts until the test
/// drains it.
#[test]
fn a_closing_request_is_no_longer_writing_while_its_log_line_waits() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = ringfront_testkit::TempDir::new("stub-status-fifo");
    let fifo = dir.path().join("access.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Both ends held by the test: ringfront's open for writing then finds a reader, and
    // the pipe is filled to the brim, so the log writer blocks on its first line.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut filler = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let chunk = [b'#'; 4096];
    while filler.write(&chunk).is_ok() {}
    let p = common::port();
    let cfg = fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"ok\\n\"; access_log {FIFO}; }
        location = /status { stub_status; access_log off; }
    }
}
",
        &[
            ("PORT", p.to_string()),
            ("FIFO", fifo.display().to_string()),
        ],
    );
    let rf = ringfront_testkit::Ringfront::start(&cfg);
    let connect = || {
        let s = TcpStream::connect(("127.0.0.1", p)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    };
    // Answered whole, its connection to close; its log line cannot be written yet.
    let mut closing = connect();
    write!(
        closing,
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).ends_with("ok\n") {
        let n = closing.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the whole response");
        got.extend_from_slice(&buf[..n]);
    }
    let mut c = connect();
    let page = body(&ask(&mut c, "GET", "/status")).to_string();
    assert!(
        page.contains("\nReading: 0 Writing: 1 "),
        "only the status request is writing: {page:?}"
    );
    // Let the writer go (a blocking reader drains the pipe on its own thread): the closing
    // connection ends once its line is written.
    let mut drain = std::fs::File::open(&fifo).unwrap();
    drop(reader);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = [0u8; 65536];
        let mut seen = Vec::new();
        while let Ok(n @ 1..) = drain.read(&mut sink) {
            seen.extend_from_slice(&sink[..n]);
            if String::from_utf8_lossy(&seen).contains("\"GET / HTTP/1.1\" 200") {
                let _ = tx.send(());
                break;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("the log line was written");
    assert_eq!(
        closing.read(&mut buf).unwrap(),
        0,
        "closed after its log line"
    );
    drop(rf);
}
