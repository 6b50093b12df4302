//! Differential: `proxy_request_buffering off` streams the request body. Backends record
//! every read as it happens (a channel of events), and the client sends the rest of a
//! body only once the backend has recorded the head and the first part: with buffering
//! on that would deadlock, so each case proves the upstream was contacted before the body
//! was complete. Cases: a sized body and a chunked one arrive intact (chunked is sent on
//! chunked to the HTTP/1.1 upstream); a first peer that refuses the connection (nothing
//! of the body sent) is retried on the next; a peer that closes after the first body
//! bytes is not (502, the next peer never contacted); a client that closes mid-body and
//! one that stops sending (`client_body_timeout`) end the request as nginx does (same
//! access-log lines, the upstream connection closed). nginx 1.22 and ringfront run the
//! same configuration against the same backends.

mod common;

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread;
use std::time::Duration;

use common::body::{counting_sink, peak_kib};
use common::{fill, log_lines, port};
use ringfront_testkit::{Client, Nginx, Ringfront, TempDir};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    log_format t '$request_uri $status $upstream_addr $upstream_status';
    access_log {LOG} t;
    proxy_request_buffering off;
    add_header X-Body \"[$request_body]\";
    upstream retry { server 127.0.0.1:{DEAD}; server 127.0.0.1:{UP}; }
    upstream drop { server 127.0.0.1:{DROP}; server 127.0.0.1:{UP2}; }
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        location / { proxy_http_version 1.1; proxy_pass http://127.0.0.1:{UP}; }
        location /retry { proxy_http_version 1.1; proxy_pass http://retry; }
        location /drop { proxy_http_version 1.1; proxy_pass http://drop; }
        location /dead { proxy_http_version 1.1; proxy_pass http://127.0.0.1:{DEAD}; }
        location /slow {
            proxy_http_version 1.1;
            client_body_timeout 300ms;
            proxy_pass http://127.0.0.1:{UP};
        }
        # nginx's default HTTP/1.0 to the upstream: a chunked body is buffered.
        location /http10 { proxy_pass http://127.0.0.1:{UP}; }
    }
}
";

/// What a backend saw, in order.
#[derive(Debug)]
enum Ev {
    /// A new connection.
    Open,
    /// The bytes of one read.
    Bytes(Vec<u8>),
    /// The connection ended (closed by either side).
    Closed,
}

/// A backend that reports every read; `drop_after_body`: it closes as soon as it has
/// some body bytes, answering nothing; otherwise it answers the whole body, decoded, once
/// it is complete.
struct Recorder {
    port: u16,
    rx: Receiver<Ev>,
    got: RefCell<Vec<u8>>,
    closed: Cell<bool>,
}

impl Recorder {
    fn start(drop_after_body: bool) -> Recorder {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (tx, rx) = channel();
        thread::spawn(move || {
            for s in l.incoming().flatten() {
                let tx = tx.clone();
                thread::spawn(move || serve(s, tx, drop_after_body));
            }
        });
        Recorder {
            port,
            rx,
            got: RefCell::new(Vec::new()),
            closed: Cell::new(false),
        }
    }

    /// Everything this case received, once `done` says it suffices (10 s at most for each
    /// event); the case's bytes accumulate until [`Recorder::reset`].
    fn until(&self, done: impl Fn(&[u8], bool) -> bool) -> Vec<u8> {
        let mut got = self.got.borrow_mut();
        while !done(&got, self.closed.get()) {
            match self.rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Ev::Bytes(b)) => got.extend_from_slice(&b),
                Ok(Ev::Closed) => self.closed.set(true),
                Ok(Ev::Open) => {}
                Err(_) => panic!(
                    "backend waited in vain; got {:?}",
                    String::from_utf8_lossy(&got)
                ),
            }
        }
        got.clone()
    }

    /// A new case starts.
    fn reset(&self) {
        self.got.borrow_mut().clear();
        self.closed.set(false);
    }

    /// Whether anything at all reached it (events so far, without waiting).
    fn contacted(&self) -> bool {
        let mut any = false;
        while self.rx.try_recv().is_ok() {
            any = true;
        }
        any
    }
}

/// The head and what follows it, once a whole head is in.
fn split(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = b.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((&b[..at + 4], &b[at + 4..]))
}

/// Received: the head and at least `needle` in the body.
fn holds(b: &[u8], needle: &[u8]) -> bool {
    split(b).is_some_and(|(_, body)| body.windows(needle.len()).any(|w| w == needle))
}

/// A chunked body's data (well-formed input assumed: the test made it) and whether it ended.
fn dechunk(mut b: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap_or("x"), 16);
        let Ok(size) = size else { return (out, false) };
        if size == 0 {
            return (out, b[eol + 2..].starts_with(b"\r\n"));
        }
        let data = eol + 2;
        if b.len() < data + size + 2 {
            return (out, false);
        }
        out.extend_from_slice(&b[data..data + size]);
        b = &b[data + size + 2..];
    }
}

fn field(head: &[u8], name: &str) -> Option<String> {
    String::from_utf8_lossy(head).split("\r\n").find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

/// The body if complete.
fn body_of(b: &[u8]) -> Option<Vec<u8>> {
    let (head, rest) = split(b)?;
    if let Some(n) = field(head, "content-length") {
        let n: usize = n.parse().ok()?;
        return (rest.len() >= n).then(|| rest[..n].to_vec());
    }
    match dechunk(rest) {
        (data, true) => Some(data),
        _ => None,
    }
}

fn serve(mut s: TcpStream, tx: Sender<Ev>, drop_after_body: bool) {
    let _ = tx.send(Ev::Open);
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        got.extend_from_slice(&buf[..n]);
        let _ = tx.send(Ev::Bytes(buf[..n].to_vec()));
        if drop_after_body && split(&got).is_some_and(|(_, b)| !b.is_empty()) {
            break;
        }
        if let (false, Some(body)) = (drop_after_body, body_of(&got)) {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
            break;
        }
    }
    let _ = s.shutdown(Shutdown::Both);
    let _ = tx.send(Ev::Closed);
}

struct World {
    up: Recorder,
    drop: Recorder,
    up2: Recorder,
    dead: u16,
}

/// What one run showed, compared between the servers.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    sized: (u16, String, Vec<String>, String),
    chunked: (u16, String, Vec<String>, String),
    chunked_http10: (u16, String, Vec<String>),
    retried: (u16, String),
    dropped: (u16, bool),
    dead: (u16, bool),
    bad_chunk: (u16, bool),
    closed_mid_body: bool,
    timed_out: (u16, bool),
    log: Vec<String>,
}

/// The upstream request's fields that matter here, sorted (Connection aside: ringfront
/// manages it for upstream keepalive).
fn fields(head: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(head);
    let mut f: Vec<String> = text
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty() && !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| l.to_ascii_lowercase())
        .collect();
    f.sort();
    f
}

/// A new case's connection (the backends' records start over).
fn client(p: u16, w: &World) -> Client {
    for r in [&w.up, &w.drop, &w.up2] {
        r.reset();
    }
    Client::connect(("127.0.0.1", p))
}

const HEAD: &str = "POST {PATH} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n";

fn head(path: &str, framing: &str) -> String {
    format!("{}{framing}\r\n", HEAD.replace("{PATH}", path))
}

/// A sized body: the second half goes only once the upstream has the first.
fn sized(p: u16, w: &World) -> (u16, String, Vec<String>, String) {
    let mut c = client(p, w);
    c.send_raw(format!("{}first-", head("/sized", "Content-Length: 12\r\n")).as_bytes());
    let early = w.up.until(|b, _| holds(b, b"first-"));
    assert!(!holds(&early, b"second"));
    c.send_raw(b"second");
    let r = c.read_response();
    let all = w.up.until(|_, closed| closed);
    let (h, _) = split(&all).unwrap();
    let body_var = r.header("x-body").unwrap_or_default().to_string();
    (r.status, r.text(), fields(h), body_var)
}

/// A chunked body: sent on chunked; the last chunk only once the first arrived.
fn chunked(p: u16, w: &World) -> (u16, String, Vec<String>, String) {
    let mut c = client(p, w);
    let te = "Transfer-Encoding: chunked\r\n";
    c.send_raw(format!("{}6\r\nfirst-\r\n", head("/chunked", te)).as_bytes());
    w.up.until(|b, _| holds(b, b"first-"));
    c.send_raw(b"6\r\nsecond\r\n0\r\n\r\n");
    let r = c.read_response();
    let all = w.up.until(|_, closed| closed);
    let (h, rest) = split(&all).unwrap();
    assert_eq!(dechunk(rest), (b"first-second".to_vec(), true));
    let body_var = r.header("x-body").unwrap_or_default().to_string();
    (r.status, r.text(), fields(h), body_var)
}

/// Without `proxy_http_version 1.1` a chunked body is read whole and sent sized (the
/// upstream's fields show it).
fn chunked_http10(p: u16, w: &World) -> (u16, String, Vec<String>) {
    let mut c = client(p, w);
    let te = "Transfer-Encoding: chunked\r\n";
    c.send_raw(format!("{}6\r\nfirst-\r\n", head("/http10", te)).as_bytes());
    c.send_raw(b"6\r\nsecond\r\n0\r\n\r\n");
    let r = c.read_response();
    let all = w.up.until(|_, closed| closed);
    let (h, _) = split(&all).unwrap();
    (r.status, r.text(), fields(h))
}

/// The first peer refuses: nothing was sent, so the next one gets the request.
fn retried(p: u16, w: &World) -> (u16, String) {
    let mut c = client(p, w);
    c.send_raw(format!("{}first-", head("/retry", "Content-Length: 12\r\n")).as_bytes());
    w.up.until(|b, _| holds(b, b"first-"));
    c.send_raw(b"second");
    let r = c.read_response();
    w.up.until(|_, closed| closed);
    (r.status, r.text())
}

/// The first peer closes once it has body bytes: no retry once the body started.
fn dropped(p: u16, w: &World) -> (u16, bool) {
    let mut c = client(p, w);
    c.send_raw(format!("{}first-", head("/drop", "Content-Length: 12\r\n")).as_bytes());
    w.drop.until(|b, closed| closed && holds(b, b"first-"));
    let _ = c.try_send_raw(b"second");
    let r = c.read_response();
    (r.status, w.up2.contacted())
}

/// The only peer refuses before the body is through: 502, and the connection (kept alive
/// otherwise) closes, the rest of the body being no request.
fn dead(p: u16, w: &World) -> (u16, bool) {
    let mut c = client(p, w);
    let req = "POST /dead HTTP/1.1\r\nHost: a.test\r\nContent-Length: 12\r\n\r\nfirst-";
    c.send_raw(req.as_bytes());
    let r = c.read_response();
    let _ = c.try_send_raw(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
    (r.status, c.peer_closed(Duration::from_secs(10)))
}

/// A bad chunk after the first: the request ends as nginx's.
fn bad_chunk(p: u16, w: &World) -> (u16, bool) {
    let mut c = client(p, w);
    let te = "Transfer-Encoding: chunked\r\n";
    c.send_raw(format!("{}6\r\nfirst-\r\n", head("/bad", te)).as_bytes());
    w.up.until(|b, _| holds(b, b"first-"));
    c.send_raw(b"zz\r\nnot a chunk\r\n");
    let status = c.try_read_response().map_or(0, |r| r.status);
    let got = w.up.until(|_, closed| closed);
    (status, body_of(&got).is_none())
}

/// The client closes mid-body: the upstream connection is closed too.
fn closed_mid_body(p: u16, w: &World) -> bool {
    let mut c = client(p, w);
    c.send_raw(format!("{}first-", head("/closed", "Content-Length: 12\r\n")).as_bytes());
    w.up.until(|b, _| holds(b, b"first-"));
    drop(c);
    let got = w.up.until(|_, closed| closed);
    body_of(&got).is_none()
}

/// The client stops sending: `client_body_timeout`, the upstream connection closed.
fn timed_out(p: u16, w: &World) -> (u16, bool) {
    let mut c = client(p, w);
    c.send_raw(format!("{}first-", head("/slow", "Content-Length: 12\r\n")).as_bytes());
    let got = w.up.until(|_, closed| closed);
    let status = c.try_read_response().map_or(0, |r| r.status);
    (status, holds(&got, b"first-") && body_of(&got).is_none())
}

fn run(p: u16, w: &World, log: &Path) -> Seen {
    let seen = Seen {
        sized: sized(p, w),
        chunked: chunked(p, w),
        chunked_http10: chunked_http10(p, w),
        retried: retried(p, w),
        dropped: dropped(p, w),
        dead: dead(p, w),
        bad_chunk: bad_chunk(p, w),
        closed_mid_body: closed_mid_body(p, w),
        timed_out: timed_out(p, w),
        log: Vec::new(),
    };
    Seen {
        log: log_lines(log, 9),
        ..seen
    }
}

fn config(p: u16, w: &World, log: &Path) -> String {
    fill(
        CONFIG,
        &[
            ("PORT", p.to_string()),
            ("UP", w.up.port.to_string()),
            ("DROP", w.drop.port.to_string()),
            ("UP2", w.up2.port.to_string()),
            ("DEAD", w.dead.to_string()),
            ("LOG", log.display().to_string()),
        ],
    )
}

#[test]
fn streamed_bodies_match_nginx() {
    let w = World {
        up: Recorder::start(false),
        drop: Recorder::start(true),
        up2: Recorder::start(false),
        dead: port(),
    };
    let dir = TempDir::new("request-streaming");
    let (nlog, rlog) = (dir.path().join("n.log"), dir.path().join("r.log"));
    let np = port();
    let nginx = {
        let _n = Nginx::start(&config(np, &w, &nlog), np);
        run(np, &w, &nlog)
    };
    let rp = port();
    let ours = {
        let _r = Ringfront::start(&config(rp, &w, &rlog));
        run(rp, &w, &rlog)
    };
    assert_eq!(nginx, ours);
    // What the cases are for, on nginx's side.
    assert_eq!(nginx.sized.0, 200);
    assert_eq!(nginx.sized.1, "first-second");
    assert!(nginx.sized.2.contains(&"content-length: 12".to_string()));
    assert_eq!(
        nginx.sized.3, "[]",
        "$request_body is empty for a streamed body"
    );
    assert_eq!(nginx.chunked.1, "first-second");
    assert!(nginx
        .chunked
        .2
        .contains(&"transfer-encoding: chunked".to_string()));
    assert_eq!(nginx.chunked_http10.1, "first-second");
    assert!(nginx
        .chunked_http10
        .2
        .contains(&"content-length: 12".to_string()));
    assert_eq!(nginx.retried, (200, "first-second".to_string()));
    assert_eq!(
        nginx.dropped,
        (502, false),
        "no retry once the body started"
    );
    assert_eq!(nginx.dead, (502, true), "closed after the 502");
    assert_eq!(nginx.bad_chunk, (400, true));
    assert!(nginx.closed_mid_body);
    assert_eq!(nginx.timed_out, (0, true), "408 logged, nothing answered");
    assert!(nginx
        .log
        .contains(&format!("/closed 400 127.0.0.1:{} -", w.up.port)));
}

/// A 64 MiB body streams through a bounded buffer: ringfront's peak memory grows by far
/// less than the body (buffered, it would hold all of it).
#[test]
fn a_large_streamed_body_is_not_held_in_memory() {
    const SIZE: usize = 64 << 20;
    let sink = counting_sink();
    let rp = port();
    let conf = format!(
        "worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{rp};
        location / {{ proxy_request_buffering off; proxy_pass http://127.0.0.1:{sink}; }}
    }}
}}
"
    );
    let r = Ringfront::start(&conf);
    let before = peak_kib(r.pid());
    let mut c = Client::connect(("127.0.0.1", rp));
    let head = format!(
        "PUT /big HTTP/1.1\r\nHost: a\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n"
    );
    c.send_raw(head.as_bytes());
    let block = vec![b'x'; 1 << 20];
    for _ in 0..SIZE >> 20 {
        c.send_raw(&block);
    }
    let resp = c.read_response();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.text(), SIZE.to_string(), "the whole body arrived");
    let grown = peak_kib(r.pid()).saturating_sub(before);
    eprintln!("ringfront's peak memory grew by {grown} KiB streaming {SIZE} bytes");
    assert!(
        grown < 16 * 1024,
        "peak memory grew by {grown} KiB for a 64 MiB body"
    );
}
