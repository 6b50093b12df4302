//! Backend faults and timeouts: what the client gets (502/504 with nginx's pages), the
//! error-log lines in nginx's wording, and moving on to the next peer.

mod common;

use std::time::{Duration, Instant};

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{http, Backend, Client, FullBacklogListener, Mode, Ringfront};

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn refused_backend_gives_502_and_nginx_log_line() {
    let be = Backend::start();
    be.set_mode(Mode::Refuse);
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let r = http::get(("127.0.0.1", p), "/x");
    assert_eq!(r.status, 502);
    assert!(r.text().contains("<title>502 Bad Gateway</title>"));
    assert!(rf.wait_for_stderr(
        "connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, server: localhost, request: \"GET /x HTTP/1.1\", upstream: \"http://",
        WAIT
    ));
}

#[test]
fn hanging_backend_gives_504_after_read_timeout() {
    let be = Backend::start();
    be.set_mode(Mode::Hang);
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", "proxy_read_timeout 1;"));
    let t = Instant::now();
    let r = http::get(("127.0.0.1", p), "/");
    assert_eq!(r.status, 504);
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    assert!(rf.wait_for_stderr(
        "upstream timed out (110: Connection timed out) while reading response header from upstream",
        WAIT
    ));
}

#[test]
fn garbage_and_closing_backends_give_502() {
    let be = Backend::start();
    be.set_mode(Mode::Garbage);
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert!(rf.wait_for_stderr(
        "upstream sent no valid HTTP/1.0 header while reading response header from upstream",
        WAIT
    ));
    be.set_mode(Mode::Close);
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert!(rf.wait_for_stderr(
        "upstream prematurely closed connection while reading response header from upstream",
        WAIT
    ));
    be.set_mode(Mode::Reset);
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert!(rf.wait_for_stderr(
        "(104: Connection reset by peer) while reading response header from upstream",
        WAIT
    ));
}

#[test]
fn connect_timeout_gives_504() {
    let full = FullBacklogListener::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(
        p,
        &[full.addr().to_string()],
        "",
        "proxy_connect_timeout 500ms;",
    ));
    let r = http::get(("127.0.0.1", p), "/");
    assert_eq!(r.status, 504);
    assert!(rf.wait_for_stderr(
        "upstream timed out (110: Connection timed out) while connecting to upstream",
        WAIT
    ));
}

#[test]
fn next_upstream_moves_on_then_no_live_upstreams() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Refuse);
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&a), addr(&b)], "", ""));
    for _ in 0..4 {
        let r = http::get(("127.0.0.1", p), "/");
        assert_eq!((r.status, served_by(&r)), (200, b.port()));
    }
    assert!(rf.wait_for_stderr("upstream server temporarily disabled", WAIT));
    // Both down now: the first request tries b and fails; then nothing is selectable.
    b.set_mode(Mode::Refuse);
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert!(rf.wait_for_stderr("no live upstreams while connecting to upstream", WAIT));
}

#[test]
fn proxy_next_upstream_off_returns_the_failure() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Refuse);
    let p = port();
    let _rf = Ringfront::start(&proxy_config(
        p,
        &[
            format!("{} max_fails=0", addr(&a)),
            format!("{} max_fails=0", addr(&b)),
        ],
        "",
        "proxy_next_upstream off;",
    ));
    let statuses: Vec<u16> = (0..4)
        .map(|_| http::get(("127.0.0.1", p), "/").status)
        .collect();
    assert_eq!(statuses, [502, 200, 502, 200]);
}

#[test]
fn client_header_timeout_closes_a_slow_client() {
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "").replace(
        "server_name localhost;",
        "server_name localhost; client_header_timeout 1s;",
    );
    let _rf = Ringfront::start(&cfg);
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n");
    let t = Instant::now();
    assert!(c.peer_closed(Duration::from_secs(5)));
    assert!(t.elapsed() >= Duration::from_millis(800));
    assert_eq!(be.hits(), 0);
}

#[test]
fn keepalive_timeout_closes_an_idle_client() {
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "").replace(
        "server_name localhost;",
        "server_name localhost; keepalive_timeout 1s;",
    );
    let _rf = Ringfront::start(&cfg);
    let mut c = Client::connect(("127.0.0.1", p));
    assert_eq!(c.request("GET", "/", &[], b"").status, 200);
    assert!(c.peer_closed(Duration::from_secs(5)));
}

#[test]
fn stale_pooled_upstream_connection_is_replaced() {
    // A backend that answers with a reusable (keep-alive) response, then closes the
    // connection behind ringfront's back, as servers do when their idle timeout fires.
    use std::io::{Read, Write};
    let lst = ringfront_testkit::fresh_listener();
    let up = lst.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    // Each close is reported, so the next request starts only once the pooled connection is
    // closed (on a loaded machine the backend's thread could otherwise close it after
    // ringfront had reused it, and that reuse is a real failure, rightly logged).
    let (closed_tx, closed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in lst.incoming() {
            let Ok(mut s) = s else { return };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            if s.read(&mut buf).unwrap_or(0) > 0 {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            }
            drop(s); // closed while idle in ringfront's pool
            let _ = closed_tx.send(());
        }
    });
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[up.to_string()], "", ""));
    for _ in 0..5 {
        let r = http::get(("127.0.0.1", p), "/");
        assert_eq!((r.status, r.text().as_str()), (200, "ok"));
        closed
            .recv_timeout(Duration::from_secs(5))
            .expect("the backend closed its connection");
    }
    // Every request needed a fresh connection, and none was reported as a failure.
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 5);
    assert!(!rf.stderr_lines().iter().any(|l| l.contains("[error]")));
}

#[test]
fn client_header_timeout_bounds_the_whole_head() {
    // A slowloris client trickling one byte every 200 ms never completes its head within
    // the 1 s client_header_timeout, although no single read waits that long.
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "").replace(
        "server_name localhost;",
        "server_name localhost; client_header_timeout 1s;",
    );
    let _rf = Ringfront::start(&cfg);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", p)).unwrap();
    let t = Instant::now();
    use std::io::Write;
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    let mut closed = false;
    for _ in 0..25 {
        std::thread::sleep(Duration::from_millis(200)); // the client's pace, not a wait for ringfront
        if s.write_all(b"X").is_err() {
            closed = true;
            break;
        }
    }
    assert!(closed, "still open after {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(4));
    assert_eq!(be.hits(), 0);
}

#[test]
fn oversized_request_line_and_header_line() {
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "").replace(
        "server_name localhost;",
        "server_name localhost; large_client_header_buffers 4 1k;",
    );
    let _rf = Ringfront::start(&cfg);
    let long = "a".repeat(1500);
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(format!("GET /{long} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    assert_eq!(c.read_response().status, 414);
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {long}\r\n\r\n").as_bytes());
    let r = c.read_response();
    assert_eq!(r.status, 400);
    assert!(r.text().contains("Request Header Or Cookie Too Large"));
    let mut c = Client::connect(("127.0.0.1", p));
    let many: String = (0..6)
        .map(|i| format!("X-H{i}: {}\r\n", "b".repeat(900)))
        .collect();
    c.send_raw(format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n").as_bytes());
    assert_eq!(c.read_response().status, 400);
    assert_eq!(be.hits(), 0);
}

#[test]
fn unsolicited_101_is_an_invalid_header() {
    use std::io::{Read, Write};
    let lst = ringfront_testkit::fresh_listener();
    let up = lst.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = lst.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n");
            let _ = s.read(&mut buf);
        }
    });
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[up.to_string()], "", ""));
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 502);
    assert!(rf.wait_for_stderr("upstream sent unexpected 101 Switching Protocols", WAIT));
}
