//! Differential: real nginx 1.22 and ringfront terminate TLS on the same configuration and
//! the same certificates, and curl asks both the same questions — which `server` SNI picks
//! (exact, wildcard, regex, unknown name, no name, a `Host` other than the SNI name), the
//! status codes and redirects (`Location` built with the `https` scheme), and the `$ssl_*`,
//! `$https` and `$scheme` values in the access log. Every answer and every log line must
//! agree once the listen port reads `PORT`.

mod common;

use ringfront_testkit::MaskPort;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fill, port};
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Backend, Nginx, Ringfront, TempDir};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    server_tokens off;
    # nginx 1.22's default is TLSv1 TLSv1.1 TLSv1.2; ringfront's, as nginx 1.23.4+, has 1.3.
    ssl_protocols TLSv1.2 TLSv1.3;
    log_format tls '$request|$status|$https|$scheme|$ssl_protocol|$ssl_cipher|$ssl_server_name|$ssl_session_reused|$server_name';
    access_log {LOG} tls;
    upstream up { server 127.0.0.1:{UP}; }
    server {
        listen 127.0.0.1:{PORT} ssl default_server;
        server_name default.test;
        ssl_certificate {DEF};
        ssl_certificate_key {DEFK};
        location / { return 200 \"default $ssl_server_name\\n\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name a.test;
        ssl_certificate {A};
        ssl_certificate_key {AK};
        location / { proxy_pass http://up; }
        location /who { return 200 \"a $ssl_server_name $https $scheme\\n\"; }
        location = /moved { return 301 /new; }
        location = /gone { return 404; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name *.wild.test;
        ssl_certificate {W};
        ssl_certificate_key {WK};
        location / { return 200 \"wild $host\\n\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name ~^r\\d+\\.test$;
        ssl_certificate {R};
        ssl_certificate_key {RK};
        location / { return 302 /to/regex; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name nocert.test;
        location / { return 200 \"nocert $ssl_server_name\\n\"; }
    }
}
";

/// (SNI name or none, Host header, path, extra curl arguments)
type Case = (
    Option<&'static str>,
    &'static str,
    &'static str,
    &'static [&'static str],
);

const CASES: &[Case] = &[
    (Some("a.test"), "a.test", "/who", &[]),
    (Some("a.test"), "a.test", "/", &[]),
    (Some("a.test"), "a.test", "/moved", &[]),
    (Some("a.test"), "a.test", "/gone", &[]),
    (Some("a.test"), "a.test", "/who", &["--tls-max", "1.2"]),
    (Some("x.wild.test"), "x.wild.test", "/", &[]),
    (Some("r42.test"), "r42.test", "/", &[]),
    // An unknown name: the default server, and its certificate (not for this name).
    (Some("unknown.test"), "unknown.test", "/", &["-k"]),
    // The request's Host picks the server for the request; SNI only picked the certificate.
    (Some("a.test"), "x.wild.test", "/", &[]),
    (None, "a.test", "/who", &[]),
    // A server without a certificate of its own: the default server's is presented.
    (Some("nocert.test"), "nocert.test", "/", &["-k"]),
];

/// One request with curl; the status line, `Location` and body, ports normalised.
fn ask(port: u16, ca: &Path, case: &Case) -> String {
    let (sni, host, path, extra) = case;
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-i", "--max-time", "10", "--cacert"])
        .arg(ca)
        .args(["-H", &format!("Host: {host}")])
        .args(*extra);
    let url = match sni {
        Some(name) => {
            cmd.arg("--resolve").arg(format!("{name}:{port}:127.0.0.1"));
            format!("https://{name}:{port}{path}")
        }
        // No SNI: an address, and curl does not check the certificate's name against it.
        None => {
            cmd.arg("-k");
            format!("https://127.0.0.1:{port}{path}")
        }
    };
    let o = cmd
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    // The product token of the built-in pages (`server_tokens off`) reads TOKEN.
    let text = String::from_utf8_lossy(&o.stdout)
        .mask_port(port)
        .replace("<center>nginx</center>", "<center>TOKEN</center>")
        .replace("<center>ringfront</center>", "<center>TOKEN</center>");
    let err = String::from_utf8_lossy(&o.stderr);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or_default().to_string();
    let location: Vec<&str> = text
        .split("\r\n")
        .filter(|l| l.to_ascii_lowercase().starts_with("location:"))
        .collect();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    format!("{sni:?} {host}{path} -> {status} {location:?} {body:?} {err}")
}

fn log_lines(path: &Path, n: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= n || Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The certificates both servers use (the same files): `(placeholder, path)` pairs.
fn certificates(pki: &Pki) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (cert, key, file, names) in [
        ("DEF", "DEFK", "def", &["default.test"][..]),
        ("A", "AK", "a", &["a.test"][..]),
        ("W", "WK", "w", &["*.wild.test"][..]),
        ("R", "RK", "r", &["r42.test"][..]),
    ] {
        let f = pki.server(file, Key::EcdsaP256, names);
        out.push((cert, f.cert.display().to_string()));
        out.push((key, f.key.display().to_string()));
    }
    out
}

fn config(port: u16, up: u16, log: &Path, certs: &[(&str, String)]) -> String {
    let mut vars = vec![
        ("PORT", port.to_string()),
        ("UP", up.to_string()),
        ("LOG", log.display().to_string()),
    ];
    vars.extend(certs.iter().cloned());
    fill(CONFIG, &vars)
}

/// The answers and log lines of one proxy for every case.
fn session(port: u16, ca: &Path, log: &Path) -> (Vec<String>, Vec<String>) {
    let answers: Vec<String> = CASES.iter().map(|c| ask(port, ca, c)).collect();
    let lines = log_lines(log, CASES.len());
    (answers, lines)
}

#[test]
fn sni_status_redirects_and_ssl_variables_match_nginx() {
    let dir = TempDir::new("rf-tls-diff");
    let pki = Pki::new(dir.path(), "diff");
    let backend = Backend::start();
    let ca = pki.ca.cert.clone();
    let certs = certificates(&pki);

    let np = port();
    let nlog = dir.path().join("nginx.log");
    let nginx = Nginx::start(&config(np, backend.port(), &nlog, &certs), np);
    let (n_answers, n_log) = session(np, &ca, &nlog);
    drop(nginx);

    let rp = port();
    let rlog = dir.path().join("ringfront.log");
    let _rf = Ringfront::start(&config(rp, backend.port(), &rlog, &certs));
    let (r_answers, r_log) = session(rp, &ca, &rlog);

    // The backend's answer names the port it was reached on, the same for both.
    assert_eq!(n_answers.len(), CASES.len());
    for (n, r) in n_answers.iter().zip(&r_answers) {
        assert_eq!(n, r, "nginx (left) and ringfront (right) answer alike");
    }
    assert!(n_answers[0].contains("200 OK"), "{}", n_answers[0]);
    assert!(
        n_answers[7].contains("default unknown.test"),
        "{}",
        n_answers[7]
    );
    assert!(
        n_answers[2].contains("https://a.test:PORT/new"),
        "{}",
        n_answers[2]
    );
    assert_eq!(n_log.len(), CASES.len(), "{n_log:?}");
    assert_eq!(r_log.len(), CASES.len(), "{r_log:?}");
    assert!(
        n_log[0].contains("|TLSv1.3|TLS_AES_256_GCM_SHA384|a.test|.|"),
        "{}",
        n_log[0]
    );
    for (n, r) in n_log.iter().zip(&r_log) {
        assert_eq!(n, r, "access log lines agree");
    }
    assert!(
        n_log[4].contains("|TLSv1.2|ECDHE-ECDSA-AES256-GCM-SHA384|a.test|.|"),
        "{}",
        n_log[4]
    );
}
