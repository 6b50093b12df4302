//! The HTTP/1.1 proxy path over loopback: balancing order, keepalive and pipelining, bodies
//! both ways, 100-continue, HEAD/204/304, hop-by-hop removal, upgrade tunnels, strict framing.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{body_pattern, http, Backend, Client, Ringfront};

#[test]
fn smooth_weighted_round_robin_4_2_1() {
    let (a, b, c) = (Backend::start(), Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&proxy_config(
        p,
        &[
            format!("{} weight=4", addr(&a)),
            format!("{} weight=2", addr(&b)),
            format!("{} weight=1", addr(&c)),
        ],
        "",
        "",
    ));
    let seq: Vec<u16> = (0..14)
        .map(|_| served_by(&http::get(("127.0.0.1", p), "/")))
        .collect();
    let (a, b, c) = (a.port(), b.port(), c.port());
    assert_eq!(seq, [a, b, a, c, a, b, a, a, b, a, c, a, b, a]);
    drop(rf);
}

#[test]
fn keepalive_and_pipelined_requests_answered_in_order() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(
        b"GET /one?code=201 HTTP/1.1\r\nHost: x\r\n\r\nGET /two?code=202 HTTP/1.1\r\nHost: x\r\n\r\nGET /three HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    let statuses: Vec<u16> = (0..3).map(|_| c.read_response().status).collect();
    assert_eq!(statuses, [201, 202, 200]);
    // Same connection still usable.
    let r = c.request("GET", "/four", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("keep-alive"));
    let targets: Vec<String> = be.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        targets,
        ["/one?code=201", "/two?code=202", "/three", "/four"]
    );
}

#[test]
fn request_bodies_content_length_and_chunked() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let mut c = Client::connect(("127.0.0.1", p));
    let body = body_pattern(100_000);
    let r = c.request("POST", "/?echo=1", &[], &body);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, body);
    // A chunked request body reaches the backend whole, framed by Content-Length.
    c.send_raw(b"POST /?echo=1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello world");
    let last = be.requests().pop().unwrap();
    assert_eq!(last.header("content-length"), Some("11"));
    assert_eq!(last.header("transfer-encoding"), None);
}

#[test]
fn response_bodies_content_length_chunked_and_large() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let mut c = Client::connect(("127.0.0.1", p));
    let r = c.request("GET", "/?size=300000", &[], b"");
    assert_eq!(r.body, body_pattern(300_000));
    let r = c.request("GET", "/?size=70000&chunked=1", &[], b"");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.body, body_pattern(70_000));
    // The upstream request is HTTP/1.0 (nginx's default), so that body came delimited by
    // the backend's close: it went out as chunks of ours and the client connection stays
    // open, as nginx's chunked filter does.
    assert_eq!(be.requests().pop().unwrap().version, "HTTP/1.0");
    let r = c.request("GET", "/?size=10", &[], b"");
    assert_eq!((r.status, r.body.len()), (200, 10));
    // HTTP/1.0 client: chunked response de-chunked, connection closed after.
    let mut c10 = Client::connect(("127.0.0.1", p));
    c10.send_raw(b"GET /?size=5000&chunked=1 HTTP/1.0\r\n\r\n");
    let raw = c10.read_to_close();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(!text.to_ascii_lowercase().contains("transfer-encoding"));
    let body_at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(&raw[body_at..], &body_pattern(5000)[..]);
}

#[test]
fn expect_100_continue() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(
        b"POST /?echo=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
    );
    c.stream()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = [0u8; 25];
    c.stream().read_exact(&mut got).unwrap();
    assert_eq!(&got, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send_raw(b"ping");
    let r = c.read_response();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ping"[..]));
    assert_eq!(be.requests()[0].header("expect"), None);
}

#[test]
fn head_204_304_have_no_body() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let mut c = Client::connect(("127.0.0.1", p));
    let r = c.request("HEAD", "/?size=1000", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("1000"));
    assert!(r.body.is_empty());
    let r = c.request("GET", "/?code=204", &[], b"");
    assert_eq!((r.status, r.body.len()), (204, 0));
    let r = c.request("GET", "/?code=304", &[], b"");
    assert_eq!((r.status, r.body.len()), (304, 0));
    // The connection survived all three: a normal request still works on it.
    assert_eq!(c.request("GET", "/", &[], b"").status, 200);
}

#[test]
fn hop_by_hop_headers_are_not_forwarded() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(
        p,
        &[addr(&be)],
        "",
        "proxy_set_header X-Real-IP $remote_addr;",
    ));
    let mut c = Client::connect(("127.0.0.1", p));
    let r = c.request(
        "GET",
        "/",
        &[
            ("Connection", "keep-alive, X-Secret"),
            ("X-Secret", "1"),
            ("Keep-Alive", "timeout=5"),
            ("TE", "trailers"),
            ("Proxy-Connection", "keep-alive"),
            ("X-Kept", "yes"),
        ],
        b"",
    );
    assert_eq!(r.status, 200);
    let got = &be.requests()[0];
    for h in ["x-secret", "keep-alive", "te", "proxy-connection"] {
        assert_eq!(got.header(h), None, "{h} was forwarded");
    }
    assert_eq!(got.header("x-kept"), Some("yes"));
    assert_eq!(got.header("x-real-ip"), Some("127.0.0.1"));
    assert_eq!(got.header("host"), Some("backend"));
}

#[test]
fn websocket_upgrade_is_tunnelled_both_ways() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(
        p,
        &[addr(&be)],
        "",
        "proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";",
    ));
    let mut c = Client::connect(("127.0.0.1", p));
    let r = c.request(
        "GET",
        "/ws",
        &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
        b"",
    );
    assert_eq!(r.status, 101);
    assert_eq!(r.header("upgrade"), Some("websocket"));
    c.send_raw(b"frame-1");
    let mut buf = [0u8; 7];
    c.stream()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    c.stream().read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"frame-1");
}

/// Bytes the client sends right behind its upgrade request, in the same write, reach the
/// upstream through the tunnel (as nginx sends its preread bytes).
#[test]
fn bytes_pipelined_behind_an_upgrade_reach_the_tunnel() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(
        p,
        &[addr(&be)],
        "",
        "proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";",
    ));
    let mut s = std::net::TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nearly-frame",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(b"early-frame") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed; got {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 101 "),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

/// What the upstream sends right behind its 101, in the same write, reaches the client
/// first through the tunnel, and the tunnelled bytes count as body in the access log
/// (`$body_bytes_sent`, as nginx).
#[test]
fn bytes_behind_an_upstream_101_reach_the_client_and_are_logged() {
    let be = ringfront_testkit::RawBackend::start(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nhello-from-up",
        ringfront_testkit::After::Close,
    );
    let dir = ringfront_testkit::TempDir::new("rf-upgrade-log");
    let log = dir.path().join("a.log");
    let p = port();
    let conf = proxy_config(
        p,
        &[format!("127.0.0.1:{}", be.port())],
        "",
        &format!(
            "proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection \"upgrade\";
             access_log {} bytes;",
            log.display()
        ),
    )
    .replace(
        "http {",
        "http {\n    log_format bytes \"$status $body_bytes_sent\";",
    );
    let rf = Ringfront::start(&conf);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 101 ") && text.ends_with("\r\n\r\nhello-from-up"),
        "{text}"
    );
    // The tunnel ends (and the request is logged) when the client side closes too.
    drop(s);
    assert_eq!(common::log_lines(&log, 1), ["101 13"]);
    drop(rf);
}

#[test]
fn ambiguous_framing_is_rejected_and_never_forwarded() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    for raw in [
        &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    ] {
        let mut c = Client::connect(("127.0.0.1", p));
        c.send_raw(raw);
        let r = c.read_response();
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(raw));
        assert!(c.peer_closed(Duration::from_secs(5)));
    }
    assert_eq!(be.hits(), 0);
}

#[test]
fn client_max_body_size_answers_413_before_reading_the_body() {
    let be = Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(
        p,
        &[addr(&be)],
        "",
        "client_max_body_size 1k;",
    ));
    let mut c = Client::connect(("127.0.0.1", p));
    // With Expect: 100-continue, no 100 is sent: the answer is 413 straight away.
    c.send_raw(
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\nExpect: 100-continue\r\n\r\n",
    );
    let r = c.read_response();
    assert_eq!(r.status, 413);
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send_raw(format!("800\r\n{}\r\n", "z".repeat(0x800)).as_bytes());
    assert_eq!(c.read_response().status, 413);
    assert_eq!(be.hits(), 0);
    assert!(rf.wait_for_stderr(
        "client intended to send too large body: 2000 bytes",
        Duration::from_secs(5)
    ));
    // Within the limit it passes.
    let mut c = Client::connect(("127.0.0.1", p));
    assert_eq!(
        c.request("POST", "/?echo=1", &[], &[b'y'; 1000]).status,
        200
    );
}
