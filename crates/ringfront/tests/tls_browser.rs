//! A real browser over HTTPS: headless Chromium loads a page through ringfront's `listen
//! ... ssl` with a test certificate (trusted by pinning its public key, the way Chromium
//! lets a test trust a certificate without a system CA store), the page's script fetches
//! more through the same TLS connection, and the DOM shows what arrived.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::fill;
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{browser, Ringfront, TempDir};

const PAGE: &str = "<!doctype html><html><head><title>t</title></head><body>\
<p id=\"out\">waiting</p><script>\
fetch('/data').then(r => r.text()).then(t => {\
document.getElementById('out').textContent = 'got ' + t + ' over ' + location.protocol;\
});</script></body></html>";

/// A backend answering `/` with the page and `/data` with `from-backend`, keep-alive.
fn page_backend() -> u16 {
    let l = ringfront_testkit::fresh_listener();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    port
}

fn serve(s: std::net::TcpStream) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("/").to_string();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
        }
        let (ctype, body) = match path.as_str() {
            "/data" => ("text/plain", "from-backend"),
            _ => ("text/html", PAGE),
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if w.write_all(head.as_bytes()).is_err() || w.write_all(body.as_bytes()).is_err() {
            return;
        }
    }
}

/// base64(sha256(SubjectPublicKeyInfo)) of a PEM certificate, with the openssl command.
fn spki_pin(cert: &Path) -> String {
    let script = format!(
        "openssl x509 -in {} -pubkey -noout | openssl pkey -pubin -outform der \
         | openssl dgst -sha256 -binary | openssl base64",
        cert.display()
    );
    let o = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

#[test]
fn chromium_loads_a_page_and_its_fetch_through_tls() {
    let dir = TempDir::new("rf-tls-browser");
    let pki = Pki::new(dir.path(), "browser");
    let cert = pki.server("localhost", Key::EcdsaP256, &["localhost"]);
    let port = common::port();
    let logdir = TempDir::new("rf-tls-browser-log");
    let log = logdir.path().join("access.log");
    let _rf = Ringfront::start(&fill(
        "worker_processes 1;
events {}
http {
    log_format tls '$request $status $ssl_protocol $ssl_server_name $connection';
    access_log {LOG} tls;
    upstream app { server 127.0.0.1:{UP}; }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name localhost;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { proxy_pass http://app; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("UP", page_backend().to_string()),
            ("LOG", log.display().to_string()),
            ("CERT", cert.cert.display().to_string()),
            ("KEY", cert.key.display().to_string()),
        ],
    ));
    let extra = [
        format!(
            "--ignore-certificate-errors-spki-list={}",
            spki_pin(&cert.cert)
        ),
        "--virtual-time-budget=5000".to_string(),
    ];
    let url = format!("https://localhost:{port}/");
    let dom = browser::dump_dom_with(&url, &extra, Duration::from_secs(60)).expect("chromium");
    assert!(
        dom.contains("<p id=\"out\">got from-backend over https:</p>"),
        "{dom}"
    );
    // The log thread writes soon after the responses; wait (bounded) for both lines.
    let mut text = String::new();
    for _ in 0..500 {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().count() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("GET / HTTP/1.1 200 TLSv1.3 localhost")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("GET /data HTTP/1.1 200 TLSv1.3 localhost")),
        "{lines:?}"
    );
}
