use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::*;
use crate::http::{get, try_get, Client};

fn raw_exchange(b: &Backend, request: &[u8]) -> (TcpStream, std::io::Result<Vec<u8>>) {
    let mut s = TcpStream::connect(b.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let r = s.read_to_end(&mut out).map(|_| out);
    (s, r)
}

#[test]
fn ok_default_answer() {
    let b = Backend::start();
    let r = get(b.addr(), "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), format!("backend {}\n", b.port()));
    assert_eq!(r.header("x-backend"), Some(b.port().to_string().as_str()));
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
    assert_eq!(b.hits(), 1);
    let req = &b.requests()[0];
    assert_eq!((req.method.as_str(), req.target.as_str()), ("GET", "/"));
    assert_eq!(req.header("connection"), Some("close"));
    assert!(req.raw_head.ends_with(b"\r\n\r\n"));
}

#[test]
fn ok_sleep_and_code() {
    let b = Backend::start();
    let t = Instant::now();
    let r = get(b.addr(), "/x?sleep=0.2&code=504");
    assert!(t.elapsed() >= Duration::from_millis(200));
    assert_eq!(r.status, 504);
    assert_eq!(r.reason, "Gateway Timeout");
}

#[test]
fn size_chunked_echo_head_204() {
    let b = Backend::start();
    let mut c = Client::connect(b.addr());
    let r = c.request("GET", "/?size=10000&chunked=1", &[], b"");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.body, body_pattern(10000));
    let r = c.request(
        "POST",
        "/?echo=1",
        &[("Transfer-Encoding", "chunked")],
        b"5\r\nhello\r\n0\r\n\r\n",
    );
    assert_eq!(r.text(), "hello");
    let r = c.request("PUT", "/?echo=1", &[], b"plain body");
    assert_eq!(r.text(), "plain body");
    let r = c.request("HEAD", "/?size=7", &[], b"");
    assert_eq!((r.header("content-length"), r.body.len()), (Some("7"), 0));
    let r = c.request("GET", "/?code=204", &[], b"");
    assert_eq!((r.status, r.header("content-length")), (204, None));
    assert_eq!(b.accepted(), 1, "all on one keepalive connection");
    assert_eq!(b.requests()[1].body, b"hello");
}

#[test]
fn pipelined_requests_answer_in_order() {
    let b = Backend::start();
    let mut c = Client::connect(b.addr());
    c.send_raw(
        b"GET /?size=3 HTTP/1.1\r\nHost: a\r\n\r\nGET /?code=404 HTTP/1.1\r\nHost: a\r\n\r\n",
    );
    assert_eq!(c.read_response().body, b"abc");
    assert_eq!(c.read_response().status, 404);
    assert_eq!(b.hits(), 2);
}

#[test]
fn http10_and_close_semantics() {
    let b = Backend::start();
    // HTTP/1.0 without keep-alive: answered then closed; chunked becomes close-delimited.
    let (_, r) = raw_exchange(&b, b"GET /?chunked=1&size=5 HTTP/1.0\r\n\r\n");
    let text = String::from_utf8(r.unwrap()).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(!text.contains("Content-Length") && !text.contains("chunked"));
    assert!(text.ends_with("\r\n\r\nabcde"));
    // ?close=1 closes a keepalive connection after the answer.
    let mut c = Client::connect(b.addr());
    let r = c.request("GET", "/?close=1", &[], b"");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.peer_closed(Duration::from_secs(2)));
    // HTTP/1.0 with keep-alive stays open.
    let mut c = Client::connect(b.addr());
    c.send_raw(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(c.read_response().header("connection"), Some("keep-alive"));
    assert!(!c.peer_closed(Duration::from_millis(50)));
}

#[test]
fn expect_continue_and_upgrade() {
    let b = Backend::start();
    let mut s = TcpStream::connect(b.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        b"POST /?echo=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut buf = [0u8; 25];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"ok").unwrap();
    let mut c = Client::connect(b.addr());
    c.send_raw(
        b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nearly",
    );
    let r = c.read_response();
    assert_eq!(r.status, 101);
    assert_eq!(r.header("upgrade"), Some("websocket"));
    c.send_raw(b"+later");
    c.stream().shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(c.read_to_close(), b"early+later");
}

#[test]
fn refuse_then_ok_on_same_port() {
    let b = Backend::start();
    let mut idle = Client::connect(b.addr());
    b.set_mode(Mode::Refuse);
    let err = TcpStream::connect(b.addr()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    assert!(
        idle.peer_closed(Duration::from_secs(2)),
        "open connections are closed"
    );
    b.set_mode(Mode::Ok);
    assert_eq!(get(b.addr(), "/").status, 200);
    b.set_mode(Mode::Refuse);
    assert!(try_get(b.addr(), "/").is_err());
}

#[test]
fn hang_reads_but_never_answers() {
    let b = Backend::start();
    b.set_mode(Mode::Hang);
    let mut c = Client::connect(b.addr());
    c.set_read_timeout(Some(Duration::from_millis(200)));
    let err = c.try_request("GET", "/", &[], b"").unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    assert!(b.wait_hits(1, Duration::from_secs(1)));
    assert_eq!(b.hits(), 1);
    // Leaving Hang closes the held connection unanswered.
    b.set_mode(Mode::Ok);
    assert!(c.peer_closed(Duration::from_secs(2)));
}

#[test]
fn close_garbage_reset() {
    let b = Backend::start();
    let req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    b.set_mode(Mode::Close);
    let (_, r) = raw_exchange(&b, req);
    assert_eq!(r.unwrap(), b"");
    b.set_mode(Mode::Garbage);
    let (_, r) = raw_exchange(&b, req);
    assert_eq!(r.unwrap(), b"HELLO\r\n\r\n");
    b.set_mode(Mode::InvalidHeader);
    let (_, r) = raw_exchange(&b, req);
    assert!(String::from_utf8(r.unwrap())
        .unwrap()
        .contains("\r\nBad Header: x\r\n"));
    b.set_mode(Mode::Reset);
    let (_, r) = raw_exchange(&b, req);
    assert_eq!(r.unwrap_err().kind(), ErrorKind::ConnectionReset);
    assert_eq!(b.hits(), 4);
    b.reset_hits();
    assert_eq!((b.hits(), b.requests().len()), (0, 0));
}

#[test]
fn stop_interrupts_sleeps_and_frees_port() {
    let mut b = Backend::start();
    let addr = b.addr();
    let t = std::thread::spawn(move || try_get(addr, "/?sleep=30"));
    assert!(b.wait_hits(1, Duration::from_secs(2)));
    let started = Instant::now();
    b.stop();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(t.join().unwrap().is_err());
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn start_on_fixed_port() {
    let port = crate::free_port();
    let b = Backend::start_on(port);
    assert_eq!(
        get(("127.0.0.1", port), "/").text(),
        format!("backend {port}\n")
    );
    drop(b);
}

#[test]
fn canned_route_answers_its_path_until_cleared() {
    let b = Backend::start();
    b.set_route(
        "/health",
        Canned::status(503, "maintenance").header("X-State", "draining"),
    );
    let mut c = Client::connect(b.addr());
    let r = c.request("GET", "/health?x=1", &[], b"");
    assert_eq!((r.status, r.text().as_str()), (503, "maintenance"));
    assert_eq!(r.header("x-state"), Some("draining"));
    assert_eq!(r.header("x-backend"), Some(b.port().to_string().as_str()));
    // Same connection (keepalive kept), other paths unaffected.
    let r = c.request("GET", "/other", &[], b"");
    assert_eq!(
        (r.status, r.text()),
        (200, format!("backend {}\n", b.port()))
    );
    b.set_route("/health", Canned::status(200, "ok"));
    assert_eq!(c.request("GET", "/health", &[], b"").status, 200);
    b.clear_route("/health");
    let r = c.request("GET", "/health", &[], b"");
    assert_eq!(
        (r.status, r.text()),
        (200, format!("backend {}\n", b.port()))
    );
    assert_eq!(b.accepted(), 1);
    // Other modes still win over the route.
    b.set_route("/health", Canned::status(200, "ok"));
    b.set_mode(Mode::Close);
    assert!(try_get(b.addr(), "/health").is_err());
}
