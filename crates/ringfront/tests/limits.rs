//! Resource limits: running out of file descriptors, clients that stop sending or reading.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{addr, port, proxy_config, REUSE};
use ringfront_testkit::{http, Backend, Client, Ringfront};

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after_comm.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the comm.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn out_of_file_descriptors_backs_off_and_recovers() {
    let be = Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let pid = rf.pid();
    let open_fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let limit = open_fds + 8;
    let status = Command::new("prlimit")
        .args([
            "--pid",
            &pid.to_string(),
            &format!("--nofile={limit}:{limit}"),
        ])
        .status()
        .expect("prlimit (util-linux)");
    assert!(status.success());
    // More idle clients than descriptors: the kernel completes their handshakes, ringfront
    // runs out of descriptors accepting them.
    let held: Vec<TcpStream> = (0..30)
        .map(|_| TcpStream::connect(("127.0.0.1", p)).unwrap())
        .collect();
    assert!(rf.wait_for_stderr(
        "accept() failed (24: Too many open files)",
        Duration::from_secs(10)
    ));
    // Starved, it must not spin: over two seconds it uses a small fraction of a core.
    let before = cpu_ticks(pid);
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(2)); // the observation window, not a synchronisation
    let used = cpu_ticks(pid) - before;
    assert!(used < 40, "{used} ticks in {:?}", t.elapsed());
    let errors = rf
        .stderr_lines()
        .iter()
        .filter(|l| l.contains("Too many open files"))
        .count();
    assert!(errors < 30, "{errors} accept errors logged in ~2 s");
    // Descriptors come back: ringfront serves again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match http::try_get(("127.0.0.1", p), "/") {
            Ok(r) if r.status == 200 => break,
            _ if Instant::now() < deadline => continue,
            other => panic!("no recovery: {:?}", other.map(|r| r.status)),
        }
    }
}

#[test]
fn client_body_timeout_closes_a_stalled_upload() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(
        p,
        &[addr(&be)],
        "",
        "client_body_timeout 1s;",
    ));
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly-part");
    let t = Instant::now();
    assert!(c.peer_closed(Duration::from_secs(5)));
    assert!(t.elapsed() >= Duration::from_millis(800));
    assert_eq!(be.hits(), 0);
}

#[test]
fn send_timeout_drops_a_client_that_stops_reading() {
    let be = Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", "send_timeout 1s;"));
    // Ask for far more than the socket buffers hold and never read it.
    let mut s = TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.write_all(b"GET /?size=50000000 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert!(be.wait_hits(1, Duration::from_secs(5)));
    // The worker serves others meanwhile...
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
    // ...and gives up on the stalled client after send_timeout.
    assert!(rf.wait_for_stderr(
        "client timed out (110: Connection timed out) while sending to client",
        Duration::from_secs(10)
    ));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0usize;
    loop {
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read: {e} after {total} bytes"),
        }
    }
    assert!(total < 50_000_000, "{total} bytes: the whole body was sent");
}

#[test]
fn full_worker_closes_the_oldest_idle_keepalive_connection() {
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "")
        .replace("worker_connections 256;", "worker_connections 3;");
    let rf = Ringfront::start(&cfg);
    let mut idle: Vec<Client> = (0..3)
        .map(|_| {
            let mut c = Client::connect(("127.0.0.1", p));
            assert_eq!(c.request("GET", "/", &[], b"").status, 200);
            c
        })
        .collect();
    // A fourth client is served: the oldest idle connection makes room...
    let mut c = Client::connect(("127.0.0.1", p));
    assert_eq!(c.request("GET", "/", &[], b"").status, 200);
    assert!(idle[0].peer_closed(Duration::from_secs(5)));
    // ...and the others are untouched.
    assert_eq!(idle[2].request("GET", "/", &[], b"").status, 200);
    assert!(!rf
        .stderr_lines()
        .iter()
        .any(|l| l.contains("worker_connections are not enough")));
}

#[test]
fn full_worker_with_only_busy_connections_refuses_without_spinning() {
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "")
        .replace("worker_connections 256;", "worker_connections 2;");
    let rf = Ringfront::start(&cfg);
    // Two requests in flight occupy the worker.
    let slow: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || http::get(("127.0.0.1", p), "/?sleep=1").status))
        .collect();
    assert!(be.wait_hits(2, Duration::from_secs(5)));
    let mut c = Client::connect(("127.0.0.1", p));
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(c.peer_closed(Duration::from_secs(5)));
    assert!(rf.wait_for_stderr(
        "2 worker_connections are not enough",
        Duration::from_secs(5)
    ));
    for h in slow {
        assert_eq!(h.join().unwrap(), 200);
    }
    // Room again afterwards: the held connections give their slots back when the worker
    // ends them, which their clients (done once the responses are read) do not wait for,
    // so a connection made at once may still meet a full worker; within 5 s one is served.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let served = loop {
        match http::try_get(("127.0.0.1", p), "/") {
            Ok(r) => break r.status,
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("no room after the held requests: {e}"),
        }
    };
    assert_eq!(served, 200);
}

#[test]
fn keepalive_requests_closes_after_the_nth_request() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", "keepalive_requests 3;"));
    let mut c = Client::connect(("127.0.0.1", p));
    for _ in 0..2 {
        let r = c.request("GET", "/", &[], b"");
        assert_eq!(r.header("connection"), Some("keep-alive"));
    }
    let r = c.request("GET", "/", &[], b"");
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    assert!(c.peer_closed(Duration::from_secs(5)));
}

#[test]
fn client_gone_mid_response_never_leaves_bytes_on_a_pooled_connection() {
    let be = Backend::start();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "keepalive 8;", REUSE));
    // Warm one pooled connection.
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
    assert_eq!(be.accepted(), 1);
    // A client that asks for a large body and leaves after the first bytes.
    {
        let mut s = TcpStream::connect(("127.0.0.1", p)).unwrap();
        s.write_all(b"GET /?size=20000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 1024];
        std::io::Read::read(&mut s, &mut first).unwrap();
    }
    // Later requests get whole, correct answers: the aborted response's upstream
    // connection was dropped, not pooled with bytes pending.
    for _ in 0..3 {
        let r = http::get(("127.0.0.1", p), "/?size=10");
        assert_eq!((r.status, r.body.len()), (200, 10));
    }
    assert_eq!(be.accepted(), 2);
}

#[test]
fn many_idle_keepalive_connections_wait_lean_and_still_serve() {
    // Past 64 open connections idle keepalive ones wait for readability holding no buffer
    // and no request state; they must still serve their next request (and reach end of
    // stream cleanly).
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "", "")
        .replace("worker_connections 256;", "worker_connections 1024;");
    let _rf = Ringfront::start(&cfg);
    let mut clients: Vec<Client> = (0..300)
        .map(|_| Client::connect(("127.0.0.1", p)))
        .collect();
    for c in clients.iter_mut() {
        assert_eq!(c.request("GET", "/", &[], b"").status, 200);
    }
    for c in clients.iter_mut() {
        let r = c.request("GET", "/?size=3", &[], b"");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"abc"[..]));
    }
    let mut last = clients.pop().unwrap();
    last.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(last.read_response().status, 200);
    assert!(last.peer_closed(Duration::from_secs(5)));
}
