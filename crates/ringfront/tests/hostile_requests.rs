//! Hostile-input differential suite, request side: every malformed or hostile request of
//! the table is sent on a fresh connection to ringfront and to real nginx 1.22 (same config:
//! one location proxying to a recording backend). Per case the status the client saw, whether
//! the connection closed and exactly which requests reached the backend are recorded, and:
//! - ringfront's outcome is the expected one (RFC 9112 / 9110 and docs/security.md);
//! - nginx's outcome is the recorded one, so a deliberate difference stays visible;
//! - ringfront never forwards more requests than nginx (never forwards what nginx rejects)
//!   nor more than the framing delimits (no smuggling);
//! - after the whole table ringfront is alive and serves a normal request.

mod hostile;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hostile::{exchange, show, Outcome};
use ringfront_testkit::{free_port, Backend, Nginx, Recorded, Ringfront};

/// Expected outcome of one side: status (None = no response), requests forwarded.
type Want = (Option<u16>, usize);

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    rf: Want,
    nginx: Want,
}

fn config(port: u16, backend: u16) -> String {
    format!(
        "worker_processes 1;
error_log stderr info;
events {{ worker_connections 256; }}
http {{
    client_max_body_size 1k;
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        location / {{
            proxy_pass http://127.0.0.1:{backend};
            proxy_set_header X-Host $host;
            proxy_read_timeout 5s;
        }}
    }}
}}
"
    )
}

const H: &str = "Host: h\r\n";

fn req(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn cases() -> Vec<Case> {
    let ok = (Some(200), 1);
    let bad = (Some(400), 0);
    let ni = (Some(501), 0);
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n";
    let mut v = vec![
        // --- baseline ---
        Case { name: "baseline GET", bytes: req(&format!("GET /ok HTTP/1.1\r\n{H}\r\n")), rf: ok, nginx: ok },
        Case { name: "HTTP/1.0 without Host", bytes: req("GET /ok HTTP/1.0\r\n\r\n"), rf: ok, nginx: ok },
        // --- framing: CL + TE ---
        Case { name: "CL.TE", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}")), rf: bad, nginx: bad },
        Case { name: "TE.CL", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n{smuggled}")), rf: bad, nginx: bad },
        Case { name: "TE obs-fold + CL", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n{smuggled}")), rf: bad, nginx: bad },
        Case { name: "TE chunked, identity", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n{smuggled}")), rf: ni, nginx: ni },
        Case { name: "TE xchunked", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n")), rf: ni, nginx: ni },
        Case { name: "TE tab-chunked", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: \tchunked\r\n\r\n0\r\n\r\n{smuggled}")), rf: ni, nginx: ni },
        Case { name: "TE chunked;x", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked;x\r\n\r\n0\r\n\r\n")), rf: ni, nginx: ni },
        Case { name: "TE gzip, chunked", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")), rf: ni, nginx: ni },
        Case { name: "TE twice", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "TE with space before colon + CL", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n{smuggled}")), rf: bad, nginx: bad },
        Case { name: "TE in HTTP/1.0", bytes: req("POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "TE uppercase CHUNKED", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n")), rf: ok, nginx: ok },
        // --- framing: Content-Length ---
        Case { name: "duplicate CL differing", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhelloX")), rf: bad, nginx: bad },
        Case { name: "duplicate CL identical", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello")), rf: bad, nginx: bad },
        Case { name: "CL list 5, 5", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 5, 5\r\n\r\nhello")), rf: bad, nginx: bad },
        Case { name: "CL +5", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: +5\r\n\r\nhello")), rf: bad, nginx: bad },
        Case { name: "CL -1", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: -1\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "CL 0x5", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 0x5\r\n\r\nhello")), rf: bad, nginx: bad },
        Case { name: "CL 5 5", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 5 5\r\n\r\nhello")), rf: bad, nginx: bad },
        Case { name: "CL overflow", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 99999999999999999999999\r\n\r\nhello")), rf: bad, nginx: bad },
        Case { name: "CL empty", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: \r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "CL leading zeros", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 005\r\n\r\nhello")), rf: ok, nginx: ok },
        Case { name: "CL over client_max_body_size", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 2000\r\nExpect: 100-continue\r\n\r\n")), rf: (Some(413), 0), nginx: (Some(413), 0) },
        // --- chunked framing ---
        Case { name: "chunked valid + ext + trailer", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX-T: 1\r\n\r\n")), rf: ok, nginx: ok },
        Case { name: "chunked bare LF after size", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")), rf: bad, nginx: ok },
        Case { name: "chunked bare LF after data", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n")), rf: bad, nginx: ok },
        Case { name: "chunked bare CR after size", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\rhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked empty size", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked non-hex size", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\ng\r\nhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked size 0x5", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked size overflow", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked missing CRLF after data", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked size leading space", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked negative size", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "chunked over client_max_body_size", bytes: cat(&[format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n800\r\n").as_bytes(), &[b'a'; 2048], b"\r\n0\r\n\r\n"]), rf: (Some(413), 0), nginx: (Some(413), 0) },
        Case { name: "chunked smuggle in chunk data", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{smuggled}\r\n0\r\n\r\n", smuggled.len())), rf: ok, nginx: ok },
        // --- head syntax ---
        Case { name: "space before colon", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A : b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "tab before colon", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A\t: b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "obs-fold", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\r\n b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "obs-fold with tab", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\r\n\tb\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "NUL in value", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\0b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "bare CR in value", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\rb\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "bare CR in request line", bytes: req(&format!("GET /a\rb HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "bare CR ending a header", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\rX-B: b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "control 0x01 in value", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\x01b\r\n\r\n")), rf: bad, nginx: ok },
        Case { name: "DEL in value", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A: a\x7fb\r\n\r\n")), rf: bad, nginx: ok },
        Case { name: "control in name", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X\x01A: b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "NUL in name", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X\0A: b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "empty name", bytes: req(&format!("GET / HTTP/1.1\r\n{H}: b\r\n\r\n")), rf: bad, nginx: bad },
        Case { name: "non-ASCII name", bytes: cat(&[format!("GET / HTTP/1.1\r\n{H}X-").as_bytes(), b"\xc3\xa9: b\r\n\r\n"]), rf: bad, nginx: ok },
        Case { name: "obs-text in value", bytes: cat(&[format!("GET / HTTP/1.1\r\n{H}X-A: ").as_bytes(), b"\xc3\xa9\r\n\r\n"]), rf: ok, nginx: ok },
        Case { name: "bare LF line endings", bytes: req("GET /ok HTTP/1.1\nHost: h\n\n"), rf: ok, nginx: ok },
        Case { name: "leading empty line", bytes: req(&format!("\r\nGET /ok HTTP/1.1\r\n{H}\r\n")), rf: ok, nginx: ok },
        Case { name: "invalid method char", bytes: req(&format!("G(T / HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "lowercase method", bytes: req(&format!("get / HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "method with digit", bytes: req(&format!("GET1 / HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "two spaces after method", bytes: req(&format!("GET  /ok HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: ok },
        Case { name: "space in target", bytes: req(&format!("GET /a b HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "NUL in target", bytes: req(&format!("GET /a\0b HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "DEL in target", bytes: req(&format!("GET /a\x7fb HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "version lowercase", bytes: req(&format!("GET / http/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "version HTTP/1.x", bytes: req(&format!("GET / HTTP/1.x\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "version HTTP/1.1x", bytes: req(&format!("GET / HTTP/1.1x\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "version HTTP/1.2", bytes: req(&format!("GET /ok HTTP/1.2\r\n{H}\r\n")), rf: (Some(505), 0), nginx: ok },
        Case { name: "version HTTP/2.0", bytes: req(&format!("GET / HTTP/2.0\r\n{H}\r\n")), rf: (Some(505), 0), nginx: (Some(505), 0) },
        Case { name: "version HTTP/3.0", bytes: req(&format!("GET / HTTP/3.0\r\n{H}\r\n")), rf: (Some(505), 0), nginx: (Some(505), 0) },
        Case { name: "HTTP/2 preface", bytes: req("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "HTTP/0.9 GET /", bytes: req("GET /\r\n"), rf: bad, nginx: (None, 1) },
        Case { name: "missing Host on 1.1", bytes: req("GET / HTTP/1.1\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "duplicate Host", bytes: req("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "empty Host on 1.1", bytes: req("GET / HTTP/1.1\r\nHost: \r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "Host with slash", bytes: req("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "Host with ..", bytes: req("GET / HTTP/1.1\r\nHost: a..b\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "absolute-form target", bytes: req("GET http://abs.example:8080/abs?q=1 HTTP/1.1\r\nHost: other\r\n\r\n"), rf: ok, nginx: ok },
        Case { name: "absolute-form without Host on 1.1", bytes: req("GET http://abs.example/abs HTTP/1.1\r\n\r\n"), rf: bad, nginx: bad },
        // --- request-line targets and hosts nginx's parser refuses; methods it refuses ---
        Case { name: "absolute-form host .", bytes: req(&format!("GET http://./ HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "absolute-form [v6 unclosed", bytes: req(&format!("GET http://[v6/ HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "absolute-form host:1:2", bytes: req(&format!("GET http://host:1:2/ HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "absolute-form port 8x", bytes: req(&format!("GET http://a:8x/ HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "absolute-form other scheme", bytes: req(&format!("GET ftp://h/ok HTTP/1.1\r\n{H}\r\n")), rf: ok, nginx: ok },
        Case { name: "asterisk target", bytes: req(&format!("OPTIONS * HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        Case { name: "relative target", bytes: req(&format!("GET foo HTTP/1.1\r\n{H}\r\n")), rf: bad, nginx: bad },
        // --- 100-continue: nginx sends it whenever the body is wanted, empty or here already ---
        Case { name: "Expect with Content-Length 0", bytes: req(&format!("POST /ok HTTP/1.1\r\n{H}Expect: 100-continue\r\nContent-Length: 0\r\n\r\n")), rf: ok, nginx: ok },
        Case { name: "Expect on a GET", bytes: req(&format!("GET /ok HTTP/1.1\r\n{H}Expect: 100-continue\r\n\r\n")), rf: ok, nginx: ok },
        Case { name: "Expect with the body sent", bytes: req(&format!("POST /ok HTTP/1.1\r\n{H}Expect: 100-continue\r\nContent-Length: 2\r\n\r\nhi")), rf: ok, nginx: ok },
        Case { name: "Expect in HTTP/1.0", bytes: req("POST /ok HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"), rf: ok, nginx: ok },
        Case { name: "Host trailing dot and port", bytes: req("GET /ok HTTP/1.1\r\nHost: Example.COM.:8080\r\n\r\n"), rf: ok, nginx: ok },
        Case { name: "absolute-form trailing dot", bytes: req("GET HTTP://Abs.Example./ok HTTP/1.1\r\nHost: h\r\n\r\n"), rf: ok, nginx: ok },
        Case { name: "Host .", bytes: req("GET / HTTP/1.1\r\nHost: .\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "Host .:80", bytes: req("GET / HTTP/1.1\r\nHost: .:80\r\n\r\n"), rf: bad, nginx: bad },
        Case { name: "TRACE", bytes: req(&format!("TRACE / HTTP/1.1\r\n{H}\r\n")), rf: (Some(405), 0), nginx: (Some(405), 0) },
        Case { name: "CONNECT origin-form", bytes: req(&format!("CONNECT / HTTP/1.1\r\n{H}\r\n")), rf: (Some(405), 0), nginx: (Some(405), 0) },
        Case { name: "CONNECT authority-form", bytes: req("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"), rf: bad, nginx: bad },
        // --- limits ---
        Case { name: "101 header fields", bytes: req(&format!("GET /ok HTTP/1.1\r\n{H}{}\r\n", (0..100).map(|i| format!("X-{i}: v\r\n")).collect::<String>())), rf: bad, nginx: ok },
        Case { name: "request line over 8k", bytes: req(&format!("GET /{} HTTP/1.1\r\n{H}\r\n", "a".repeat(9000))), rf: (Some(414), 0), nginx: (Some(414), 0) },
        Case { name: "header line over 8k", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-Big: {}\r\n\r\n", "a".repeat(9000))), rf: bad, nginx: bad },
        Case { name: "head over 4x8k", bytes: req(&format!("GET / HTTP/1.1\r\n{H}{}\r\n", (0..5).map(|i| format!("X-{i}: {}\r\n", "a".repeat(7000))).collect::<String>())), rf: bad, nginx: bad },
        // --- hop-by-hop and pipelining ---
        Case { name: "Connection lists X-Secret", bytes: req(&format!("GET /hop HTTP/1.1\r\n{H}Connection: keep-alive, X-Secret\r\nX-Secret: 1\r\nProxy-Connection: x\r\nKeep-Alive: 5\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: foo\r\n\r\n")), rf: ok, nginx: ok },
        Case { name: "request hidden in CL body", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: {}\r\n\r\n{smuggled}", smuggled.len())), rf: ok, nginx: ok },
        Case { name: "pipelined after CL body", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Content-Length: 5\r\n\r\nhello{smuggled}")), rf: (Some(200), 2), nginx: (Some(200), 2) },
        Case { name: "pipelined after chunked body", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n{smuggled}")), rf: (Some(200), 2), nginx: (Some(200), 2) },
        Case { name: "pipelined after GET with Connection: close", bytes: req(&format!("GET /ok HTTP/1.1\r\n{H}Connection: close\r\n\r\n{smuggled}")), rf: ok, nginx: ok },
        Case { name: "pipelined after bad chunked body", bytes: req(&format!("POST /p HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n{smuggled}")), rf: bad, nginx: bad },
        Case { name: "GET with body then request", bytes: req(&format!("GET /g HTTP/1.1\r\n{H}Content-Length: 3\r\n\r\nabc{smuggled}")), rf: (Some(200), 2), nginx: (Some(200), 2) },
        Case { name: "pipelined after rejected head", bytes: req(&format!("GET / HTTP/1.1\r\n{H}X-A : b\r\n\r\n{smuggled}")), rf: bad, nginx: bad },
    ];
    v.retain(|c| !c.name.is_empty());
    v
}

/// One side's observation of a case.
struct Obs {
    out: Outcome,
    reqs: Vec<Recorded>,
}

fn run_side(addr: SocketAddr, backend: &Backend, cases: &[Case]) -> Vec<Obs> {
    cases
        .iter()
        .map(|c| {
            backend.reset_hits();
            let out = exchange(addr, &c.bytes, Duration::from_secs(2));
            // A forwarded request may still be in flight if no answer came (nothing should).
            std::thread::sleep(Duration::from_millis(20));
            Obs {
                out,
                reqs: backend.requests(),
            }
        })
        .collect()
}

fn describe(o: &Obs) -> String {
    let statuses: Vec<u16> = o.out.responses.iter().map(|r| r.status).collect();
    let reqs: Vec<String> = o
        .reqs
        .iter()
        .map(|r| format!("{} {} body={:?}", r.method, r.target, show(&r.body)))
        .collect();
    format!(
        "statuses={statuses:?} closed={} backend={reqs:?}",
        o.out.closed
    )
}

#[test]
fn hostile_requests_differential() {
    let t0 = Instant::now();
    let cases = cases();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let (nb, rb) = (Backend::start(), Backend::start());
    let (np, rp) = (free_port(), free_port());
    let nginx = Nginx::start(&config(np, nb.port()), np);
    let rf = Ringfront::start(&config(rp, rb.port()));
    let (n_obs, r_obs) = std::thread::scope(|s| {
        let n = s.spawn(|| run_side(SocketAddr::from(([127, 0, 0, 1], np)), &nb, &cases));
        let r = s.spawn(|| run_side(SocketAddr::from(([127, 0, 0, 1], rp)), &rb, &cases));
        (n.join().unwrap(), r.join().unwrap())
    });

    let mut failures = Vec::new();
    for ((c, n), r) in cases.iter().zip(&n_obs).zip(&r_obs) {
        println!(
            "{:<40} nginx: {}\n{:<40}    rf: {}",
            c.name,
            describe(n),
            "",
            describe(r)
        );
        let got_rf = (r.out.status(), r.reqs.len());
        let got_ng = (n.out.status(), n.reqs.len());
        if got_rf != c.rf {
            failures.push(format!("{}: ringfront {got_rf:?}, want {:?}", c.name, c.rf));
        }
        if got_ng != c.nginx {
            failures.push(format!(
                "{}: nginx {got_ng:?}, recorded {:?}",
                c.name, c.nginx
            ));
        }
        if r.reqs.len() > n.reqs.len() {
            failures.push(format!(
                "{}: ringfront forwarded {} request(s), nginx {}",
                c.name,
                r.reqs.len(),
                n.reqs.len()
            ));
        }
        if r.reqs.iter().any(|q| q.target.contains("smuggled")) && c.rf.1 < 2 {
            failures.push(format!("{}: smuggled request reached the backend", c.name));
        }
        // Every refusal while reading a request closes the connection.
        if let Some(st) = r.out.status() {
            if st >= 400 && !r.out.closed {
                failures.push(format!(
                    "{}: ringfront answered {st} but kept the connection",
                    c.name
                ));
            }
        }
    }

    // Case-specific checks of what reached the backend.
    let by_name = |name: &str| cases.iter().position(|c| c.name == name).unwrap();
    let hop = &r_obs[by_name("Connection lists X-Secret")].reqs[0];
    for h in [
        "x-secret",
        "proxy-connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
    ] {
        if hop.header(h).is_some() {
            failures.push(format!(
                "hop-by-hop {h} forwarded by ringfront: {}",
                show(&hop.raw_head)
            ));
        }
    }
    let n_hop = &n_obs[by_name("Connection lists X-Secret")].reqs[0];
    println!("nginx forwards X-Secret: {:?}", n_hop.header("x-secret"));
    for obs in [&r_obs, &n_obs] {
        let abs = &obs[by_name("absolute-form target")].reqs[0];
        println!(
            "absolute-form: target {} X-Host {:?}",
            abs.target,
            abs.header("x-host")
        );
    }
    let abs = &r_obs[by_name("absolute-form target")].reqs[0];
    if abs.target != "/abs?q=1" {
        failures.push(format!("absolute-form forwarded as {}", abs.target));
    }
    let n_abs = &n_obs[by_name("absolute-form target")].reqs[0];
    if abs.header("x-host") != n_abs.header("x-host") {
        failures.push(format!(
            "absolute-form $host: ringfront {:?}, nginx {:?}",
            abs.header("x-host"),
            n_abs.header("x-host")
        ));
    }
    // The interim 100 Continue (the response parser skips 1xx): both send it, or neither.
    for (name, want) in [
        ("Expect with Content-Length 0", true),
        ("Expect on a GET", true),
        ("Expect with the body sent", true),
        ("Expect in HTTP/1.0", false),
    ] {
        let i = by_name(name);
        let interim = |o: &Obs| o.out.raw.starts_with(b"HTTP/1.1 100 Continue\r\n\r\n");
        if interim(&r_obs[i]) != want || interim(&n_obs[i]) != want {
            failures.push(format!(
                "{name}: 100 Continue from ringfront {}, nginx {}, want {want}",
                interim(&r_obs[i]),
                interim(&n_obs[i])
            ));
        }
    }
    // `$host` as nginx's validate_host leaves it: no port, no trailing dot, lower case.
    for name in [
        "Host trailing dot and port",
        "absolute-form trailing dot",
        "absolute-form other scheme",
    ] {
        let (r, n) = (&r_obs[by_name(name)].reqs[0], &n_obs[by_name(name)].reqs[0]);
        if r.header("x-host") != n.header("x-host") || r.target != n.target {
            failures.push(format!(
                "{name}: ringfront {} {:?}, nginx {} {:?}",
                r.target,
                r.header("x-host"),
                n.target,
                n.header("x-host")
            ));
        }
    }
    let hidden = &r_obs[by_name("request hidden in CL body")].reqs[0];
    if !hidden.body.starts_with(b"GET /smuggled") {
        failures.push("request hidden in CL body: body not forwarded as body".into());
    }

    // Never crashed: alive and serving.
    assert!(rf.exited().is_none(), "ringfront exited: {:?}", rf.exited());
    rb.reset_hits();
    let after = exchange(
        SocketAddr::from(([127, 0, 0, 1], rp)),
        format!("GET /after HTTP/1.1\r\n{H}\r\n").as_bytes(),
        Duration::from_secs(5),
    );
    assert_eq!(
        after.status(),
        Some(200),
        "after the table: {}",
        show(&after.raw)
    );
    assert_eq!(rb.requests().len(), 1);
    drop(nginx);
    println!("{} cases in {:?}", cases.len(), t0.elapsed());
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
