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
    // The backend closes its side after each response (`close=1` keeps the pool honest):
    // ringfront must not hand the next request a dead pooled connection.
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    for _ in 0..5 {
        let r = http::get(("127.0.0.1", p), "/?close=1");
        assert_eq!(r.status, 200);
    }
    assert_eq!(be.hits(), 5);
}
