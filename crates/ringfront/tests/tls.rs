//! HTTPS at the edge with real clients: curl and `openssl s_client` against `listen ... ssl`
//! (SNI choosing the server, RSA and ECDSA side by side, TLS 1.2 and 1.3, resumption across
//! workers, client certificates, plain HTTP on the TLS port, `ssl_reject_handshake`), the
//! `$ssl_*` variables in the access log, certificate errors at `-t`, and certificates
//! reloaded on HUP without dropping a connection.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::pki::{CertFiles, Key, Pki};
use ringfront_testkit::{Backend, Ringfront, TempDir};

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn run(cmd: &mut Command) -> Run {
    let o = cmd.stdin(Stdio::null()).output().expect("command runs");
    Run {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `curl` for `https://NAME:PORT/PATH` resolved to 127.0.0.1, trusting `ca`.
fn curl(ca: &Path, name: &str, port: u16, path: &str, extra: &[&str]) -> Run {
    run(Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("{name}:{port}:127.0.0.1"))
        .args(extra)
        .arg(format!("https://{name}:{port}{path}")))
}

/// `openssl s_client` sending one request; `-brief` facts and the response on stdout.
fn s_client(port: u16, args: &[&str], request: &str) -> Run {
    // -ign_eof: read the answer to its end rather than quit when the request is written.
    let mut child = Command::new("openssl")
        .args(["s_client", "-ign_eof"])
        .arg("-connect")
        .arg(format!("127.0.0.1:{port}"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

const GET: &str = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";

struct Certs {
    _dir: TempDir,
    pki: Pki,
    a_ec: CertFiles,
    a_rsa: CertFiles,
    b_ec: CertFiles,
    client: CertFiles,
    stranger: CertFiles,
}

fn certs() -> Certs {
    let dir = TempDir::new("rf-tls-pki");
    let pki = Pki::new(dir.path(), "edge");
    let other = Pki::new(dir.path(), "other");
    Certs {
        a_ec: pki.server("a-ec", Key::EcdsaP256, &["a.test", "127.0.0.1"]),
        a_rsa: pki.server("a-rsa", Key::Rsa2048, &["a.test"]),
        b_ec: pki.server("b-ec", Key::EcdsaP256, &["b.test"]),
        client: pki.client("client", "alice"),
        stranger: other.client("stranger", "mallory"),
        pki,
        _dir: dir,
    }
}

fn p(f: &Path) -> String {
    f.display().to_string()
}

/// Waits (bounded) until `path` holds at least `lines` lines; its text.
fn log_lines(path: &Path, lines: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(str::to_string).collect();
        if got.len() >= lines || Instant::now() > end {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn edge_config(c: &Certs, port: u16, backend: u16, log: &Path, extra: &str) -> String {
    fill(
        "worker_processes 2;
error_log stderr info;
events { worker_connections 20000; }
http {
    log_format tls '$scheme $https $ssl_protocol $ssl_cipher $ssl_server_name $ssl_session_reused $ssl_client_verify $status';
    access_log {LOG} tls;
    upstream b { server 127.0.0.1:{BACKEND}; }
    server {
        listen 127.0.0.1:{PORT} ssl default_server;
        ssl_reject_handshake on;
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name a.test;
        ssl_certificate {AEC};
        ssl_certificate_key {AECK};
        ssl_certificate {ARSA};
        ssl_certificate_key {ARSAK};
        {EXTRA}
        location / { proxy_pass http://b; }
        location /who { return 200 \"a $ssl_server_name\"; }
    }
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name b.test;
        ssl_certificate {BEC};
        ssl_certificate_key {BECK};
        location / { return 200 \"b\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("BACKEND", backend.to_string()),
            ("LOG", p(log)),
            ("AEC", p(&c.a_ec.cert)),
            ("AECK", p(&c.a_ec.key)),
            ("ARSA", p(&c.a_rsa.cert)),
            ("ARSAK", p(&c.a_rsa.key)),
            ("BEC", p(&c.b_ec.cert)),
            ("BECK", p(&c.b_ec.key)),
            ("EXTRA", extra.to_string()),
        ],
    )
}

#[test]
fn curl_gets_the_backend_over_tls_and_the_log_has_the_ssl_variables() {
    let c = certs();
    let backend = Backend::start();
    let port = common::port();
    let logdir = TempDir::new("rf-tls-log");
    let log = logdir.path().join("access.log");
    let _rf = Ringfront::start(&edge_config(&c, port, backend.port(), &log, ""));
    let ca = &c.pki.ca.cert;

    let r = curl(ca, "a.test", port, "/", &[]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("backend"), "{}", r.out);
    let r = curl(ca, "a.test", port, "/", &["--tls-max", "1.2"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let r = curl(ca, "b.test", port, "/", &[]);
    assert_eq!((r.code, r.out.as_str()), (0, "b"), "{}", r.err);

    let lines = log_lines(&log, 3);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0],
        "https on TLSv1.3 TLS_AES_256_GCM_SHA384 a.test . NONE 200"
    );
    assert_eq!(
        lines[1],
        "https on TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384 a.test . NONE 200"
    );
    assert!(lines[2].ends_with("b.test . NONE 200"), "{}", lines[2]);
}

#[test]
fn sni_chooses_the_server_and_unknown_names_are_rejected() {
    let c = certs();
    let backend = Backend::start();
    let port = common::port();
    let logdir = TempDir::new("rf-tls-log");
    let _rf = Ringfront::start(&edge_config(
        &c,
        port,
        backend.port(),
        &logdir.path().join("a.log"),
        "",
    ));
    let ca = &c.pki.ca.cert;
    let r = curl(ca, "a.test", port, "/who", &[]);
    assert_eq!(r.out, "a a.test");
    // The certificate of b.test is b's (curl verifies the name against it).
    let r = curl(ca, "b.test", port, "/", &[]);
    assert_eq!((r.code, r.out.as_str()), (0, "b"), "{}", r.err);
    // ssl_reject_handshake on the default server: an unknown name, and no SNI at all.
    let r = curl(ca, "c.test", port, "/", &[]);
    assert_eq!(r.code, 35, "handshake refused: {} {}", r.out, r.err);
    let r = s_client(port, &["-noservername", "-brief"], GET);
    assert!(
        r.err.contains("unrecognized name") || r.err.contains("alert"),
        "{}",
        r.err
    );
}

#[test]
fn ecdsa_and_rsa_certificates_side_by_side_are_chosen_by_the_client() {
    let c = certs();
    let backend = Backend::start();
    let port = common::port();
    let logdir = TempDir::new("rf-tls-log");
    let _rf = Ringfront::start(&edge_config(
        &c,
        port,
        backend.port(),
        &logdir.path().join("a.log"),
        "",
    ));
    let ca = p(&c.pki.ca.cert);
    let ec = s_client(port, &["-servername", "a.test", "-CAfile", &ca], GET);
    assert!(
        ec.out.contains("Server public key is 256 bit"),
        "{}",
        ec.out
    );
    let rsa = s_client(
        port,
        &[
            "-servername",
            "a.test",
            "-CAfile",
            &ca,
            "-tls1_2",
            "-cipher",
            "ECDHE-RSA-AES128-GCM-SHA256",
        ],
        GET,
    );
    assert!(
        rsa.out.contains("Server public key is 2048 bit"),
        "{}",
        rsa.out
    );
    assert!(
        rsa.out.contains("ECDHE-RSA-AES128-GCM-SHA256"),
        "{}",
        rsa.out
    );
    assert!(
        rsa.out.contains("Verify return code: 0 (ok)"),
        "{}",
        rsa.out
    );
}

/// `-sess_out` on one connection, then `-sess_in` on several: every one is resumed, though
/// two workers take the connections (the ticket keys are shared).
fn resumes(c: &Certs, port: u16, proto: &str) {
    let dir = TempDir::new("rf-tls-sess");
    let sess = p(&dir.path().join("s.pem"));
    let ca = p(&c.pki.ca.cert);
    let base = ["-servername", "a.test", "-CAfile", &ca, proto];
    let mut args = base.to_vec();
    args.extend(["-sess_out", &sess]);
    let first = s_client(port, &args, GET);
    assert!(first.out.contains("New, TLSv1."), "{}", first.out);
    for _ in 0..8 {
        let mut args = base.to_vec();
        args.extend(["-sess_in", &sess]);
        let r = s_client(port, &args, GET);
        assert!(r.out.contains("Reused, TLSv1."), "{proto}: {}", r.out);
        assert!(r.out.contains("HTTP/1.1 200"), "{}", r.out);
        // Connection: close ends with close_notify, as nginx's SSL_shutdown.
        assert!(!r.err.contains("unexpected eof"), "{}", r.err);
    }
}

#[test]
fn sessions_resume_across_workers_by_ticket_and_by_cache() {
    let c = certs();
    let backend = Backend::start();
    let port = common::port();
    let logdir = TempDir::new("rf-tls-log");
    let log = logdir.path().join("a.log");
    let _rf = Ringfront::start(&edge_config(&c, port, backend.port(), &log, ""));
    resumes(&c, port, "-tls1_3");
    resumes(&c, port, "-tls1_2");
    let lines = log_lines(&log, 18);
    assert_eq!(
        lines.iter().filter(|l| l.contains(" r NONE")).count(),
        16,
        "{lines:?}"
    );

    // Tickets off, a shared cache on: TLS 1.2 resumes by session id.
    let port2 = common::port();
    let _rf2 = Ringfront::start(&edge_config(
        &c,
        port2,
        backend.port(),
        &logdir.path().join("b.log"),
        "ssl_session_tickets off; ssl_session_cache shared:SSL:1m;",
    ));
    resumes(&c, port2, "-tls1_2");
}

#[test]
fn plain_http_to_the_tls_port_gets_nginx_400() {
    let c = certs();
    let backend = Backend::start();
    let port = common::port();
    let logdir = TempDir::new("rf-tls-log");
    let _rf = Ringfront::start(&edge_config(
        &c,
        port,
        backend.port(),
        &logdir.path().join("a.log"),
        "",
    ));
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert!(got.contains("Connection: close\r\n"), "{got}");
    assert!(
        got.contains(
            "<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>"
        ),
        "{got}"
    );
}

#[test]
fn client_certificates_are_asked_for_and_judged_as_nginx_does() {
    let c = certs();
    let backend = Backend::start();
    let port = common::port();
    let logdir = TempDir::new("rf-tls-log");
    let log = logdir.path().join("a.log");
    let extra = format!(
        "ssl_verify_client on; ssl_client_certificate {};",
        p(&c.pki.ca.cert)
    );
    let _rf = Ringfront::start(&edge_config(&c, port, backend.port(), &log, &extra));
    let ca = &c.pki.ca.cert;
    let none = curl(ca, "a.test", port, "/who", &[]);
    assert!(
        none.out
            .contains("400 No required SSL certificate was sent"),
        "{}",
        none.out
    );
    let good = curl(
        ca,
        "a.test",
        port,
        "/who",
        &["--cert", &p(&c.client.cert), "--key", &p(&c.client.key)],
    );
    assert_eq!(good.out, "a a.test", "{}", good.err);
    let bad = curl(
        ca,
        "a.test",
        port,
        "/who",
        &["--cert", &p(&c.stranger.cert), "--key", &p(&c.stranger.key)],
    );
    assert!(
        bad.out.contains("400 The SSL certificate error"),
        "{}",
        bad.out
    );
    let lines = log_lines(&log, 3);
    assert!(lines[0].ends_with(" NONE 400"), "{lines:?}");
    assert!(lines[1].ends_with(" SUCCESS 200"), "{lines:?}");
    assert!(lines[2].contains(" FAILED:"), "{lines:?}");
    assert!(lines[2].ends_with(" 400"), "{lines:?}");
}

fn check(config: &str) -> (bool, String) {
    let (status, out) = Ringfront::run_check(config);
    (status.success(), out)
}

#[test]
fn certificates_that_cannot_be_loaded_fail_the_test_with_nginx_words_and_the_place() {
    let c = certs();
    let conf = |cert: &Path, key: &Path| {
        fill(
            "events {}
http {
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
    }
}
",
            &[
                ("PORT", common::port().to_string()),
                ("CERT", p(cert)),
                ("KEY", p(key)),
            ],
        )
    };
    let (ok, _) = check(&conf(&c.a_ec.cert, &c.a_ec.key));
    assert!(ok);
    let missing = PathBuf::from("/nonexistent/cert.pem");
    let (ok, out) = check(&conf(&missing, &c.a_ec.key));
    assert!(!ok);
    assert!(
        out.contains("cannot load certificate \"/nonexistent/cert.pem\": BIO_new_file() failed"),
        "{out}"
    );
    assert!(out.contains("ringfront.conf:5"), "{out}");
    let (ok, out) = check(&conf(&c.a_ec.cert, &c.b_ec.key));
    assert!(!ok);
    assert!(out.contains("key values mismatch"), "{out}");
    assert!(out.contains("ringfront.conf:6"), "{out}");
    let (ok, out) = check(&conf(&c.a_ec.key, &c.a_ec.key));
    assert!(!ok);
    assert!(out.contains("PEM_read_bio_X509_AUX() failed"), "{out}");
}

#[test]
fn hup_reloads_certificates_keeps_connections_and_refuses_a_bad_one() {
    let c = certs();
    let dir = TempDir::new("rf-tls-reload");
    let cert = dir.path().join("live.pem");
    let key = dir.path().join("live.key");
    std::fs::copy(&c.a_ec.cert, &cert).unwrap();
    std::fs::copy(&c.a_ec.key, &key).unwrap();
    let port = common::port();
    let config = fill(
        "worker_processes 2;
error_log stderr info;
events {}
http {
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"up\"; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", p(&cert)),
            ("KEY", p(&key)),
        ],
    );
    let rf = Ringfront::start(&config);
    let ca = p(&c.pki.ca.cert);
    let subject = |port| {
        let r = s_client(port, &["-servername", "x", "-CAfile", &ca], GET);
        assert!(r.out.contains("HTTP/1.1 200"), "{}", r.out);
        r.out
    };
    assert!(subject(port).contains("subject=CN = a.test"));

    // A keep-alive connection that lives across the reload.
    let mut held = Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-connect",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut held_in = held.stdin.take().unwrap();
    held_in
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();

    std::fs::copy(&c.b_ec.cert, &cert).unwrap();
    std::fs::copy(&c.b_ec.key, &key).unwrap();
    rf.signal(ringfront_testkit::SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured", Duration::from_secs(10)));
    assert!(subject(port).contains("subject=CN = b.test"));

    std::fs::write(&cert, "not a certificate\n").unwrap();
    rf.signal(ringfront_testkit::SIGHUP);
    assert!(rf.wait_for_stderr("keeping the running configuration", Duration::from_secs(10)));
    assert!(
        subject(port).contains("subject=CN = b.test"),
        "the old certificate keeps serving"
    );

    held_in
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    held.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = held.wait();
    assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
}

#[test]
fn alpn_offers_http11_only_and_protocols_and_plain_listens_are_honoured() {
    let c = certs();
    let (tls_port, plain_port) = (common::port(), common::port());
    let logdir = TempDir::new("rf-tls-log");
    let log = logdir.path().join("a.log");
    let _rf = Ringfront::start(&fill(
        "worker_processes 1;
events {}
http {
    log_format t '$scheme $https $server_port $status';
    access_log {LOG} t;
    server {
        listen 127.0.0.1:{TLS} ssl;
        listen 127.0.0.1:{PLAIN};
        server_name a.test;
        ssl_protocols TLSv1.3;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"$scheme\"; }
    }
}
",
        &[
            ("TLS", tls_port.to_string()),
            ("PLAIN", plain_port.to_string()),
            ("LOG", p(&log)),
            ("CERT", p(&c.a_ec.cert)),
            ("KEY", p(&c.a_ec.key)),
        ],
    ));
    let ca = p(&c.pki.ca.cert);
    let base = ["-servername", "a.test", "-CAfile", ca.as_str()];
    // ALPN: h2 is never chosen, http/1.1 is; a client offering only h2 gets no ALPN.
    let mut args = base.to_vec();
    args.extend(["-alpn", "h2,http/1.1"]);
    let r = s_client(tls_port, &args, GET);
    assert!(r.out.contains("ALPN protocol: http/1.1"), "{}", r.out);
    let mut args = base.to_vec();
    args.extend(["-alpn", "h2"]);
    let r = s_client(tls_port, &args, GET);
    assert!(!r.out.contains("ALPN protocol: h2"), "{}", r.out);
    // ssl_protocols TLSv1.3: a TLS 1.2 client is refused, a 1.3 one served.
    let mut args = base.to_vec();
    args.push("-tls1_2");
    let r = s_client(tls_port, &args, GET);
    assert!(!r.out.contains("HTTP/1.1 200"), "{}", r.out);
    assert!(
        r.err.contains("alert") || r.err.contains("error"),
        "{}",
        r.err
    );
    let r = curl(&c.pki.ca.cert, "a.test", tls_port, "/", &[]);
    assert_eq!((r.code, r.out.as_str()), (0, "https"), "{}", r.err);
    // The same server on a plain address: plain HTTP there.
    let plain = run(Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .arg(format!("http://127.0.0.1:{plain_port}/")));
    assert_eq!(plain.out, "http");
    // Three answered requests: the http/1.1 ALPN one, curl over TLS and the plain one (the
    // log is written by a thread of its own: wait for all of them).
    let lines = log_lines(&log, 3);
    let want_tls = format!("https on {tls_port} 200");
    let want_plain = format!("http  {plain_port} 200");
    assert!(lines.contains(&want_tls), "{lines:?}");
    assert!(lines.contains(&want_plain), "{lines:?}");
}

#[test]
fn ciphers_and_curves_ringfront_cannot_offer_fail_the_test() {
    let c = certs();
    let conf = |line: &str| {
        fill(
            "events {}
http {
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        {LINE}
    }
}
",
            &[
                ("PORT", common::port().to_string()),
                ("CERT", p(&c.a_ec.cert)),
                ("KEY", p(&c.a_ec.key)),
                ("LINE", line.to_string()),
            ],
        )
    };
    let (ok, _) = check(&conf("ssl_ciphers ECDHE+AESGCM:!aNULL;"));
    assert!(ok);
    let (ok, out) = check(&conf("ssl_ciphers AES128-SHA;"));
    assert!(!ok);
    assert!(
        out.contains("\"AES128-SHA\" cannot be offered by ringfront"),
        "{out}"
    );
    assert!(out.contains("ringfront.conf:7"), "{out}");
    let (ok, out) = check(&conf("ssl_ecdh_curve brainpoolP256r1;"));
    assert!(!ok);
    assert!(out.contains("brainpoolP256r1"), "{out}");
    let (ok, out) = check(&conf("ssl_protocols TLSv1 TLSv1.1;"));
    assert!(!ok);
    assert!(out.contains("names no protocol ringfront offers"), "{out}");
}

/// An X.509 v1 certificate and key, as nginx's own test suite makes them (`openssl req
/// -x509` with a config that has no extensions section).
fn v1_certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let conf = dir.join("v1.cnf");
    std::fs::write(
        &conf,
        "[ req ]\ndefault_bits = 2048\nencrypt_key = no\n\
         distinguished_name = req_distinguished_name\n[ req_distinguished_name ]\n",
    )
    .unwrap();
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let r = run(Command::new("openssl")
        .args(["req", "-x509", "-new", "-config"])
        .arg(&conf)
        .args(["-subj", &format!("/CN={name}/"), "-out"])
        .arg(&cert)
        .arg("-keyout")
        .arg(&key));
    assert_eq!(r.code, 0, "{}", r.err);
    (cert, key)
}

#[test]
fn x509_v1_certificates_are_served_checked_and_accepted_upstream_as_by_openssl() {
    let dir = TempDir::new("rf-tls-v1");
    let (cert, key) = v1_certificate(dir.path(), "localhost");
    let (_, other_key) = v1_certificate(dir.path(), "other");
    let (front, back) = (common::port(), common::port());
    let config = fill(
        "events {}
http {
    upstream u { server 127.0.0.1:{BACK}; keepalive 1; }
    server {
        listen 127.0.0.1:{FRONT};
        location / { proxy_pass https://u; }
    }
    server {
        listen 127.0.0.1:{BACK} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        location / { return 200 \"v1 $ssl_protocol\"; }
    }
}
",
        &[
            ("FRONT", front.to_string()),
            ("BACK", back.to_string()),
            ("CERT", p(&cert)),
            ("KEY", p(&key)),
        ],
    );
    let _rf = Ringfront::start(&config);
    let r = run(Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .arg(format!("http://127.0.0.1:{front}/")));
    assert_eq!(r.out, "v1 TLSv1.3", "{}", r.err);
    // The key of another v1 certificate is still a mismatch.
    let (ok, out) = check(&config.replace(&p(&key), &p(&other_key)));
    assert!(!ok);
    assert!(out.contains("key values mismatch"), "{out}");
}
