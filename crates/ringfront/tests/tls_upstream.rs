//! `proxy_pass https://` through the binary: the TLS backend is a second ringfront with
//! `listen ... ssl` answering what its handshake saw (`$ssl_server_name`, `$ssl_protocol`,
//! `$ssl_client_verify`) and logging `$connection` per request. Plain requests, SNI with
//! `proxy_ssl_server_name` / `proxy_ssl_name`, `proxy_ssl_verify` with the right and a wrong
//! CA and a wrong name (502 and nginx's error lines), a plain HTTP backend, keepalive reuse
//! of TLS connections, client certificates, and active health checks speaking TLS.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::pki::{CertFiles, Key, Pki};
use ringfront_testkit::{http, Client, Ringfront, TempDir};

struct Certs {
    dir: TempDir,
    pki: Pki,
    other: Pki,
    server: CertFiles,
    client: CertFiles,
}

fn certs() -> Certs {
    let dir = TempDir::new("rf-tls-up-pki");
    let pki = Pki::new(dir.path(), "up");
    let other = Pki::new(dir.path(), "other");
    Certs {
        server: pki.server("b", Key::EcdsaP256, &["b.test", "127.0.0.1"]),
        client: pki.client("front", "front"),
        pki,
        other,
        dir,
    }
}

fn p(f: &Path) -> String {
    f.display().to_string()
}

/// A TLS backend (ringfront) on `port` (`extra` goes into its server block) and a plain
/// HTTP one on `port + 1` answering `plain` (and 400 to a TLS hello). The access log has
/// one line per request: `$connection $ssl_session_reused [$ssl_server_name] $request_uri`.
fn tls_backend(c: &Certs, port: u16, log: &Path, extra: &str) -> Ringfront {
    Ringfront::start(&fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections 256; }
http {
    log_format conn '$connection $ssl_session_reused [$ssl_server_name] $request_uri';
    access_log {LOG} conn;
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        {EXTRA}
        location / {
            return 200 \"tls [$ssl_server_name] $ssl_protocol $ssl_client_verify\";
        }
    }
    server {
        listen 127.0.0.1:{PLAIN};
        location / { return 200 plain; }
    }
}
",
        &[
            ("LOG", p(log)),
            ("PORT", port.to_string()),
            ("PLAIN", (port + 1).to_string()),
            ("CERT", p(&c.server.cert)),
            ("KEY", p(&c.server.key)),
            ("EXTRA", extra.to_string()),
        ],
    ))
}

/// The front: `upstream b` is the TLS backend, `upstream plain` a plain HTTP one; `locs`
/// are its locations.
fn front(port: u16, b: u16, plain: u16, log: &Path, locs: &str) -> Ringfront {
    Ringfront::start(&fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections 256; }
http {
    log_format up '$status $upstream_addr $upstream_status $request_uri';
    access_log {LOG} up;
    proxy_http_version 1.1;
    proxy_set_header Connection \"\";
    upstream b { server 127.0.0.1:{B}; keepalive 8; }
    upstream plain { server 127.0.0.1:{PLAIN}; }
    upstream once { server 127.0.0.1:{B}; keepalive 0; }
    server {
        listen 127.0.0.1:{PORT};
        server_name front;
        {LOCS}
    }
}
",
        &[
            ("LOG", p(log)),
            ("PORT", port.to_string()),
            ("B", b.to_string()),
            ("PLAIN", plain.to_string()),
            ("LOCS", locs.to_string()),
        ],
    ))
}

/// Waits (bounded) until `path` holds at least `n` lines; its lines.
fn log_lines(path: &Path, n: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(str::to_string).collect();
        if got.len() >= n || Instant::now() > end {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first stderr line of `rf` containing `needle` (waiting for it, bounded).
fn stderr_line(rf: &Ringfront, needle: &str) -> String {
    assert!(
        rf.wait_for_stderr(needle, Duration::from_secs(10)),
        "no `{needle}` in:\n{}",
        rf.stderr_lines().join("\n")
    );
    rf.stderr_lines()
        .into_iter()
        .find(|l| l.contains(needle))
        .unwrap_or_default()
}

struct Setup {
    _c: Certs,
    b_port: u16,
    _backend: Ringfront,
    backend_log: PathBuf,
    plain_port: u16,
    front_port: u16,
    front: Ringfront,
    front_log: PathBuf,
}

fn setup(backend_extra: &str, locs: &str) -> Setup {
    let c = certs();
    let b_port = ringfront_testkit::free_port_pair();
    let backend_log = c.dir.path().join("backend.log");
    let backend_extra = fill(backend_extra, &[("BACKCA", p(&c.pki.ca.cert))]);
    let backend = tls_backend(&c, b_port, &backend_log, &backend_extra);
    let plain_port = b_port + 1;
    let front_port = common::port();
    let front_log = c.dir.path().join("front.log");
    let locs = fill(
        locs,
        &[
            ("CA", p(&c.pki.ca.cert)),
            ("OTHERCA", p(&c.other.ca.cert)),
            ("CLIENT", p(&c.client.cert)),
            ("CLIENTKEY", p(&c.client.key)),
            ("B", b_port.to_string()),
        ],
    );
    let front = front(front_port, b_port, plain_port, &front_log, &locs);
    Setup {
        _c: c,
        b_port,
        _backend: backend,
        backend_log,
        plain_port,
        front_port,
        front,
        front_log,
    }
}

fn get(s: &Setup, path: &str) -> ringfront_testkit::Response {
    http::get(("127.0.0.1", s.front_port), path)
}

#[test]
fn requests_go_over_tls_with_sni_only_when_asked() {
    let s = setup(
        "",
        "location / { proxy_pass https://b; }
        location /sni { proxy_pass https://b; proxy_ssl_server_name on; }
        location /named {
            proxy_pass https://b;
            proxy_ssl_server_name on;
            proxy_ssl_name b.test;
        }
        location /tls12 { proxy_pass https://b; proxy_ssl_protocols TLSv1.2; }",
    );
    let r = get(&s, "/");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "tls [] TLSv1.3 NONE", "no SNI by default");
    // The default proxy_ssl_name is $proxy_host: the group's name.
    assert_eq!(get(&s, "/sni").text(), "tls [b] TLSv1.3 NONE");
    assert_eq!(get(&s, "/named").text(), "tls [b.test] TLSv1.3 NONE");
    assert_eq!(get(&s, "/tls12").text(), "tls [] TLSv1.2 NONE");
    let lines = log_lines(&s.front_log, 4);
    let want = format!("200 127.0.0.1:{} 200 /", s.b_port);
    assert_eq!(lines[0], want, "$upstream_addr stays the address");
    let backend = log_lines(&s.backend_log, 4);
    assert!(backend[0].ends_with(" [-] /"), "{backend:?}");
    assert!(backend[2].ends_with(" [b.test] /named"), "{backend:?}");
}

#[test]
fn verification_passes_with_the_ca_and_fails_as_nginx_logs_it() {
    let s = setup(
        "",
        "location /good {
            proxy_pass https://b;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate {CA};
            proxy_ssl_name b.test;
        }
        location /by-address {
            proxy_pass https://127.0.0.1:{B};
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate {CA};
        }
        location /wrong-ca {
            proxy_pass https://b;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate {OTHERCA};
            proxy_ssl_name b.test;
        }
        location /wrong-name {
            proxy_pass https://b;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate {CA};
            proxy_ssl_name c.test;
        }
        location /plain { proxy_pass https://plain; }",
    );
    assert_eq!(get(&s, "/good").status, 200);
    // The certificate names 127.0.0.1 too: $proxy_host of an address verifies against it.
    let r = get(&s, "/by-address");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get(&s, "/wrong-ca");
    assert_eq!(r.status, 502);
    let line = stderr_line(&s.front, "upstream SSL certificate verify error");
    let want = format!(
        "upstream SSL certificate verify error: (20:unable to get local issuer certificate) \
         while SSL handshaking to upstream, client: 127.0.0.1, server: front, request: \
         \"GET /wrong-ca HTTP/1.1\", upstream: \"https://127.0.0.1:{}/wrong-ca\"",
        s.b_port
    );
    assert!(line.contains(&want), "{line}");
    assert_eq!(get(&s, "/wrong-name").status, 502);
    let line = stderr_line(&s.front, "does not match");
    assert!(
        line.contains(
            "upstream SSL certificate does not match \"c.test\" while SSL handshaking to upstream"
        ),
        "{line}"
    );
    assert_eq!(get(&s, "/plain").status, 502);
    let line = stderr_line(&s.front, "SSL_do_handshake() failed");
    let want = format!(
        "SSL_do_handshake() failed (SSL: wrong version number) while SSL handshaking to \
         upstream, client: 127.0.0.1, server: front, request: \"GET /plain HTTP/1.1\", \
         upstream: \"https://127.0.0.1:{}/plain\"",
        s.plain_port
    );
    assert!(line.contains(&want), "{line}");
    let lines = log_lines(&s.front_log, 5);
    assert_eq!(
        lines[2],
        format!("502 127.0.0.1:{} 502 /wrong-ca", s.b_port)
    );
}

/// Sequential requests share one TLS connection to the backend (its `$connection` is the
/// same on every line); a request whose handshake would differ, or a plain one to the same
/// group, does not take it.
#[test]
fn keepalive_reuses_tls_connections() {
    let s = setup(
        "",
        "location / { proxy_pass https://b; }
        location /other { proxy_pass https://b; proxy_ssl_server_name on; }
        location /plain-to-b { proxy_pass http://b; }",
    );
    let mut client = Client::connect(("127.0.0.1", s.front_port));
    for _ in 0..5 {
        let r = client.request("GET", "/", &[], b"");
        assert_eq!(r.status, 200);
    }
    let lines = log_lines(&s.backend_log, 5);
    let conns: Vec<&str> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert!(conns.iter().all(|c| *c == conns[0]), "{lines:?}");
    // Another handshake (SNI) gets a connection of its own: the idle one is not reused.
    let r = client.request("GET", "/other", &[], b"");
    assert_eq!(r.text(), "tls [b] TLSv1.3 NONE");
    let lines = log_lines(&s.backend_log, 6);
    assert_ne!(lines[5].split(' ').next(), Some(conns[0]), "{lines:?}");
    // Plain HTTP to the TLS port: a new plain connection, answered nginx's 400.
    let r = client.request("GET", "/plain-to-b", &[], b"");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r
        .text()
        .contains("plain HTTP request was sent to HTTPS port"));
}

/// New connections resume the TLS session (`proxy_ssl_session_reuse`, on by default): the
/// backend sees `$ssl_session_reused` `r` from the second handshake on; never when off.
#[test]
fn sessions_are_resumed_unless_reuse_is_off() {
    let s = setup(
        "",
        "location / { proxy_pass https://once; }
        location /off { proxy_pass https://once; proxy_ssl_session_reuse off; }",
    );
    for path in ["/", "/", "/", "/off", "/off"] {
        assert_eq!(get(&s, path).status, 200);
    }
    let lines = log_lines(&s.backend_log, 5);
    let reused: Vec<&str> = lines
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(reused, [".", "r", "r", ".", "."], "{lines:?}");
}

#[test]
fn a_client_certificate_is_presented_when_configured() {
    let s = setup(
        "ssl_verify_client on; ssl_client_certificate {BACKCA};",
        "location /cert {
            proxy_pass https://b;
            proxy_ssl_certificate {CLIENT};
            proxy_ssl_certificate_key {CLIENTKEY};
        }
        location /none { proxy_pass https://b; }",
    );
    let r = get(&s, "/cert");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "tls [] TLSv1.3 SUCCESS");
    // Without one the backend answers nginx's 400, relayed as is.
    let r = get(&s, "/none");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("No required SSL certificate was sent"));
}

/// `health_check` in a `proxy_pass https://` location probes over TLS: the TLS peer passes,
/// a plain HTTP peer of the same group fails the handshake and is marked down.
#[test]
fn health_checks_speak_tls_for_https_locations() {
    let c = certs();
    let b_port = ringfront_testkit::free_port_pair();
    let _backend = tls_backend(&c, b_port, &c.dir.path().join("b.log"), "");
    let plain = b_port + 1;
    let port = common::port();
    let log = c.dir.path().join("front.log");
    let rf = Ringfront::start(&fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections 256; }
http {
    log_format up '$upstream_addr';
    access_log {LOG} up;
    upstream backend {
        server 127.0.0.1:{B};
        server 127.0.0.1:{PLAIN};
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass https://backend;
            health_check interval=200ms mandatory;
        }
    }
}
",
        &[
            ("B", b_port.to_string()),
            ("PLAIN", plain.to_string()),
            ("PORT", port.to_string()),
            ("LOG", p(&log)),
        ],
    ));
    let up = stderr_line(
        &rf,
        &format!("upstream server 127.0.0.1:{b_port} of \"backend\" marked up"),
    );
    assert!(up.contains("(ssl)"), "{up}");
    let down = stderr_line(
        &rf,
        &format!("upstream server 127.0.0.1:{plain} of \"backend\" marked down"),
    );
    assert!(
        down.contains("SSL_do_handshake() failed (SSL: wrong version number)"),
        "{down}"
    );
    for _ in 0..4 {
        let r = http::get(("127.0.0.1", port), "/");
        assert_eq!(r.text(), "tls [] TLSv1.3 NONE");
    }
    // Every request went to the TLS peer at once (no failed try on the plain one first).
    let want = format!("127.0.0.1:{b_port}");
    assert_eq!(log_lines(&log, 4), vec![want; 4]);
}

/// The files of `proxy_ssl_*` are read when the configuration loads: `-t` names the one
/// that cannot be read and its directive's place.
#[test]
fn an_unreadable_proxy_ssl_file_fails_the_check_at_its_directive() {
    let (status, out) = Ringfront::run_check(
        "events {}
http {
    server {
        listen 127.0.0.1:9;
        location / {
            proxy_pass https://127.0.0.1:9;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate /nonexistent/ca.pem;
        }
    }
}
",
    );
    assert!(!status.success(), "{out}");
    assert!(
        out.contains("cannot load certificates \"/nonexistent/ca.pem\""),
        "{out}"
    );
    assert!(out.contains("ringfront.conf:8"), "{out}");
}
