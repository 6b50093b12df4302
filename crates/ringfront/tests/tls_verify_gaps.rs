//! Differential, against real nginx: what `ssl_verify_client` servers put in the
//! CertificateRequest (the CA names of `ssl_client_certificate` only, each once; none of
//! `ssl_trusted_certificate`), and nginx's 421 for a request whose `Host` differs from the
//! SNI name and selects a server that verifies clients. The client is `openssl s_client`,
//! which prints the CA names it was sent and the HTTP answer.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::fill;
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn openssl(args: &[&str]) {
    let ok = Command::new("openssl")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs")
        .success();
    assert!(ok, "openssl {args:?}");
}

/// A self-signed certificate `NAME.crt` / `NAME.key` with CN `name`.
fn self_signed(dir: &Path, name: &str) {
    let p = |ext: &str| dir.join(format!("{name}.{ext}")).display().to_string();
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "2",
        "-subj",
        &format!("/CN={name}"),
        "-out",
        &p("crt"),
        "-keyout",
        &p("key"),
    ]);
}

const CONFIG: &str = "worker_processes 1;
events {}
http {
    access_log off;
    add_header X-Verify $ssl_client_verify always;
    ssl_certificate {D}/1.example.com.crt;
    ssl_certificate_key {D}/1.example.com.key;
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name on;
        ssl_verify_client on;
        ssl_client_certificate {D}/2.example.com.crt;
        location / { return 200 \"on\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name optional;
        ssl_verify_client optional;
        ssl_client_certificate {D}/2.example.com.crt;
        ssl_trusted_certificate {D}/3.example.com.crt;
        location / { return 200 \"optional\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name dup;
        ssl_verify_client optional;
        ssl_client_certificate {D}/dup.crt;
        location / { return 200 \"dup\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name noca;
        ssl_verify_client optional_no_ca;
        ssl_client_certificate {D}/both.crt;
        ssl_trusted_certificate {D}/3.example.com.crt;
        location / { return 200 \"noca\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name off;
        ssl_client_certificate {D}/2.example.com.crt;
        location / { return 200 \"off\"; }
    }
}
";

/// (SNI, Host, client certificate).
const CASES: &[(&str, &str, Option<&str>)] = &[
    ("optional", "optional", Some("3.example.com")),
    ("optional", "optional", None),
    ("dup", "dup", None),
    ("noca", "noca", Some("1.example.com")),
    ("on", "on", Some("2.example.com")),
    ("off", "off", None),
    // Misdirected: the Host's server (or the default, `on`) verifies clients.
    ("optional", "localhost", None),
    ("on", "localhost", None),
    ("off", "optional", Some("2.example.com")),
    ("optional", "dup", Some("2.example.com")),
    // Not misdirected: the Host's server does not verify, or the names are the same.
    ("optional", "off", None),
    ("optional", "OPTIONAL.", None),
];

/// The CA names sent, the status line, `X-Verify` and the body of one exchange.
fn exchange(dir: &Path, port: u16, (sni, host, cert): (&str, &str, Option<&str>)) -> String {
    let mut cmd = Command::new("openssl");
    cmd.args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", sni, "-ign_eof"]);
    if let Some(c) = cert {
        cmd.arg("-cert").arg(dir.join(format!("{c}.crt")));
        cmd.arg("-key").arg(dir.join(format!("{c}.key")));
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("s_client runs");
    let req = format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("s_client ends");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let mut names = Vec::new();
    if lines.any(|l| l.starts_with("Acceptable client certificate CA names")) {
        names = lines
            .by_ref()
            .take_while(|l| l.starts_with("CN"))
            .map(str::to_string)
            .collect();
    }
    // The answer may follow other output on the same line.
    let answer = text.find("HTTP/1.1 ").map_or("", |i| &text[i..]);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let status = head.lines().next().unwrap_or("-");
    let verify = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Verify: "))
        .unwrap_or("-");
    // Other output (session tickets) may follow the body.
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let body = body.get(..length).unwrap_or(body);
    let body = body.lines().next().unwrap_or("");
    format!("{names:?} {status} {verify} {body}")
}

fn run_all(dir: &Path, conf: impl Fn(u16) -> String, nginx: bool) -> Vec<String> {
    let port = common::port();
    let text = conf(port);
    let _n = nginx.then(|| Nginx::start(&text, port));
    let _r = (!nginx).then(|| Ringfront::start(&text));
    CASES.iter().map(|c| exchange(dir, port, *c)).collect()
}

#[test]
fn client_ca_names_and_misdirected_requests_match_nginx() {
    let tmp = TempDir::new("rf-verify-gaps");
    let d = tmp.path();
    for n in ["1.example.com", "2.example.com", "3.example.com"] {
        self_signed(d, n);
    }
    let two = std::fs::read_to_string(d.join("2.example.com.crt")).unwrap();
    let three = std::fs::read_to_string(d.join("3.example.com.crt")).unwrap();
    std::fs::write(d.join("dup.crt"), two.repeat(2)).unwrap();
    std::fs::write(d.join("both.crt"), format!("{two}{three}{two}")).unwrap();
    let conf = |port: u16| {
        fill(
            CONFIG,
            &[("PORT", port.to_string()), ("D", d.display().to_string())],
        )
    };
    let nginx = run_all(d, conf, true);
    let ours = run_all(d, conf, false);
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        println!("{:?}\n  nginx:     {n}\n  ringfront: {r}", CASES[i]);
    }
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(r, n, "{:?}", CASES[i]);
    }
    // What the cases are for, on nginx's own answers.
    let two_only = "[\"CN = 2.example.com\"]";
    assert!(nginx[0].starts_with(two_only), "{}", nginx[0]);
    assert!(nginx[0].contains("200 OK SUCCESS"), "{}", nginx[0]);
    assert!(nginx[2].starts_with(two_only), "{}", nginx[2]);
    assert!(
        nginx[3].starts_with("[\"CN = 2.example.com\", \"CN = 3.example.com\"]"),
        "{}",
        nginx[3]
    );
    for i in 6..10 {
        assert!(nginx[i].contains("421 Misdirected Request"), "{}", nginx[i]);
    }
    assert!(nginx[10].ends_with("off"), "{}", nginx[10]);
    assert!(nginx[11].ends_with("optional"), "{}", nginx[11]);
}
