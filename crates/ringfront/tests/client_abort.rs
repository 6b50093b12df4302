//! A client that goes away while its request waits, against real nginx 1.22: nginx's
//! broken-connection checks end a proxied request when the client closes while the
//! upstream is waited for (499 in the access log, `$upstream_status` `-`, the upstream
//! connection closed — seen by the backend itself — and the `limit_conn` count given back
//! at once), unless `proxy_ignore_client_abort on`; pipelined bytes are no close (but a
//! close behind them is); and a client that closes during a `limit_req` delay ends its
//! request then, with 499.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{assert_same, fill};
use ringfront_testkit::{Backend, Client, Mode, Nginx, Ringfront, TempDir};

const WAIT: Duration = Duration::from_secs(5);

fn config(p: u16, backend: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
error_log {DIR}/e.log info;
events { worker_connections 64; }
http {
    log_format t '$request_uri $status [$upstream_status] $limit_req_status $limit_conn_status';
    access_log {DIR}/a.log t;
    server_tokens off;
    limit_conn_zone $binary_remote_addr zone=one:1m;
    limit_req_zone $binary_remote_addr zone=rq:1m rate=1r/m;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        location /abort { limit_conn one 1; proxy_pass http://127.0.0.1:{BACKEND}; }
        location /ignore {
            proxy_ignore_client_abort on;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /delay { limit_req zone=rq burst=5; proxy_pass http://127.0.0.1:{BACKEND}; }
        location /ping { access_log off; return 200 pong; }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DIR", dir.display().to_string()),
        ],
    )
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").into_bytes()
}

/// Sends `path` on a connection of its own and returns it once the backend holds it.
fn held(p: u16, backend: &Backend, path: &str) -> TcpStream {
    let before = backend.hits();
    let mut s = TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.write_all(&get(path)).unwrap();
    assert!(
        backend.wait_hits(before + 1, WAIT),
        "{path} reached the backend"
    );
    s
}

/// A round trip through the server on another connection: the close before it was seen.
fn ping(p: u16) -> u16 {
    Client::connect(("127.0.0.1", p))
        .request("GET", "/ping", &[("Host", "localhost")], b"")
        .status
}

fn run(p: u16, backend: &Backend, dir: &std::path::Path) -> Vec<String> {
    let mut seen = Vec::new();
    let access = |n| common::log_lines(&dir.join("a.log"), n);

    // The client closes while the backend holds the answer: the upstream connection is
    // closed, and limit_conn's count is free for the next request at once.
    backend.set_mode(Mode::Hold);
    drop(held(p, backend, "/abort"));
    let closed = backend.wait_closed(1, WAIT);
    seen.push(format!("/abort: backend saw the close: {closed}"));
    seen.push(format!("/abort: logged {:?}", access(1).first()));
    backend.set_mode(Mode::Ok);
    let next = Client::connect(("127.0.0.1", p)).request("GET", "/abort", &[("Host", "a")], b"");
    seen.push(format!("/abort after the close: {}", next.status));

    // A reset is a close too (its error is in the log line).
    backend.set_mode(Mode::Hold);
    ringfront_testkit::reset(held(p, backend, "/abort?reset"));
    let closed = backend.wait_closed(2, WAIT);
    seen.push(format!("/abort?reset: backend saw the close: {closed}"));
    seen.push(format!("/abort?reset: logged {:?}", access(3).get(2)));
    backend.set_mode(Mode::Ok);

    // proxy_ignore_client_abort on: the request goes on; the backend's answer is taken
    // (and discarded), its connection not closed before.
    backend.set_mode(Mode::Hold);
    let closes = backend.closed();
    drop(held(p, backend, "/ignore"));
    seen.push(format!("/ignore: ping {}", ping(p)));
    seen.push(format!(
        "/ignore: backend saw a close: {}",
        backend.closed() > closes
    ));
    backend.set_mode(Mode::Ok);
    seen.push(format!("/ignore: logged {:?}", access(4).get(3)));

    // Bytes the client pipelines while the upstream is waited for are no close.
    backend.set_mode(Mode::Hold);
    let closes = backend.closed();
    let before = backend.hits();
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(&get("/abort"));
    assert!(backend.wait_hits(before + 1, WAIT), "pipelined: held");
    c.send_raw(&get("/abort?second"));
    seen.push(format!("pipelined: ping {}", ping(p)));
    seen.push(format!(
        "pipelined: backend saw a close: {}",
        backend.closed() > closes
    ));
    backend.set_mode(Mode::Ok);
    let (a, b) = (c.read_response().status, c.read_response().status);
    seen.push(format!("pipelined: answered {a} {b}"));

    // Pipelined bytes with the client's close behind them: a close.
    backend.set_mode(Mode::Hold);
    let closes = backend.closed();
    // The pipelined request goes in the same write as the held one (so both proxies read
    // it with the head, whatever the machine's load), the close after the hold began.
    let before = backend.hits();
    let mut s = TcpStream::connect(("127.0.0.1", p)).unwrap();
    let mut both = get("/abort?then-close");
    both.extend_from_slice(&get("/abort?third"));
    s.write_all(&both).unwrap();
    assert!(
        backend.wait_hits(before + 1, WAIT),
        "then-close reached the backend"
    );
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let closed = backend.wait_closed(closes + 1, WAIT);
    seen.push(format!(
        "pipelined, closed: backend saw the close: {closed}"
    ));
    seen.push(format!("pipelined, closed: logged {:?}", access(7).get(6)));
    backend.set_mode(Mode::Ok);
    drop(s);

    // limit_req: the first request passes, the second waits a minute; the client closes.
    let first = Client::connect(("127.0.0.1", p)).request("GET", "/delay", &[("Host", "a")], b"");
    seen.push(format!("/delay first: {}", first.status));
    let hits = backend.hits();
    let mut s = TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.write_all(&get("/delay?second")).unwrap();
    // The delay is under way once its line is in the error log.
    delaying(dir);
    let start = Instant::now();
    drop(s);
    let line = access(9).get(8).cloned();
    seen.push(format!("/delay abandoned: logged {line:?}"));
    seen.push(format!(
        "/delay abandoned: ended before the delay: {}",
        start.elapsed() < Duration::from_secs(30)
    ));
    seen.push(format!(
        "/delay abandoned: reached the backend: {}",
        backend.hits() > hits
    ));

    let mut access = access(9);
    seen.append(&mut access);
    seen.append(&mut errors(dir, backend.port()));
    seen
}

/// Waits (bounded) for limit_req's "delaying request" line.
fn delaying(dir: &std::path::Path) {
    let end = Instant::now() + WAIT;
    while Instant::now() < end {
        let text = std::fs::read_to_string(dir.join("e.log")).unwrap_or_default();
        if text.contains("delaying request") {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The error log's lines about clients that closed, without time, pid and connection, and
/// with the backend's port as `BACKEND`.
fn errors(dir: &std::path::Path, backend: u16) -> Vec<String> {
    let port = format!(":{backend}/");
    let text = std::fs::read_to_string(dir.join("e.log")).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("prematurely") || l.contains("[error]"))
        .map(|l| {
            let level = l.split_whitespace().nth(2).unwrap_or("");
            let msg = l
                .find(": *")
                .and_then(|i| l[i + 3..].split_once(' '))
                .map_or(l, |(_, m)| m);
            format!("{level} {msg}").replace(&port, ":BACKEND/")
        })
        .collect()
}

#[test]
fn a_client_that_goes_away_while_its_request_waits_is_dropped_as_nginx() {
    let (nd, rd) = (TempDir::new("nginx-abort"), TempDir::new("rf-abort"));
    let (nb, rb) = (Backend::start(), Backend::start());
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = Nginx::start(&config(np, nb.port(), nd.path()), np);
        run(np, &nb, nd.path())
    };
    let r = {
        let _r = Ringfront::start(&config(rp, rb.port(), rd.path()));
        run(rp, &rb, rd.path())
    };
    assert_same("client abort", &n, &r);
    // What nginx does, spelled out.
    assert_eq!(n[0], "/abort: backend saw the close: true");
    assert_eq!(n[2], "/abort after the close: 200");
    assert!(n.iter().any(|l| l
        .contains("closed too (104: Connection reset by peer) while sending request to upstream")));
    assert!(n.contains(&"/delay?second 499 [-] DELAYED -".to_string()));
    let line = |s: &str| n.contains(&s.to_string());
    assert!(line(
        "/delay abandoned: logged Some(\"/delay?second 499 [-] DELAYED -\")"
    ));
    assert!(line(
        "pipelined, closed: logged Some(\"/abort?then-close 499 [-] - PASSED\")"
    ));
    assert!(line("pipelined: backend saw a close: false"));
    assert!(line("/ignore: backend saw a close: false"));
}

/// Requests answered on a keep-alive connection, then one the backend holds, then the
/// client's close (the watch a connection's earlier waits left armed has fired on the later
/// requests' bytes; the close must still be seen at once).
fn keepalive_run(p: u16, backend: &Backend, dir: &std::path::Path) -> Vec<String> {
    let mut seen = Vec::new();
    backend.set_mode(Mode::Ok);
    let mut c = Client::connect(("127.0.0.1", p));
    for i in 0..3 {
        let r = c.request("GET", &format!("/abort?ka{i}"), &[("Host", "a")], b"");
        seen.push(format!("keep-alive {i}: {}", r.status));
    }
    backend.set_mode(Mode::Hold);
    let closes = backend.closed();
    let before = backend.hits();
    c.send_raw(&get("/abort?ka-held"));
    assert!(backend.wait_hits(before + 1, WAIT), "ka-held: held");
    drop(c);
    let closed = backend.wait_closed(closes + 1, WAIT);
    seen.push(format!(
        "keep-alive, closed: backend saw the close: {closed}"
    ));
    backend.set_mode(Mode::Ok);
    let next = Client::connect(("127.0.0.1", p)).request("GET", "/abort", &[("Host", "a")], b"");
    seen.push(format!("keep-alive, after the close: {}", next.status));
    seen.append(&mut common::log_lines(&dir.join("a.log"), 5));
    seen.append(&mut errors(dir, backend.port()));
    seen
}

#[test]
fn a_keepalive_client_that_goes_away_while_a_later_request_waits_is_dropped_as_nginx() {
    let (nd, rd) = (TempDir::new("nginx-abort-ka"), TempDir::new("rf-abort-ka"));
    let (nb, rb) = (Backend::start(), Backend::start());
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = Nginx::start(&config(np, nb.port(), nd.path()), np);
        keepalive_run(np, &nb, nd.path())
    };
    let r = {
        let _r = Ringfront::start(&config(rp, rb.port(), rd.path()));
        keepalive_run(rp, &rb, rd.path())
    };
    assert_same("client abort on keep-alive", &n, &r);
    assert!(n.contains(&"keep-alive, closed: backend saw the close: true".to_string()));
    assert!(n.contains(&"keep-alive, after the close: 200".to_string()));
    assert!(n.contains(&"/abort?ka-held 499 [-] - PASSED".to_string()));
}

/// Bytes pipelined after the hold began, then the client's close.
fn late_pipelined_run(p: u16, backend: &Backend, dir: &std::path::Path) -> Vec<String> {
    let mut seen = Vec::new();
    backend.set_mode(Mode::Hold);
    let closes = backend.closed();
    let mut s = held(p, backend, "/abort?late");
    s.write_all(&get("/abort?late-second")).unwrap();
    seen.push(format!("late bytes: ping {}", ping(p)));
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let closed = backend.wait_closed(closes + 1, WAIT);
    seen.push(format!(
        "late bytes, closed: backend saw the close: {closed}"
    ));
    backend.set_mode(Mode::Ok);
    drop(s);
    seen.append(&mut common::log_lines(&dir.join("a.log"), 1));
    seen
}

/// nginx sees a close that comes after bytes the client pipelined (its `EPOLLRDHUP`); so
/// does the io_uring driver's hang-up watch. The epoll driver's watch stops at the bytes
/// (the documented deviation), so this runs on io_uring only.
#[test]
fn a_close_after_later_pipelined_bytes_is_seen_as_nginx_on_io_uring() {
    if std::env::var("RINGFRONT_DRIVER").is_ok_and(|d| d == "epoll") {
        return;
    }
    let (nd, rd) = (
        TempDir::new("nginx-abort-late"),
        TempDir::new("rf-abort-late"),
    );
    let (nb, rb) = (Backend::start(), Backend::start());
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = Nginx::start(&config(np, nb.port(), nd.path()), np);
        late_pipelined_run(np, &nb, nd.path())
    };
    let r = {
        let _r = Ringfront::start(&config(rp, rb.port(), rd.path()));
        late_pipelined_run(rp, &rb, rd.path())
    };
    assert_same("close after later pipelined bytes", &n, &r);
    assert!(n.contains(&"late bytes, closed: backend saw the close: true".to_string()));
    assert!(n.contains(&"/abort?late 499 [-] - PASSED".to_string()));
}
