//! Hostile-input differential suite, response side: each case is a backend ([`RawBackend`])
//! answering every request with fixed bytes, then keeping, closing, resetting or stalling
//! its connection. ringfront and real nginx 1.22 run the same config (one location and one
//! upstream per case) at once; per case the client sends a request, and, when its
//! connection stays open, a second one on the same connection. Recorded per case: statuses,
//! bodies, whether the body was cut short, whether the client connection closed, and the
//! backend's accepted connections and requests (upstream reuse). Asserted for ringfront:
//! the expected outcome (docs/security.md), extra bytes are never taken as a response, a
//! truncated body is never presented as complete, and after any bad response the upstream
//! connection is never reused. nginx's outcome is printed for comparison.

mod hostile;

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use hostile::{parse_responses, read_window, show, Seen};
use ringfront_testkit::{free_port, After, Nginx, RawBackend, Ringfront};

#[derive(Clone, Copy)]
struct Want {
    /// First response's status (None: no response at all).
    status: Option<u16>,
    /// First response's body, when it matters.
    body: Option<&'static [u8]>,
    /// The first response's body is cut short and the client connection closed.
    cut: bool,
    /// The upstream connection may be reused afterwards (only for well-formed exchanges).
    reuse_ok: bool,
}

const fn want(status: u16) -> Want {
    Want {
        status: Some(status),
        body: None,
        cut: false,
        reuse_ok: false,
    }
}
const fn ok_body(body: &'static [u8]) -> Want {
    Want {
        status: Some(200),
        body: Some(body),
        cut: false,
        reuse_ok: false,
    }
}
const fn cut() -> Want {
    Want {
        status: Some(200),
        body: None,
        cut: true,
        reuse_ok: false,
    }
}

struct Case {
    name: &'static str,
    reply: Vec<u8>,
    after: After,
    method: &'static str,
    rf: Want,
}

fn c(name: &'static str, reply: &str, after: After, rf: Want) -> Case {
    Case {
        name,
        reply: reply.as_bytes().to_vec(),
        after,
        method: "GET",
        rf,
    }
}

const KEEP: After = After::Keep;
const CLOSE: After = After::Close;
const STALL: After = After::Stall(Duration::from_secs(4));

fn cases() -> Vec<Case> {
    let bad = want(502);
    let mut v = vec![
        Case { rf: Want { reuse_ok: true, ..ok_body(b"ok") }, ..c("valid keepalive response", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, bad) },
        c("status without reason", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", KEEP, Want { reuse_ok: true, ..ok_body(b"ok") }),
        c("LF-only line endings", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", KEEP, Want { reuse_ok: true, ..ok_body(b"ok") }),
        c("status 2x0", "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("status two digits", "HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("version HTTP/9.9", "HTTP/9.9 200 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("not HTTP (HELLO)", "HELLO\r\n\r\n", CLOSE, bad),
        c("ICY status line", "ICY 200 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("lowercase http version", "http/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("NUL in header value", "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("bare CR in header value", "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("control byte in header value", "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("space before colon", "HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("header without colon", "HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("space in header name", "HTTP/1.1 200 OK\r\nBad Header: x\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("obs-fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("conflicting Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\nokEVIL", KEEP, bad),
        c("identical Content-Length twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", KEEP, bad),
        c("Content-Length +2", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", KEEP, bad),
        c("Content-Length 2, 2", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", KEEP, bad),
        c("Content-Length abc", "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok", KEEP, bad),
        c("Content-Length overflow", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nok", KEEP, bad),
        c("Content-Length + Transfer-Encoding", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", KEEP, bad),
        c("Transfer-Encoding chunked, gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\nok\r\n0\r\n\r\n", KEEP, bad),
        c("Transfer-Encoding in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", KEEP, bad),
        c("oversized header section (70 KiB)", &format!("HTTP/1.1 200 OK\r\n{}Content-Length: 2\r\n\r\nok", (0..70).map(|i| format!("X-{i}: {}\r\n", "a".repeat(1000))).collect::<String>()), KEEP, bad),
        c("101 header fields", &format!("HTTP/1.1 200 OK\r\n{}Content-Length: 2\r\n\r\nok", (0..100).map(|i| format!("X-{i}: v\r\n")).collect::<String>()), KEEP, bad),
        c("unsolicited 101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: upgrade\r\n\r\nEVIL", KEEP, bad),
        c("100 Continue then 200", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", KEEP, Want { reuse_ok: true, ..ok_body(b"ok") }),
        c("204 with a body", "HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\nEVIL", KEEP, want(204)),
        c("304 with a body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 4\r\n\r\nEVIL", KEEP, want(304)),
        Case { method: "HEAD", ..c("HEAD answered with a body", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL", KEEP, want(200)) },
        c("second response smuggled after the first", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL", KEEP, ok_body(b"ok")),
        c("garbage after a chunked end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nEVIL", KEEP, ok_body(b"ok")),
        c("CL 100, 10 sent, then close", &format!("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "0123456789"), CLOSE, cut()),
        c("CL 100, 10 sent, then RST", &format!("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "0123456789"), After::Reset, cut()),
        c("CL 100, 10 sent, then stall", &format!("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "0123456789"), STALL, cut()),
        c("chunked, close mid-chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n01234", CLOSE, cut()),
        c("chunked, close before last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", CLOSE, cut()),
        c("chunked, invalid chunk size mid-body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\nEVIL\r\n0\r\n\r\n", KEEP, cut()),
        c("close before any response", "", CLOSE, bad),
        c("RST before any response", "", After::Reset, bad),
        c("stall before any response", "", STALL, want(504)),
        c("close mid-head", "HTTP/1.1 200 OK\r\nContent-Le", CLOSE, bad),
        c("close-delimited body", "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nuntil-close", CLOSE, ok_body(b"until-close")),
        c("Connection: close honoured", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", KEEP, ok_body(b"ok")),
    ];
    v.retain(|c| !c.name.is_empty());
    v
}

fn config(port: u16, backends: &[RawBackend]) -> String {
    let mut ups = String::new();
    let mut locs = String::new();
    for (i, b) in backends.iter().enumerate() {
        ups.push_str(&format!(
            "    upstream u{i} {{ server 127.0.0.1:{} max_fails=0; keepalive 2; }}\n",
            b.port()
        ));
        locs.push_str(&format!(
            "        location /r{i}/ {{ proxy_pass http://u{i}; }}\n"
        ));
    }
    format!(
        "worker_processes 1;
error_log stderr info;
events {{ worker_connections 1024; }}
http {{
    proxy_read_timeout 2s;
    proxy_next_upstream off;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
{ups}    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
{locs}    }}
}}
"
    )
}

/// One proxy's run of one case.
#[derive(Debug)]
struct Obs {
    first: Option<Seen>,
    closed_after_first: bool,
    second: Option<Seen>,
    accepted: usize,
    requests: usize,
    raw: Vec<u8>,
}

fn run_case(addr: SocketAddr, i: usize, case: &Case, backend: &RawBackend) -> Obs {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    let idle = match case.after {
        After::Stall(_) => Duration::from_secs(5),
        _ => Duration::from_millis(400),
    };
    let head = case.method == "HEAD";
    let req1 = format!("{} /r{i}/1 HTTP/1.1\r\nHost: h\r\n\r\n", case.method);
    std::io::Write::write_all(&mut s, req1.as_bytes()).unwrap();
    let (raw, closed) = read_window(&mut s, Duration::from_secs(6), idle);
    let mut first_all = parse_responses(&raw, head);
    let first = (!first_all.is_empty()).then(|| first_all.remove(0));
    let mut second = None;
    if !closed && first.is_some() {
        let req2 = format!("{} /r{i}/2 HTTP/1.1\r\nHost: h\r\n\r\n", case.method);
        if std::io::Write::write_all(&mut s, req2.as_bytes()).is_ok() {
            let (raw2, _) = read_window(&mut s, Duration::from_secs(6), idle);
            // Anything left over from the first read comes first: that is what a client
            // would take as the answer to its second request.
            let mut all = first_all;
            all.extend(parse_responses(&raw2, head));
            second = all.into_iter().next();
        }
    }
    Obs {
        first,
        closed_after_first: closed,
        second,
        accepted: backend.accepted(),
        requests: backend.requests(),
        raw,
    }
}

fn run_all(addr: SocketAddr, cases: &[Case], backends: &[RawBackend]) -> Vec<Obs> {
    std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .zip(backends)
            .enumerate()
            .map(|(i, (c, b))| s.spawn(move || run_case(addr, i, c, b)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn describe(o: &Obs) -> String {
    let r = |s: &Option<Seen>| match s {
        Some(s) => {
            let body = show(&s.body);
            let body: String = body.chars().take(24).collect();
            format!(
                "{} {body:?}{}",
                s.status,
                if s.truncated { " CUT" } else { "" }
            )
        }
        None => "-".into(),
    };
    format!(
        "first={} closed={} second={} upstream accepted={} requests={}",
        r(&o.first),
        o.closed_after_first,
        r(&o.second),
        o.accepted,
        o.requests
    )
}

#[test]
fn hostile_responses_differential() {
    let t0 = Instant::now();
    let cases = cases();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let nb: Vec<RawBackend> = cases
        .iter()
        .map(|c| RawBackend::start(&c.reply, c.after))
        .collect();
    let rb: Vec<RawBackend> = cases
        .iter()
        .map(|c| RawBackend::start(&c.reply, c.after))
        .collect();
    let (np, rp) = (free_port(), free_port());
    let nginx = Nginx::start(&config(np, &nb), np);
    let rf = Ringfront::start(&config(rp, &rb));
    let (n_obs, r_obs) = std::thread::scope(|s| {
        let n = s.spawn(|| run_all(SocketAddr::from(([127, 0, 0, 1], np)), &cases, &nb));
        let r = s.spawn(|| run_all(SocketAddr::from(([127, 0, 0, 1], rp)), &cases, &rb));
        (n.join().unwrap(), r.join().unwrap())
    });

    let mut failures = Vec::new();
    for ((c, n), r) in cases.iter().zip(&n_obs).zip(&r_obs) {
        println!(
            "{:<42} nginx: {}\n{:<42}    rf: {}",
            c.name,
            describe(n),
            "",
            describe(r)
        );
        let w = c.rf;
        let mut fail = |m: String| failures.push(format!("{}: {m} [{}]", c.name, describe(r)));
        if r.first.as_ref().map(|s| s.status) != w.status {
            fail(format!("status, want {:?}", w.status));
        }
        if let (Some(body), Some(first)) = (w.body, &r.first) {
            if first.body != body {
                fail(format!("body, want {:?}", show(body)));
            }
        }
        if let Some(first) = &r.first {
            if first.truncated != w.cut {
                fail(format!("truncated={}, want {}", first.truncated, w.cut));
            }
            // A cut body is only acceptable with the connection closed.
            if first.truncated && !r.closed_after_first {
                fail("truncated body on a connection left open".into());
            }
            if first.body.windows(4).any(|x| x == b"EVIL") && c.name != "unsolicited 101" {
                fail("extra upstream bytes reached the client".into());
            }
        }
        if w.cut && !r.closed_after_first {
            fail("connection not closed after a truncated body".into());
        }
        if let Some(second) = &r.second {
            // The backend answers every request alike: the second answer is its own.
            if Some(second.status) != w.status || second.body.windows(4).any(|x| x == b"EVIL") {
                fail(format!(
                    "second request got {} {:?}",
                    second.status,
                    show(&second.body)
                ));
            }
        }
        if !w.reuse_ok && r.requests >= 2 && r.accepted < r.requests {
            fail("upstream connection reused after a bad response".into());
        }
        if r.raw.windows(4).any(|x| x == b"EVIL") && w.status != Some(101) {
            fail(format!(
                "raw bytes to client contain EVIL: {}",
                show(&r.raw)
            ));
        }
    }
    // Keepalive to a well-behaved backend does reuse (the reuse check above means something).
    let base = &r_obs[0];
    assert_eq!(
        (base.accepted, base.requests),
        (1, 2),
        "baseline reuse: {}",
        describe(base)
    );

    assert!(rf.exited().is_none(), "ringfront exited: {:?}", rf.exited());
    drop(nginx);
    println!("{} cases in {:?}", cases.len(), t0.elapsed());
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
