//! Encrypted private keys against real nginx: `ssl_password_file` (passphrases tried line
//! by line, inherited from `http`, read once from a named pipe), a wrong or missing
//! passphrase refused at load as nginx refuses it, and `proxy_ssl_password_file` for the
//! client certificate shown to an upstream that asks for one.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::fill;
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// `openssl pkcs8 -topk8 -v2 aes-128-cbc`: the key rewritten encrypted with `pass`.
fn encrypt(key: &Path, out: &Path, pass: &str) {
    let o = Command::new("openssl")
        .args(["pkcs8", "-topk8", "-v2", "aes-128-cbc", "-in"])
        .arg(key)
        .arg("-out")
        .arg(out)
        .args(["-passout", &format!("pass:{pass}")])
        .output()
        .expect("openssl runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn edge(port: u16, cert: &Path, key: &Path, passwords: Option<&Path>) -> String {
    let pw = passwords.map_or(String::new(), |f| format!("ssl_password_file {};", p(f)));
    fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    {PW}
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"secret ok\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", p(cert)),
            ("KEY", p(key)),
            ("PW", pw),
        ],
    )
}

fn https_get(ca: &Path, port: u16) -> String {
    let o = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("a.test:{port}:127.0.0.1"))
        .arg(format!("https://a.test:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn encrypted_keys_load_with_their_passphrase_as_in_nginx() {
    let dir = TempDir::new("rf-keys");
    let pki = Pki::new(dir.path(), "keys");
    let server = pki.server("server", Key::Rsa2048, &["a.test"]);
    let locked = dir.path().join("locked.key");
    encrypt(&server.key, &locked, "s3cret");
    let many = dir.path().join("many");
    std::fs::write(&many, "wrong\r\n\r\ns3cret\r\n").unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "nope\n").unwrap();

    let check = |pw: Option<&Path>| {
        let conf = edge(common::port(), &server.cert, &locked, pw);
        let (n, ntext) = Nginx::run_check(&conf);
        let (r, rtext) = Ringfront::run_check(&conf);
        assert_eq!(
            r.success(),
            n.success(),
            "nginx: {ntext}\nringfront: {rtext}"
        );
        rtext
    };
    check(Some(&many));
    let bad = check(Some(&wrong));
    assert!(
        bad.contains("bad decrypt") && bad.contains("locked.key"),
        "{bad}"
    );
    let none = check(None);
    assert!(none.contains("problems getting password"), "{none}");

    // Served, and the passphrase read once from a named pipe as nginx reads it.
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "s3cret\n"))
    };
    let port = common::port();
    let _rf = Ringfront::start(&edge(port, &server.cert, &locked, Some(&fifo)));
    writer.join().unwrap().unwrap();
    assert_eq!(https_get(&pki.ca.cert, port), "secret ok");
}

#[test]
fn proxy_ssl_password_file_opens_the_client_key_for_upstreams() {
    let dir = TempDir::new("rf-keys-up");
    let pki = Pki::new(dir.path(), "up");
    let server = pki.server("server", Key::EcdsaP256, &["a.test"]);
    let client = pki.client("client", "edge");
    let locked = dir.path().join("client-locked.key");
    encrypt(&client.key, &locked, "pw");
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "pw\n").unwrap();
    let up = common::port();
    let backend = fill(
        "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        ssl_verify_client on;
        ssl_client_certificate {CA};
        location / { return 200 \"client $ssl_client_verify\"; }
    }
}
",
        &[
            ("PORT", up.to_string()),
            ("CERT", p(&server.cert)),
            ("KEY", p(&server.key)),
            ("CA", p(&pki.ca.cert)),
        ],
    );
    let _backend = Nginx::start(&backend, up);
    let front = |port: u16| {
        fill(
            "worker_processes 1;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass https://127.0.0.1:{UP};
            proxy_ssl_certificate {CERT};
            proxy_ssl_certificate_key {KEY};
            proxy_ssl_password_file {PW};
        }
    }
}
",
            &[
                ("PORT", port.to_string()),
                ("UP", up.to_string()),
                ("CERT", p(&client.cert)),
                ("KEY", p(&locked)),
                ("PW", p(&pw)),
            ],
        )
    };
    let (np, rp) = (common::port(), common::port());
    let _n = Nginx::start(&front(np), np);
    let _r = Ringfront::start(&front(rp));
    let n = ringfront_testkit::http::get(("127.0.0.1", np), "/");
    let r = ringfront_testkit::http::get(("127.0.0.1", rp), "/");
    assert_eq!((r.status, r.text()), (n.status, n.text()));
    assert_eq!(r.text(), "client SUCCESS");
}
