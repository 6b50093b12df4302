//! `ssl_crl` against real nginx: a client certificate the CA's revocation list names is
//! `FAILED:certificate revoked`, one it does not name `SUCCESS`, and with a list from
//! another CA only (no list for the client's issuer) `FAILED:unable to get certificate
//! CRL`, as nginx's OpenSSL (`CRL_CHECK_ALL`) says; `proxy_ssl_crl` refuses a revoked
//! upstream. Clients are curl with client certificates; lists are made with `openssl ca`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::fill;
use ringfront_testkit::pki::{CertFiles, Key, Pki};
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn p(path: &Path) -> String {
    path.display().to_string()
}

struct Certs {
    _dir: TempDir,
    pki: Pki,
    server: CertFiles,
    good: CertFiles,
    revoked: CertFiles,
    crl: std::path::PathBuf,
    other_crl: std::path::PathBuf,
}

fn certs() -> Certs {
    let dir = TempDir::new("rf-crl");
    let pki = Pki::new(dir.path(), "crl");
    let server = pki.server("server", Key::EcdsaP256, &["a.test"]);
    let good = pki.client("good", "good client");
    let revoked = pki.client("revoked", "revoked client");
    let crl = pki.crl("list", &[&revoked]);
    let other = Pki::new(dir.path(), "other");
    let other_crl = other.crl("list", &[]);
    Certs {
        _dir: dir,
        pki,
        server,
        good,
        revoked,
        crl,
        other_crl,
    }
}

fn config(c: &Certs, port: u16, crl: &Path) -> String {
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name a.test;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        ssl_verify_client optional_no_ca;
        ssl_client_certificate {CA};
        ssl_crl {CRL};
        add_header X-Verify $ssl_client_verify always;
        location / { return 200 \"ok\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", p(&c.server.cert)),
            ("KEY", p(&c.server.key)),
            ("CA", p(&c.pki.ca.cert)),
            ("CRL", p(crl)),
        ],
    )
}

/// The status and `$ssl_client_verify` (from `X-Verify`) of a request with `client`'s
/// certificate.
fn verify(c: &Certs, port: u16, client: &CertFiles) -> String {
    let o = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(&c.pki.ca.cert)
        .arg("--resolve")
        .arg(format!("a.test:{port}:127.0.0.1"))
        .arg("--cert")
        .arg(&client.cert)
        .arg("--key")
        .arg(&client.key)
        .args(["-o", "/dev/null", "-D", "-"])
        .arg(format!("https://a.test:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&o.stdout).into_owned();
    let status = head.split_whitespace().nth(1).unwrap_or("-").to_string();
    let verdict = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Verify: "))
        .unwrap_or("-")
        .trim_end();
    format!("{status} {verdict}")
}

fn verdicts(
    c: &Certs,
    crl: &Path,
    start: impl Fn(&str, u16) -> Box<dyn std::any::Any>,
) -> Vec<String> {
    let port = common::port();
    let _server = start(&config(c, port, crl), port);
    vec![verify(c, port, &c.good), verify(c, port, &c.revoked)]
}

#[test]
fn revocation_lists_judge_client_certificates_as_nginx() {
    let c = certs();
    let nginx = |conf: &str, port| Box::new(Nginx::start(conf, port)) as Box<dyn std::any::Any>;
    let rf = |conf: &str, _| Box::new(Ringfront::start(conf)) as Box<dyn std::any::Any>;
    for crl in [&c.crl, &c.other_crl] {
        let n = verdicts(&c, crl, nginx);
        let r = verdicts(&c, crl, rf);
        println!("{}: nginx {n:?} ringfront {r:?}", crl.display());
        assert_eq!(r, n);
    }
    assert_eq!(
        verdicts(&c, &c.crl, rf),
        ["200 SUCCESS", "400 FAILED:certificate revoked"]
    );
    assert_eq!(
        verdicts(&c, &c.other_crl, rf)[0],
        "400 FAILED:unable to get certificate CRL"
    );
}

fn backend_config(port: u16, server: &CertFiles) -> String {
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"upstream ok\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", p(&server.cert)),
            ("KEY", p(&server.key)),
        ],
    )
}

fn front_config(c: &Certs, port: u16, upstream: u16, crl: &Path) -> String {
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass https://127.0.0.1:{UP};
            proxy_ssl_verify on;
            proxy_ssl_name a.test;
            proxy_ssl_trusted_certificate {CA};
            proxy_ssl_crl {CRL};
        }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("UP", upstream.to_string()),
            ("CA", p(&c.pki.ca.cert)),
            ("CRL", p(crl)),
        ],
    )
}

#[test]
fn proxy_ssl_crl_refuses_a_revoked_upstream_as_nginx() {
    let c = certs();
    let pki = &c.pki;
    let revoked_server = pki.server("revoked-server", Key::EcdsaP256, &["a.test"]);
    let list = pki.crl("servers", &[&revoked_server]);
    let mut seen = Vec::new();
    for (server, crl) in [(&c.server, &list), (&revoked_server, &list)] {
        let up = common::port();
        let _backend = Nginx::start(&backend_config(up, server), up);
        let (np, rp) = (common::port(), common::port());
        let _n = Nginx::start(&front_config(&c, np, up, crl), np);
        let _r = Ringfront::start(&front_config(&c, rp, up, crl));
        let n = ringfront_testkit::http::get(("127.0.0.1", np), "/");
        let r = ringfront_testkit::http::get(("127.0.0.1", rp), "/");
        assert_eq!(r.status, n.status);
        seen.push(r.status);
    }
    assert_eq!(seen, [200, 502]);
}
