//! `proxy_ssl_certificate` / `proxy_ssl_certificate_key` with variables (nginx 1.21.0)
//! against real nginx: the certificate named by the request's `$arg_cert` is the one the
//! upstream (a real nginx with `ssl_verify_client optional_no_ca`) sees — its verdict and
//! subject come back in headers — an empty name sends none, an encrypted key opens with
//! `proxy_ssl_password_file`, a file that cannot be loaded is a 500, and a file replaced
//! between requests is read again (ringfront caches loads per worker by path and pools
//! upstream connections, nginx loads per request).

mod common;

use std::path::Path;

use common::fill;
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn p(path: &Path) -> String {
    path.display().to_string()
}

fn backend_config(port: u16, pki: &Pki, server: &ringfront_testkit::pki::CertFiles) -> String {
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        ssl_verify_client optional_no_ca;
        ssl_client_certificate {CA};
        add_header X-Verify $ssl_client_verify always;
        add_header X-Name $ssl_client_s_dn always;
        location / { return 200 \"upstream\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", p(&server.cert)),
            ("KEY", p(&server.key)),
            ("CA", p(&pki.ca.cert)),
        ],
    )
}

/// `reuse`: `proxy_ssl_session_reuse`.
fn front_config(port: u16, up: u16, dir: &Path, reuse: &str) -> String {
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        proxy_ssl_certificate {DIR}/$arg_cert.crt;
        proxy_ssl_certificate_key {DIR}/$arg_cert.key;
        proxy_ssl_password_file {DIR}/password;
        proxy_ssl_session_reuse {REUSE};
        location / {
            proxy_pass https://127.0.0.1:{UP};
        }
        location /none {
            proxy_pass https://127.0.0.1:{UP};
            proxy_ssl_certificate $arg_cert;
            proxy_ssl_certificate_key $arg_cert;
        }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("UP", up.to_string()),
            ("DIR", p(dir)),
            ("REUSE", reuse.to_string()),
        ],
    )
}

/// `STATUS VERIFY NAME` of one request.
fn ask(port: u16, path: &str) -> String {
    let r = ringfront_testkit::http::get(("127.0.0.1", port), path);
    let h = |n| r.header(n).unwrap_or("-").to_string();
    format!("{} {} {}", r.status, h("X-Verify"), h("X-Name"))
}

fn copy(dir: &Path, from: &str, to: &str) {
    for ext in ["crt", "key"] {
        std::fs::copy(
            dir.join(format!("{from}.{ext}")),
            dir.join(format!("{to}.{ext}")),
        )
        .unwrap();
    }
}

#[test]
fn the_requests_certificate_is_the_one_the_upstream_sees_as_with_nginx() {
    let t = TempDir::new("rf-pscv");
    let dir = t.path();
    let pki = Pki::new(dir, "vars");
    let server = pki.server("server", Key::EcdsaP256, &["a.test"]);
    let other = Pki::new(dir, "other");
    for (name, ca, cn) in [
        ("one", &pki, "one"),
        ("two", &pki, "two"),
        ("stranger", &other, "stranger"),
    ] {
        let f = ca.client(name, cn);
        std::fs::copy(&f.cert, dir.join(format!("{name}.crt"))).unwrap();
        std::fs::copy(&f.key, dir.join(format!("{name}.key"))).unwrap();
    }
    // An encrypted key, as the suite makes it (`genrsa -aes128`), self-signed.
    let sh = |cmd: &str| {
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    };
    sh("openssl genrsa -out enc.key -passout pass:secret -aes128 2048");
    sh("openssl req -x509 -new -subj /CN=enc/ -days 2 -key enc.key -passin pass:secret -out enc.crt");
    std::fs::write(dir.join("password"), "wrong\nsecret\n").unwrap();
    copy(dir, "one", "moving");

    let up = common::port();
    let _backend = Nginx::start(&backend_config(up, &pki, &server), up);
    let (np, rp) = (common::port(), common::port());
    // Sessions off, as in nginx's suite: nginx 1.22 keeps one session per peer whatever the
    // certificate, and resumes it for a request naming another (see the test below).
    let _n = Nginx::start(&front_config(np, up, dir, "off"), np);
    let _r = Ringfront::start(&front_config(rp, up, dir, "off"));
    let paths = [
        "/?cert=one",
        "/?cert=two",
        "/?cert=one",
        "/?cert=stranger",
        "/?cert=enc",
        "/none",
        "/?cert=missing",
        "/?cert=moving",
    ];
    let round = |port| paths.iter().map(|p| ask(port, p)).collect::<Vec<_>>();
    let (n, r) = (round(np), round(rp));
    println!("nginx {n:?}\nringfront {r:?}");
    assert_eq!(r, n);
    assert_eq!(r[0], "200 SUCCESS CN=one");
    assert_eq!(r[1], "200 SUCCESS CN=two");
    assert_eq!(r[2], r[0]);
    assert!(
        r[3].starts_with("200 FAILED:") && r[3].ends_with("CN=stranger"),
        "{}",
        r[3]
    );
    assert!(r[4].ends_with(" CN=enc"), "{}", r[4]);
    assert_eq!(r[5], "200 NONE -");
    assert!(r[6].starts_with("500 "), "{}", r[6]);
    assert_eq!(r[7], "200 SUCCESS CN=one");

    // The files behind a name change: the next request offers the new certificate.
    copy(dir, "two", "moving");
    let (n, r) = (ask(np, "/?cert=moving"), ask(rp, "/?cert=moving"));
    assert_eq!(r, n);
    assert_eq!(r, "200 SUCCESS CN=two");
}

#[test]
fn an_unloadable_certificate_is_logged_and_sessions_stay_per_certificate() {
    let t = TempDir::new("rf-pscv-log");
    let dir = t.path();
    let pki = Pki::new(dir, "vars");
    let server = pki.server("server", Key::EcdsaP256, &["a.test"]);
    std::fs::write(dir.join("password"), "x\n").unwrap();
    let up = common::port();
    let _backend = Nginx::start(&backend_config(up, &pki, &server), up);
    let port = common::port();
    let rf = Ringfront::start(&front_config(port, up, dir, "on").replace(
        "worker_processes 1;",
        "worker_processes 1;\nerror_log stderr error;",
    ));
    assert!(ask(port, "/?cert=missing").starts_with("500 "));
    // With sessions reused, each certificate has its own: the upstream sees the one named
    // (nginx resumes the first certificate's session for every request to the peer).
    let f = pki.client("one", "one");
    std::fs::copy(&f.cert, dir.join("one.crt")).unwrap();
    std::fs::copy(&f.key, dir.join("one.key")).unwrap();
    let f = pki.client("two", "two");
    std::fs::copy(&f.cert, dir.join("two.crt")).unwrap();
    std::fs::copy(&f.key, dir.join("two.key")).unwrap();
    let seen: Vec<String> = ["/?cert=one", "/?cert=two", "/none", "/?cert=one"]
        .iter()
        .map(|p| ask(port, p))
        .collect();
    assert_eq!(
        seen,
        [
            "200 SUCCESS CN=one",
            "200 SUCCESS CN=two",
            "200 NONE -",
            "200 SUCCESS CN=one"
        ]
    );
    let want = format!(
        "cannot load certificate \"{}/missing.crt\": BIO_new_file() failed",
        dir.display()
    );
    assert!(
        rf.wait_for_stderr(&want, std::time::Duration::from_secs(10)),
        "{:?}",
        rf.stderr_lines()
    );
}
