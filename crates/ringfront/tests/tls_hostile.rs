//! Hostile bytes on a TLS port: garbage and truncated records, a handshake that stalls
//! (closed at client_header_timeout), an oversized ClientHello, and thousands of half-open
//! handshakes while a real client is still served. Nothing crashes, nothing hangs.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Ringfront, TempDir};

struct Edge {
    _dir: TempDir,
    ca: std::path::PathBuf,
    port: u16,
    rf: Ringfront,
}

fn edge(header_timeout: &str, conns: usize) -> Edge {
    let dir = TempDir::new("rf-tls-hostile");
    let pki = Pki::new(dir.path(), "h");
    let cert = pki.server("srv", Key::EcdsaP256, &["h.test"]);
    let port = common::port();
    let rf = Ringfront::start(&fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections {CONNS}; }
http {
    client_header_timeout {TIMEOUT};
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"fine\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("TIMEOUT", header_timeout.to_string()),
            ("CONNS", conns.to_string()),
            ("CERT", cert.cert.display().to_string()),
            ("KEY", cert.key.display().to_string()),
        ],
    ));
    Edge {
        ca: pki.ca.cert.clone(),
        _dir: dir,
        port,
        rf,
    }
}

/// A real client's request through the edge still works.
fn served(e: &Edge) -> bool {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(&e.ca)
        .arg("--resolve")
        .arg(format!("h.test:{}:127.0.0.1", e.port))
        .arg(format!("https://h.test:{}/", e.port))
        .output()
        .unwrap();
    out.stdout == b"fine"
}

/// Sends `bytes` and returns how the server ended the connection: the bytes it sent
/// before closing, and how long that took.
fn send_and_wait(port: u16, bytes: &[u8], shut: bool) -> (Vec<u8>, Duration) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let t = Instant::now();
    let _ = s.write_all(bytes);
    if shut {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut got = Vec::new();
    let r = s.read_to_end(&mut got);
    assert!(
        r.is_ok() || !got.is_empty() || t.elapsed() < Duration::from_secs(15),
        "no hang"
    );
    (got, t.elapsed())
}

/// The first bytes of a TLS 1.2 ClientHello record header claiming `len` bytes.
fn record(len: u16) -> Vec<u8> {
    let mut v = vec![0x16, 0x03, 0x01];
    v.extend_from_slice(&len.to_be_bytes());
    v
}

#[test]
fn garbage_truncated_and_oversized_records_are_refused_and_the_edge_serves_on() {
    let e = edge("5s", 256);
    // Garbage after a handshake record type: an alert (or a close), never a hang.
    let mut junk = record(64);
    junk.extend(std::iter::repeat_n(0xAB, 64));
    let (got, took) = send_and_wait(e.port, &junk, false);
    assert!(
        took < Duration::from_secs(5),
        "answered at once, not at the timeout"
    );
    assert!(
        got.is_empty() || got[0] == 0x15,
        "an alert record or nothing: {got:?}"
    );
    // A truncated record, then the client's FIN.
    let (_, took) = send_and_wait(e.port, &record(300)[..5], true);
    assert!(took < Duration::from_secs(5));
    // A record header announcing more than TLS allows.
    let mut big = record(0xFFFF);
    big.extend(std::iter::repeat_n(0x01, 0xFFFF));
    let (got, _) = send_and_wait(e.port, &big, false);
    assert!(
        got.is_empty() || got[0] == 0x15,
        "{:?}",
        &got[..got.len().min(8)]
    );
    assert!(served(&e));
    assert!(e.rf.exited().is_none());
}

#[test]
fn a_stalled_handshake_is_closed_at_client_header_timeout() {
    let e = edge("1s", 256);
    let (got, took) = send_and_wait(e.port, &record(200)[..5], false);
    assert!(got.is_empty(), "{got:?}");
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(e
        .rf
        .wait_for_stderr("while SSL handshaking", Duration::from_secs(5)));
    assert!(served(&e));
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn ten_thousand_half_open_handshakes_stay_bounded_and_others_are_served() {
    const N: usize = 10_000;
    let e = edge("60s", N + 100);
    assert!(served(&e));
    let before = rss_kib(e.rf.pid());
    let mut held = Vec::with_capacity(N);
    let mut partial = record(512);
    partial.extend([0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]);
    for i in 0..N {
        let mut s = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
        // Half of them say nothing at all, half send the start of a ClientHello.
        if i % 2 == 0 {
            s.write_all(&partial).unwrap();
        }
        held.push(s);
    }
    assert!(
        served(&e),
        "a real client is served beside {N} half-open handshakes"
    );
    let grown = rss_kib(e.rf.pid()).saturating_sub(before);
    // Silent connections hold only their socket; partial hellos a small read buffer.
    assert!(
        grown < 120 * 1024,
        "RSS grew by {grown} KiB for {N} half-open handshakes"
    );
    drop(held);
    assert!(served(&e));
    assert!(e.rf.exited().is_none());
}
