//! Differential: `listen ... proxy_protocol` against real nginx 1.22. Raw TCP clients send
//! PROXY v1 headers (TCP4, TCP6, UNKNOWN, port 0, malformed, truncated) and v2 headers
//! (INET with TLVs, INET6, LOCAL, AF_UNIX, UNSPEC, an unknown version, a length past the
//! bytes sent, a short address block), a silent client runs into `client_header_timeout`,
//! and a header may come in its own segment before the request. Compared: every answer
//! (`$proxy_protocol_*` in the body, or the connection closed with nothing), what a
//! proxied request's backend saw (`X-Real-IP`, `X-Forwarded-For`), the access-log lines and
//! the error-log lines about the header. A refused header never reaches the backend.
//! Then `listen ... ssl proxy_protocol`: curl's `--haproxy-protocol` header before the TLS
//! handshake.

mod common;

use ringfront_testkit::MaskPort;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fill, log_lines, port};
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Backend, Nginx, Ringfront, TempDir};

const CONFIG: &str = "worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    client_header_timeout 1s;
    log_format pp '$remote_addr|$proxy_protocol_addr|$proxy_protocol_port|$proxy_protocol_server_addr|$proxy_protocol_server_port|$request|$status';
    access_log {LOG} pp;
    server {
        listen 127.0.0.1:{PORT} proxy_protocol;
        location / {
            return 200 \"$remote_addr|$proxy_protocol_addr|$proxy_protocol_port|$proxy_protocol_server_addr|$proxy_protocol_server_port\\n\";
        }
        location /up {
            proxy_pass http://127.0.0.1:{UP};
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-PP $proxy_protocol_addr:$proxy_protocol_port;
        }
    }
}
";

const SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

fn v2(cmd: u8, fam: u8, body: &[u8]) -> Vec<u8> {
    let mut b = SIG.to_vec();
    b.extend_from_slice(&[cmd, fam]);
    b.extend_from_slice(&(body.len() as u16).to_be_bytes());
    b.extend_from_slice(body);
    b
}

fn inet(src: [u8; 4], dst: [u8; 4], sp: u16, dp: u16) -> Vec<u8> {
    let mut b = src.to_vec();
    b.extend_from_slice(&dst);
    b.extend_from_slice(&sp.to_be_bytes());
    b.extend_from_slice(&dp.to_be_bytes());
    b
}

fn with(mut head: Vec<u8>, rest: &str) -> Vec<u8> {
    head.extend_from_slice(rest.as_bytes());
    head
}

const GET: &str = "GET / HTTP/1.0\r\n\r\n";

/// (label, bytes sent at once)
fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let v1 = |h: &str| format!("{h}\r\n{GET}").into_bytes();
    let mut tlvs = inet([192, 0, 2, 10], [192, 0, 2, 20], 40000, 8443);
    tlvs.extend_from_slice(&[0x01, 0, 2, b'h', b'2', 0x02, 0, 5]);
    tlvs.extend_from_slice(b"a.com");
    let mut in6 = vec![0x20, 0x01, 0x0d, 0xb8];
    in6.extend_from_slice(&[0; 11]);
    in6.push(1);
    in6.extend_from_slice(&[0; 15]);
    in6.push(2);
    in6.extend_from_slice(&[0x12, 0x34, 0, 80]);
    vec![
        ("v1 tcp4", v1("PROXY TCP4 192.0.2.1 192.0.2.2 1234 80")),
        ("v1 tcp6", v1("PROXY TCP6 2001:DB8::1 2001:db8::2 4000 443")),
        ("v1 unknown", v1("PROXY UNKNOWN")),
        ("v1 unknown+addrs", v1("PROXY UNKNOWN ff::1 ff::2 1 2")),
        ("v1 port 0", v1("PROXY TCP4 192.0.2.1 192.0.2.2 0 0")),
        ("v1 not checked", v1("PROXY TCP4 1.2.3 ::1 1 2")),
        ("v1 bad addr", v1("PROXY TCP4 192.0.2.x 192.0.2.2 1 2")),
        ("v1 bad port", v1("PROXY TCP4 192.0.2.1 192.0.2.2 1 65536")),
        ("v1 tcp5", v1("PROXY TCP5 192.0.2.1 192.0.2.2 1 2")),
        (
            "v1 no lf",
            b"PROXY TCP4 192.0.2.1 192.0.2.2 1 2\rGET".to_vec(),
        ),
        (
            "v1 truncated",
            b"PROXY TCP4 192.0.2.1 192.0.2.2 1234".to_vec(),
        ),
        ("no header", GET.as_bytes().to_vec()),
        ("v2 inet tlvs", with(v2(0x21, 0x11, &tlvs), GET)),
        ("v2 inet6", with(v2(0x21, 0x21, &in6), GET)),
        (
            "v2 local",
            with(v2(0x20, 0x11, &inet([1; 4], [2; 4], 1, 2)), GET),
        ),
        ("v2 unix", with(v2(0x21, 0x31, &[0; 216]), GET)),
        ("v2 unspec", with(v2(0x21, 0x00, &[]), GET)),
        (
            "v2 udp",
            with(v2(0x21, 0x12, &inet([1; 4], [2; 4], 1, 2)), GET),
        ),
        (
            "v2 version 3",
            with(v2(0x31, 0x11, &inet([1; 4], [2; 4], 1, 2)), GET),
        ),
        (
            "v2 too large",
            v2(0x21, 0x11, &inet([1; 4], [2; 4], 1, 2))[..20].to_vec(),
        ),
        ("v2 short inet", with(v2(0x21, 0x11, &[1, 2, 3, 4]), GET)),
        (
            "proxied",
            b"PROXY TCP4 198.51.100.7 192.0.2.2 5555 80\r\nGET /up HTTP/1.1\r\nHost: x\r\n\
              X-Forwarded-For: 203.0.113.9\r\nConnection: close\r\n\r\n"
                .to_vec(),
        ),
    ]
}

/// Everything read until the server closes (bounded), as the status line and body, or
/// `closed` when nothing came; with how long it took, in whole seconds.
fn exchange(port: u16, first: &[u8], then: Option<(u64, &[u8])>) -> String {
    let t = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    if !first.is_empty() {
        s.write_all(first).unwrap();
    }
    if let Some((ms, rest)) = then {
        // The scenario itself: the rest in a segment of its own, `ms` after the header.
        std::thread::sleep(Duration::from_millis(ms));
        let _ = s.write_all(rest);
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text: String = String::from_utf8_lossy(&out)
        .split_inclusive("\r\n")
        // Dates differ; the order of a proxied response's fields is not the subject here.
        .filter(|l| {
            !["Server:", "Date:", "X-Backend:"]
                .iter()
                .any(|h| l.starts_with(h))
        })
        .collect();
    let answer = match text.is_empty() {
        true => "closed".to_string(),
        false => format!("{text:?}"),
    };
    format!("{answer} ~{}s", t.elapsed().as_secs_f64().round())
}

/// The error-log entries about PROXY protocol headers, without time, pid and port (an
/// entry runs over several lines where the header bytes held line breaks).
fn header_lines(text: &str, port: u16) -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let starts = line.len() > 5 && line.as_bytes()[..4].iter().all(u8::is_ascii_digit);
        match entries.last_mut() {
            Some(e) if !starts => {
                e.push('\n');
                e.push_str(line);
            }
            _ => entries.push(line.to_string()),
        }
    }
    entries
        .iter()
        .filter(|l| l.contains("PROXY protocol") || l.contains("header is too large"))
        // The harnesses' readiness probes connect and close.
        .filter(|l| !l.contains("client closed connection"))
        .map(|l| {
            let from = l.find("] ").map_or(0, |i| i + 2);
            let l = &l[from..];
            // `PID#TID: *N ` is nginx's; ringfront's `PID#W: *N `.
            let l = l.split_once(": *").map_or(l, |(_, r)| r);
            let l = l.split_once(' ').map_or(l, |(_, r)| r);
            l.mask_port(port)
        })
        .collect()
}

struct Seen {
    answers: Vec<String>,
    backend: Vec<String>,
    log: Vec<String>,
}

fn session(port: u16, log: &Path, up: &Backend) -> Seen {
    up.reset_hits();
    let mut answers: Vec<String> = cases()
        .iter()
        .map(|(label, bytes)| format!("{label}: {}", exchange(port, bytes, None)))
        .collect();
    answers.push(format!("silent: {}", exchange(port, b"", None)));
    let split = exchange(
        port,
        b"PROXY TCP4 192.0.2.3 192.0.2.4 3 4\r\n",
        Some((200, GET.as_bytes())),
    );
    answers.push(format!("split: {split}"));
    // One client_header_timeout from the accept for the header and the request after it
    // (a request line begun would be logged as nginx's 408, which is not the subject here).
    let slow = exchange(
        port,
        b"",
        Some((700, b"PROXY TCP4 192.0.2.3 192.0.2.4 3 4\r\n")),
    );
    answers.push(format!("slow head: {slow}"));
    let keep = exchange(
        port,
        b"PROXY TCP4 192.0.2.5 192.0.2.6 5 6\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        None,
    );
    answers.push(format!("keepalive: {keep}"));
    let backend = up
        .requests()
        .iter()
        .map(|r| {
            let h = |n| r.header(n).unwrap_or("-").to_string();
            format!(
                "{} {} | {} | {}",
                r.target,
                h("x-real-ip"),
                h("x-forwarded-for"),
                h("x-pp")
            )
        })
        .collect();
    // Requests answered: every case but the refused ones, plus split and keepalive (2).
    let answered = answers.iter().filter(|a| a.contains("HTTP/1.1")).count() + 1;
    Seen {
        answers,
        backend,
        log: log_lines(log, answered),
    }
}

#[test]
fn headers_v1_and_v2_read_as_nginx_reads_them() {
    let dir = TempDir::new("rf-pp");
    let up = Backend::start();
    let config = |p: u16, log: &Path| {
        fill(
            CONFIG,
            &[
                ("PORT", p.to_string()),
                ("UP", up.port().to_string()),
                ("LOG", log.display().to_string()),
            ],
        )
    };
    let (np, rp) = (port(), port());
    let (nlog, rlog) = (dir.path().join("n.log"), dir.path().join("r.log"));
    let nginx = Nginx::start(&config(np, &nlog), np);
    let n = session(np, &nlog, &up);
    let n_err = header_lines(&nginx.stderr_lines().join("\n"), np);
    drop(nginx);
    let rf = Ringfront::start(&config(rp, &rlog));
    let r = session(rp, &rlog, &up);
    let r_err = header_lines(&rf.stderr_lines().join("\n"), rp);

    common::assert_same("answers", &n.answers, &r.answers);
    common::assert_same("backend", &n.backend, &r.backend);
    common::assert_same("access log", &n.log, &r.log);
    common::assert_same("error log", &n_err, &r_err);
    assert!(
        n.answers[0].contains("127.0.0.1|192.0.2.1|1234|192.0.2.2|80"),
        "{:?}",
        n.answers
    );
    assert!(n.answers[6].contains("closed"), "{:?}", n.answers);
    assert!(
        n.backend.len() == 1 && n.backend[0].contains("198.51.100.7:5555"),
        "{:?}",
        n.backend
    );
    let ctx = " while reading PROXY protocol, client: 127.0.0.1, server: 127.0.0.1:PORT";
    for want in [
        // The bytes as they came, line breaks and all (the line reader drops the CRs).
        format!(
            "broken header: \"PROXY TCP4 192.0.2.x 192.0.2.2 1 2\n{}\"{ctx}",
            GET.replace('\r', "")
        ),
        format!("unknown PROXY protocol version: 3{ctx}"),
        format!("header is too large{ctx}"),
        format!("client timed out (110: Connection timed out){ctx}"),
    ] {
        assert!(n_err.contains(&want), "{want:?} in {n_err:#?}");
    }
    assert!(
        n.answers
            .iter()
            .any(|a| a.starts_with("silent: closed ~1s"))
            && n.answers
                .iter()
                .any(|a| a.starts_with("slow head: closed ~1s")),
        "{:?}",
        n.answers
    );
}

const TLS_CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    ssl_protocols TLSv1.2 TLSv1.3;
    server {
        listen 127.0.0.1:{PORT} ssl proxy_protocol;
        server_name a.test;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"$https|$proxy_protocol_addr|$proxy_protocol_server_addr\\n\"; }
    }
}
";

fn curl(port: u16, ca: &Path, proxy_protocol: bool) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "5", "--cacert"])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("a.test:{port}:127.0.0.1"));
    if proxy_protocol {
        cmd.arg("--haproxy-protocol");
    }
    let o = cmd
        .arg(format!("https://a.test:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    let body = String::from_utf8_lossy(&o.stdout).into_owned();
    format!("{body:?} ok={}", o.status.success())
}

#[test]
fn a_header_before_the_tls_handshake_on_an_ssl_listen() {
    let dir = TempDir::new("rf-pp-tls");
    let pki = Pki::new(dir.path(), "pp");
    let f = pki.server("a", Key::EcdsaP256, &["a.test"]);
    let config = |p: u16| {
        fill(
            TLS_CONFIG,
            &[
                ("PORT", p.to_string()),
                ("CERT", f.cert.display().to_string()),
                ("KEY", f.key.display().to_string()),
            ],
        )
    };
    let (np, rp) = (port(), port());
    let ca = pki.ca.cert.clone();
    let nginx = Nginx::start(&config(np), np);
    let n = [curl(np, &ca, true), curl(np, &ca, false)];
    drop(nginx);
    let _rf = Ringfront::start(&config(rp));
    let r = [curl(rp, &ca, true), curl(rp, &ca, false)];
    assert_eq!(r, n);
    assert_eq!(n[0], "\"on|127.0.0.1|127.0.0.1\\n\" ok=true");
    assert!(n[1].ends_with("ok=false"), "{n:?}");
}

/// `$proxy_protocol_tlv_*` (nginx 1.23.2+, which 1.22 lacks: ringfront alone, with the
/// values nginx-tests' proxy_protocol2_tlv.t expects): by name, by `0xHH`, inside the SSL
/// TLV, `ssl_verify`, and nothing for a TLV that is absent or a name nginx does not know.
#[test]
fn tlv_variables_by_name_type_and_inside_ssl() {
    let p = port();
    let cfg = fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT} proxy_protocol;
        location / {
            return 200 \"$proxy_protocol_tlv_alpn|$proxy_protocol_tlv_0x02|$proxy_protocol_tlv_0x000ae|$proxy_protocol_tlv_ssl_verify|$proxy_protocol_tlv_ssl_cn|$proxy_protocol_tlv_ssl_0x21|$proxy_protocol_tlv_0x0f|$proxy_protocol_tlv_nope\\n\";
        }
    }
}
",
        &[("PORT", p.to_string())],
    );
    let _rf = Ringfront::start(&cfg);
    let tlv = |t: u8, v: &[u8]| {
        let mut b = vec![t];
        b.extend_from_slice(&(v.len() as u16).to_be_bytes());
        b.extend_from_slice(v);
        b
    };
    let mut ssl = vec![0x01, 0, 0, 0, 255];
    ssl.extend(tlv(0x21, b"TLSv1.2"));
    ssl.extend(tlv(0x22, b"example.com"));
    let mut body = inet([192, 0, 2, 1], [192, 0, 2, 2], 1, 2);
    body.extend(tlv(0x01, b"h2"));
    body.extend(tlv(0x02, b"a.test"));
    body.extend(tlv(0x20, &ssl));
    body.extend(tlv(0xae, b"12345"));
    let got = exchange(p, &with(v2(0x21, 0x11, &body), GET), None);
    assert!(
        got.contains("\\r\\n\\r\\nh2|a.test|12345|255|example.com|TLSv1.2||\\n"),
        "{got}"
    );
    let got = exchange(
        p,
        format!("PROXY TCP4 1.1.1.1 2.2.2.2 1 2\r\n{GET}").as_bytes(),
        None,
    );
    assert!(got.contains("\\r\\n\\r\\n|||||||\\n"), "{got}");
}
