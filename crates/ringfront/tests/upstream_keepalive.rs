//! The upstream keepalive cache through the binary, against a backend that numbers its
//! connections and records which ones the proxy closed: `keepalive N` keeps the N most
//! recently used and closes the least recently used; a backend closing idle connections
//! costs no failed request and no error line; `keepalive_timeout` and a reload close idle
//! connections without a request meeting them.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{port, proxy_config, REUSE};
use ringfront_testkit::{http, Ringfront, SIGHUP};

#[derive(Default)]
struct Seen {
    accepted: usize,
    /// Connections the proxy closed (EOF while waiting for a request).
    closed: BTreeSet<usize>,
    /// Each request's line and its `Connection` field (`-` for none), in arrival order.
    heads: Vec<String>,
}

/// Answers `GET /?sleep=MS` with `X-Conn: <connection number>` after MS milliseconds, over
/// keepalive; `idle_close` closes a connection idle that long (a backend's own timeout).
struct CountingBackend {
    port: u16,
    seen: Arc<Mutex<Seen>>,
}

impl CountingBackend {
    fn start(idle_close: Option<Duration>) -> CountingBackend {
        let l = ringfront_testkit::fresh_listener();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        thread::spawn(move || {
            for (n, conn) in l.incoming().enumerate() {
                let Ok(conn) = conn else { return };
                s.lock().unwrap().accepted += 1;
                let s = s.clone();
                thread::spawn(move || serve(conn, n + 1, idle_close, &s));
            }
        });
        CountingBackend { port, seen }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn accepted(&self) -> usize {
        self.seen.lock().unwrap().accepted
    }

    fn closed(&self) -> BTreeSet<usize> {
        self.seen.lock().unwrap().closed.clone()
    }

    fn heads(&self) -> Vec<String> {
        self.seen.lock().unwrap().heads.clone()
    }

    /// Waits up to 3 s for the proxy to have closed `want` connections.
    fn wait_closed(&self, want: usize) -> BTreeSet<usize> {
        let end = Instant::now() + Duration::from_secs(3);
        while self.closed().len() < want && Instant::now() < end {
            thread::sleep(Duration::from_millis(10));
        }
        self.closed()
    }
}

fn serve(conn: TcpStream, n: usize, idle_close: Option<Duration>, seen: &Mutex<Seen>) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        r.get_ref().set_read_timeout(idle_close).unwrap();
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) => {
                seen.lock().unwrap().closed.insert(n);
                return;
            }
            Ok(_) => {}
            Err(_) => return, // our own idle timeout: just close
        }
        r.get_ref().set_read_timeout(None).unwrap();
        let sleep = line
            .split_once("sleep=")
            .and_then(|(_, v)| v.split(' ').next()?.parse().ok())
            .unwrap_or(0);
        let mut connection = "-".to_string();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
            if let Some((name, value)) = h.split_once(':') {
                if name.eq_ignore_ascii_case("connection") {
                    connection = value.trim().to_string();
                }
            }
        }
        let head = format!("{} | {connection}", line.trim_end());
        seen.lock().unwrap().heads.push(head);
        thread::sleep(Duration::from_millis(sleep));
        let answer = format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 2\r\n\r\nok");
        if w.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn conn_of(r: &ringfront_testkit::Response) -> usize {
    r.header("x-conn").and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn errors(rf: &Ringfront) -> Vec<String> {
    rf.stderr_lines()
        .into_iter()
        .filter(|l| l.contains("[error]") || l.contains("[warn]") || l.contains("[crit]"))
        .collect()
}

#[test]
fn a_full_cache_closes_the_least_recently_used_connection() {
    let b = CountingBackend::start(None);
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[b.addr()], "keepalive 2;", REUSE));
    // Three at once need three connections; they finish (and are pooled) in sleep order.
    let clients: Vec<_> = [100, 400, 700]
        .into_iter()
        .map(|ms| thread::spawn(move || http::get(("127.0.0.1", p), &format!("/?sleep={ms}"))))
        .collect();
    let conns: Vec<usize> = clients
        .into_iter()
        .map(|c| conn_of(&c.join().unwrap()))
        .collect();
    assert_eq!(b.accepted(), 3);
    let closed = b.wait_closed(1);
    assert_eq!(
        closed,
        BTreeSet::from([conns[0]]),
        "the first one pooled goes"
    );
    // The other two are reused, the most recently used first.
    for _ in 0..3 {
        assert_eq!(conn_of(&http::get(("127.0.0.1", p), "/")), conns[2]);
    }
    assert_eq!(b.accepted(), 3);
    assert_eq!(b.closed().len(), 1);
    assert!(errors(&rf).is_empty(), "{:?}", errors(&rf));
}

#[test]
fn a_backend_closing_idle_connections_costs_no_failed_request_and_no_error_line() {
    let b = CountingBackend::start(Some(Duration::from_millis(50)));
    let p = port();
    let rf = Ringfront::start(&proxy_config(p, &[b.addr()], "keepalive 8;", REUSE));
    for i in 1..=5 {
        assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
        assert_eq!(b.accepted(), i);
        thread::sleep(Duration::from_millis(250));
    }
    assert!(errors(&rf).is_empty(), "{:?}", errors(&rf));
}

#[test]
fn keepalive_timeout_closes_idle_connections_without_a_request() {
    let b = CountingBackend::start(None);
    let p = port();
    let up = "keepalive 4; keepalive_timeout 300ms;";
    let _rf = Ringfront::start(&proxy_config(p, &[b.addr()], up, REUSE));
    let started = Instant::now();
    let c = conn_of(&http::get(("127.0.0.1", p), "/"));
    assert_eq!(b.wait_closed(1), BTreeSet::from([c]));
    let idle = started.elapsed();
    assert!(idle >= Duration::from_millis(300), "{idle:?}");
}

#[test]
fn a_reload_closes_the_idle_connections_of_removed_peers() {
    let (gone, kept) = (CountingBackend::start(None), CountingBackend::start(None));
    let p = port();
    let cfg = proxy_config(p, &[gone.addr(), kept.addr()], "keepalive 8;", REUSE);
    let rf = Ringfront::start(&cfg);
    for _ in 0..2 {
        assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
    }
    assert_eq!((gone.accepted(), kept.accepted()), (1, 1));
    rf.write_config(&proxy_config(p, &[kept.addr()], "keepalive 8;", REUSE));
    rf.signal(SIGHUP);
    let line = "reconfigured (generation 2)";
    assert!(rf.wait_for_stderr(line, Duration::from_secs(10)));
    assert_eq!(
        gone.wait_closed(1).len(),
        1,
        "closed without a request meeting it"
    );
    assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
    assert_eq!(
        kept.accepted(),
        1,
        "the surviving peer's connection is kept"
    );
    assert!(kept.closed().is_empty());
}

/// A peer the health checker marks down loses its idle pooled connections at once: the
/// checker rings every worker and their sweeps close them (no request has to meet them, no
/// periodic tick is waited for).
#[test]
fn a_peer_marked_down_loses_its_idle_connections() {
    let b = CountingBackend::start(None);
    let health = ringfront_testkit::Backend::start();
    let p = port();
    let rf = Ringfront::start(&proxy_config(
        p,
        &[b.addr()],
        "keepalive 4; keepalive_timeout 60s;",
        &format!(
            "health_check interval=100ms fails=1 passes=1 uri=/health port={}; {REUSE}",
            health.port()
        ),
    ));
    let first = conn_of(&http::get(("127.0.0.1", p), "/"));
    assert_eq!(conn_of(&http::get(("127.0.0.1", p), "/")), first, "pooled");
    assert!(b.closed().is_empty());
    health.set_route("/health", ringfront_testkit::Canned::status(503, "down"));
    let end = Instant::now() + Duration::from_secs(3);
    while !rf.stderr_lines().iter().any(|l| l.contains("marked down")) {
        assert!(Instant::now() < end, "never marked down");
        thread::sleep(Duration::from_millis(10));
    }
    let marked = Instant::now();
    assert_eq!(b.wait_closed(1), BTreeSet::from([first]));
    // Promptly after the mark (the worker's next timer of any kind is a second away):
    // the close came from the checker's ring.
    assert!(
        marked.elapsed() < Duration::from_millis(500),
        "closed {:?} after the mark",
        marked.elapsed()
    );
}

/// A request in flight across a reload pools its upstream connection when it ends (into the
/// new configuration's pool, the peer having survived), so the next request reuses it; it
/// used to go into a throwaway peer state and be closed.
#[test]
fn a_connection_in_flight_across_a_reload_is_kept() {
    let b = CountingBackend::start(None);
    let p = port();
    let cfg = proxy_config(p, &[b.addr()], "keepalive 4;", REUSE);
    let rf = Ringfront::start(&cfg);
    let slow = thread::spawn(move || http::get(("127.0.0.1", p), "/?sleep=800"));
    let end = Instant::now() + Duration::from_secs(3);
    while b.accepted() < 1 {
        assert!(
            Instant::now() < end,
            "the slow request never reached the backend"
        );
        thread::sleep(Duration::from_millis(5));
    }
    rf.write_config(&format!("{cfg}\n# reloaded\n"));
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured (generation 2)", Duration::from_secs(10)));
    let first = conn_of(&slow.join().unwrap());
    assert_eq!(first, 1);
    assert_eq!(conn_of(&http::get(("127.0.0.1", p), "/")), first, "reused");
    assert_eq!(b.accepted(), 1);
    assert!(b.closed().is_empty());
}

/// Upstream connections are reused as nginx reuses them (decision 0018): a group without
/// `keepalive` keeps none, even from a backend that keeps them open; with `keepalive N` but
/// not the location's recipe each request goes as HTTP/1.0 with `Connection: close`; with
/// the recipe as HTTP/1.1 without it, all over one connection.
#[test]
fn reuse_needs_keepalive_and_nginx_recipe() {
    let get = |p: u16| assert_eq!(http::get(("127.0.0.1", p), "/").status, 200);
    let (b, p) = (CountingBackend::start(None), port());
    let _rf = Ringfront::start(&proxy_config(p, &[b.addr()], "", ""));
    (0..3).for_each(|_| get(p));
    assert_eq!(b.accepted(), 3, "a connection per request");
    assert_eq!(b.wait_closed(3).len(), 3, "each closed after its response");
    assert_eq!(b.heads(), vec!["GET / HTTP/1.0 | close"; 3]);

    let (b, p) = (CountingBackend::start(None), port());
    let _rf = Ringfront::start(&proxy_config(p, &[b.addr()], "keepalive 4;", ""));
    get(p);
    assert_eq!(b.heads(), vec!["GET / HTTP/1.0 | close"]);

    let (b, p) = (CountingBackend::start(None), port());
    let _rf = Ringfront::start(&proxy_config(p, &[b.addr()], "keepalive 4;", REUSE));
    (0..3).for_each(|_| get(p));
    assert_eq!(b.accepted(), 1, "one connection, reused");
    assert_eq!(b.heads(), vec!["GET / HTTP/1.1 | -"; 3]);
}
