//! `worker_shutdown_timeout`: on a graceful stop (QUIT) ringfront exits once the timeout
//! passes even with a request still waiting for its upstream; on a reload, the connections
//! accepted before it are closed when the timeout passes (nginx's old workers close theirs),
//! while connections accepted after it are served on.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{addr, port, proxy_config};
use ringfront_testkit::{Backend, Client, Mode, Ringfront, SIGHUP, SIGQUIT};

const WAIT: Duration = Duration::from_secs(10);

fn with_timeout(conf: String, timeout: &str) -> String {
    format!("worker_shutdown_timeout {timeout};\n{conf}")
}

/// Whether the peer closes `s` within `limit` (EOF or reset before any byte).
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).expect("read timeout");
    let mut byte = [0u8; 1];
    matches!(s.read(&mut byte), Ok(0))
        || matches!(s.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

#[test]
fn quit_closes_a_request_still_waiting_when_the_timeout_passes() {
    let be = Backend::start();
    be.set_mode(Mode::Hang);
    let p = port();
    let rf = Ringfront::start(&with_timeout(
        proxy_config(p, &[addr(&be)], "", ""),
        "200ms",
    ));
    let mut s = TcpStream::connect(("127.0.0.1", p)).expect("connect");
    std::io::Write::write_all(&mut s, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    assert!(be.wait_hits(1, WAIT), "the request reached the backend");
    let quit = Instant::now();
    rf.signal(SIGQUIT);
    let status = rf
        .wait_exit(WAIT)
        .expect("ringfront exits after the timeout");
    assert!(status.success());
    assert!(
        quit.elapsed() >= Duration::from_millis(200),
        "not before the timeout"
    );
    assert!(
        closed_within(&mut s, WAIT),
        "the client connection is closed"
    );
}

#[test]
fn a_reload_closes_the_connections_accepted_before_it_after_the_timeout() {
    let be = Backend::start();
    let p = port();
    let conf = with_timeout(proxy_config(p, &[addr(&be)], "", ""), "50ms");
    let rf = Ringfront::start(&conf);
    // Open, and not a byte sent yet (nginx's worker_shutdown_timeout.t).
    let mut before = TcpStream::connect(("127.0.0.1", p)).expect("connect");
    let mut kept = Client::connect(("127.0.0.1", p));
    assert_eq!(kept.request("GET", "/", &[], b"").status, 200);
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured", WAIT));
    let mut after = Client::connect(("127.0.0.1", p));
    assert_eq!(after.request("GET", "/", &[], b"").status, 200);
    assert!(
        closed_within(&mut before, WAIT),
        "accepted before the reload"
    );
    // An idle keepalive connection accepted before the reload goes too; the deadline has
    // passed and the one accepted after it still serves.
    assert!(
        kept.peer_closed(WAIT),
        "keepalive connection accepted before the reload"
    );
    assert_eq!(after.request("GET", "/", &[], b"").status, 200);
}

/// Without `worker_shutdown_timeout`, a reload leaves open connections alone.
#[test]
fn without_the_timeout_a_reload_keeps_connections() {
    let be = Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let mut kept = Client::connect(("127.0.0.1", p));
    assert_eq!(kept.request("GET", "/", &[], b"").status, 200);
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured", WAIT));
    assert_eq!(kept.request("GET", "/", &[], b"").status, 200);
}
