//! The process: `-t` messages, reload (HUP) under load, a rejected reload, a reload that
//! moves the listen address (served when reported), graceful QUIT with
//! a request in flight, fast TERM.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{http, Backend, Ringfront, SIGHUP, SIGQUIT, SIGTERM};

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn config_test_reports_success_like_nginx() {
    let (status, out) =
        Ringfront::run_check(&proxy_config(port(), &["127.0.0.1:9".into()], "", ""));
    assert!(status.success(), "{out}");
    assert!(out.contains("syntax is ok"), "{out}");
    assert!(out.contains("test is successful"), "{out}");
}

#[test]
fn config_error_names_file_and_line_and_fails() {
    let cfg = "events {}\nhttp {\n    server {\n        listen 127.0.0.1:1;\n        foo bar;\n    }\n}\n";
    let (status, out) = Ringfront::run_check(cfg);
    assert!(!status.success());
    assert!(out.contains("unknown directive \"foo\" in "), "{out}");
    assert!(out.contains("ringfront.conf:5"), "{out}");
    assert!(out.contains("test failed"), "{out}");
    let (status, out) = Ringfront::run_check(
        "events {}\nhttp {\n upstream u { server 127.0.0.1:1 weight=x; }\n}\n",
    );
    assert!(!status.success());
    assert!(out.contains("ringfront.conf:3"), "{out}");
}

#[test]
fn reload_swaps_config_and_bad_reload_keeps_the_old_one() {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&a)], "", ""));
    assert_eq!(served_by(&http::get(("127.0.0.1", p), "/")), a.port());
    rf.write_config(&proxy_config(p, &[addr(&b)], "", ""));
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured", WAIT));
    assert_eq!(served_by(&http::get(("127.0.0.1", p), "/")), b.port());
    rf.write_config("events {}\nhttp { bogus; }\n");
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("keeping the running configuration", WAIT));
    assert_eq!(served_by(&http::get(("127.0.0.1", p), "/")), b.port());
}

#[test]
fn reload_under_load_loses_no_request() {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start_with_args(&proxy_config(p, &[addr(&a)], "", ""), &["--workers", "2"]);
    let wrk = std::thread::spawn(move || {
        Command::new("wrk")
            .args(["-t1", "-c8", "-d3s", &format!("http://127.0.0.1:{p}/")])
            .output()
            .expect("wrk is installed (apt-get install wrk)")
    });
    // Reload several times while wrk runs; after each, wait until the new target has
    // taken real traffic before reloading again.
    assert!(a.wait_hits(50, WAIT));
    for i in 0..4 {
        let target = if i % 2 == 0 { &b } else { &a };
        let before = target.hits();
        rf.write_config(&proxy_config(p, &[addr(target)], "", ""));
        rf.signal(SIGHUP);
        assert!(rf.wait_for_stderr(&format!("reconfigured (generation {})", i + 2), WAIT));
        assert!(target.wait_hits(before + 50, WAIT));
    }
    let out = wrk.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Socket errors"), "{text}");
    assert!(!text.contains("Non-2xx"), "{text}");
    let total: usize = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(total > 100, "{text}");
    assert!(a.hits() > 0 && b.hits() > 0);
}

#[test]
fn graceful_quit_finishes_the_request_in_flight() {
    let be = Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    let slow = std::thread::spawn(move || http::get(("127.0.0.1", p), "/?sleep=1"));
    assert!(be.wait_hits(1, WAIT));
    rf.signal(SIGQUIT);
    let r = slow.join().unwrap();
    assert_eq!(r.status, 200);
    let status = rf.wait_exit(WAIT).expect("ringfront exits after QUIT");
    assert!(status.success());
    // New connections are refused once it is gone.
    assert!(http::try_get(("127.0.0.1", p), "/").is_err());
}

/// The reload is reported only once every worker serves it: the new address answers the
/// first try, with no retry (workers are woken by the reload, not by a periodic tick).
#[test]
fn reload_reports_only_when_a_new_listen_address_serves() {
    let be = Backend::start();
    let p1 = port();
    let rf =
        Ringfront::start_with_args(&proxy_config(p1, &[addr(&be)], "", ""), &["--workers", "2"]);
    // Each reload a fresh address: a port given up a moment ago may meanwhile be some other
    // test's ephemeral source port, which no listener can bind again.
    for (i, p) in [port(), port(), port()].into_iter().enumerate() {
        rf.write_config(&proxy_config(p, &[addr(&be)], "", ""));
        rf.signal(SIGHUP);
        assert!(rf.wait_for_stderr(&format!("reconfigured (generation {})", i + 2), WAIT));
        // Several connections, so that both workers' listeners are exercised.
        for _ in 0..8 {
            assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
        }
    }
}

/// A listen address a reload drops is closed on every worker: each of a worker's posted
/// accepts on it ends, and new connections there are refused. The open keep-alive clients
/// make both workers busy (past 64 connections each), so that with io_uring each has its
/// extra accepts posted too (accept.rs).
#[test]
fn a_listen_address_a_reload_drops_is_closed_on_every_worker() {
    let be = Backend::start();
    let (old, new) = (port(), port());
    let rf = Ringfront::start_with_args(
        &proxy_config(old, &[addr(&be)], "", ""),
        &["--workers", "2"],
    );
    let _busy: Vec<http::Client> = (0..300)
        .map(|_| {
            let mut c = http::Client::connect(("127.0.0.1", old));
            assert_eq!(c.request("GET", "/", &[], b"").status, 200);
            c
        })
        .collect();
    rf.write_config(&proxy_config(new, &[addr(&be)], "", ""));
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured (generation 2)", WAIT));
    assert_eq!(http::get(("127.0.0.1", new), "/").status, 200);
    // The cancelled accepts end in the workers' next turns: no signal marks the close.
    let (deadline, at) = (Instant::now() + WAIT, ([127, 0, 0, 1], old).into());
    loop {
        match std::net::TcpStream::connect_timeout(&at, Duration::from_secs(1)) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            r => assert!(
                Instant::now() < deadline,
                "127.0.0.1:{old} still listens: {r:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// QUIT with a slow request in flight: the process ends as soon as that request does (the
/// last request ending wakes the draining worker; the checker is woken by the quit).
#[test]
fn graceful_quit_exits_promptly_when_the_last_request_ends() {
    let be = Backend::start();
    let p = port();
    let cfg = proxy_config(p, &[addr(&be)], "passive_health confirm;", "");
    let rf = Ringfront::start_with_args(&cfg, &["--workers", "2"]);
    let slow = std::thread::spawn(move || {
        let r = http::get(("127.0.0.1", p), "/?sleep=1");
        (r, Instant::now())
    });
    assert!(be.wait_hits(1, WAIT));
    rf.signal(SIGQUIT);
    let (r, answered) = slow.join().unwrap();
    assert_eq!(r.status, 200);
    let status = rf.wait_exit(WAIT).expect("ringfront exits after QUIT");
    let after = answered.elapsed();
    assert!(status.success());
    // Generous for a loaded machine; a polling drain or checker would show up as its period.
    assert!(
        after < Duration::from_millis(500),
        "exited {after:?} after the last request ended"
    );
}

#[test]
fn term_stops_at_once() {
    let be = Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[addr(&be)], "", ""));
    rf.signal(SIGTERM);
    assert!(rf.wait_exit(WAIT).is_some());
}

#[test]
fn signal_flag_reaches_the_instance_named_by_the_pid_file() {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let with_pid = |be: &Backend| {
        format!(
            "pid ringfront.pid;\n{}",
            proxy_config(p, &[addr(be)], "", "")
        )
    };
    let rf = Ringfront::start(&with_pid(&a));
    assert_eq!(served_by(&http::get(("127.0.0.1", p), "/")), a.port());
    rf.write_config(&with_pid(&b));
    let run = |sig: &str| {
        let out = Command::new(ringfront_testkit::ringfront_binary())
            .args(["-s", sig, "-c"])
            .arg(rf.config_path())
            .current_dir(rf.dir())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("reload");
    assert!(rf.wait_for_stderr("reconfigured", WAIT));
    assert_eq!(served_by(&http::get(("127.0.0.1", p), "/")), b.port());
    run("quit");
    assert!(rf.wait_exit(WAIT).expect("exits on -s quit").success());
}

#[test]
fn ready_line_names_the_event_loop_in_use() {
    let be = Backend::start();
    let rf = Ringfront::start(&proxy_config(port(), &[addr(&be)], "", ""));
    let ready = rf
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains("ready"))
        .unwrap();
    match std::env::var("RINGFRONT_DRIVER").as_deref() {
        Ok("epoll") => assert!(ready.contains("epoll event loop"), "{ready}"),
        Ok("io_uring") => assert!(ready.contains("io_uring event loop"), "{ready}"),
        _ => assert!(ready.contains("event loop"), "{ready}"),
    }
}

/// CPUs a worker thread may run on, from /proc (`Cpus_allowed_list`), by thread name.
fn worker_cpus(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let comm = comm.trim().to_string();
        if !comm.starts_with("ringfront-w") {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("")
            .trim()
            .to_string();
        out.push((comm, cpus));
    }
    out.sort();
    out
}

#[test]
fn workers_are_pinned_by_flag_and_by_config() {
    let be = Backend::start();
    let rf = Ringfront::start_with_args(
        &proxy_config(port(), &[addr(&be)], "", ""),
        &["--workers", "2", "--cpu-affinity", "1,0"],
    );
    assert_eq!(
        worker_cpus(rf.pid()),
        [
            ("ringfront-w0".into(), "1".into()),
            ("ringfront-w1".into(), "0".into())
        ]
    );
    let cfg = proxy_config(port(), &[addr(&be)], "", "").replace(
        "worker_processes 1;",
        "worker_processes 2;\nworker_cpu_affinity 01 10;",
    );
    let rf = Ringfront::start(&cfg);
    assert_eq!(
        worker_cpus(rf.pid()),
        [
            ("ringfront-w0".into(), "0".into()),
            ("ringfront-w1".into(), "1".into())
        ]
    );
}

/// `listen ... rcvbuf= sndbuf= so_keepalive=`: the accepted connections carry the options
/// (read back from the kernel with `ss`).
#[test]
fn listen_socket_options_reach_accepted_connections() {
    let p = common::port();
    let cfg = common::fill(
        "worker_processes 1;
events {}
http {
    server {
        listen 127.0.0.1:{PORT} rcvbuf=96k sndbuf=200k so_keepalive=77s:5s:4;
        location / { return 200 \"ok\"; }
    }
}
",
        &[("PORT", p.to_string())],
    );
    let _rf = ringfront_testkit::Ringfront::start(&cfg);
    let mut c = std::net::TcpStream::connect(("127.0.0.1", p)).unwrap();
    std::io::Write::write_all(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let mut buf = [0u8; 256];
    let n = std::io::Read::read(&mut c, &mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // The server side of this connection: source port = the listen port.
    let out = std::process::Command::new("ss")
        .args([
            "-tnmoH",
            "state",
            "established",
            &format!("( sport = :{p} )"),
        ])
        .output()
        .expect("ss");
    let text = String::from_utf8_lossy(&out.stdout);
    // The kernel doubles a set buffer size (socket(7)); keepalive's first probe is due in
    // at most 77 s.
    assert!(text.contains(&format!("rb{}", 96 * 1024 * 2)), "{text}");
    assert!(text.contains(&format!("tb{}", 200 * 1024 * 2)), "{text}");
    assert!(
        text.contains("timer:(keepalive,1min") || text.contains("timer:(keepalive,7"),
        "{text}"
    );
}
