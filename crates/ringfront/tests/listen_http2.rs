//! `listen ... ssl http2`: accepted (nginx 1.22 accepts it), with a `warn` line at start;
//! ALPN still offers `http/1.1` only, so `curl --http2` negotiates HTTP/1.1 and gets its
//! answer. `http2` without `ssl` (HTTP/2 with prior knowledge only in nginx) stays an error.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::fill;
use ringfront_testkit::pki::{Key, Pki};
use ringfront_testkit::{Nginx, Ringfront, TempDir};

fn config(port: u16, cert: &Path, key: &Path, listen_extra: &str) -> String {
    fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    http2_max_concurrent_streams 64;
    http2_recv_buffer_size 256k;
    server {
        listen 127.0.0.1:{PORT} ssl http2 {EXTRA};
        server_name a.test;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        http2_idle_timeout 3m;
        http2_max_field_size 4k;
        http2_max_header_size 16k;
        http2_body_preread_size 64k;
        http2_chunk_size 8k;
        http2_push_preload off;
        location / {
            http2_push off;
            return 200 \"proto=$server_protocol https=$https\";
        }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", cert.display().to_string()),
            ("KEY", key.display().to_string()),
            ("EXTRA", listen_extra.to_string()),
        ],
    )
}

#[test]
fn http2_on_an_ssl_listen_is_accepted_and_speaks_http_1_1() {
    let dir = TempDir::new("rf-h2-pki");
    let pki = Pki::new(dir.path(), "h2");
    let cert = pki.server("a", Key::EcdsaP256, &["a.test"]);
    let port = common::port();
    let text = config(port, &cert.cert, &cert.key, "");
    // nginx 1.22 takes the same configuration.
    let (status, out) = Nginx::run_check(&text);
    assert!(status.success(), "nginx -t: {out}");
    let (status, out) = Ringfront::run_check(&text);
    assert!(status.success(), "ringfront -t: {out}");
    let warn = format!(
        "[warn] \"http2\" parameter of the \"listen\" directive is accepted, but ringfront \
         speaks HTTP/1.1 on 127.0.0.1:{port}"
    );
    assert!(out.contains(&warn), "{out}");

    let rf = Ringfront::start(&text);
    assert!(
        rf.wait_for_stderr(&warn, Duration::from_secs(5)),
        "{:?}",
        rf.stderr_lines()
    );
    let o = Command::new("curl")
        .args(["-sS", "-k", "--http2", "--max-time", "10"])
        .args(["-w", "\\n%{http_code} %{http_version}"])
        .arg("--resolve")
        .arg(format!("a.test:{port}:127.0.0.1"))
        .arg(format!("https://a.test:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "proto=HTTP/1.1 https=on\n200 1.1");
}

#[test]
fn http2_without_ssl_is_refused() {
    let port = common::port();
    let text = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT} http2;
        location / { return 200; }
    }
}
",
        &[("PORT", port.to_string())],
    );
    let (status, out) = Ringfront::run_check(&text);
    assert!(!status.success(), "{out}");
    assert!(
        out.contains(
            "\"http2\" parameter of the \"listen\" directive without \"ssl\" is not supported \
             by ringfront (HTTP/2 with prior knowledge only; ringfront speaks HTTP/1.1) in "
        ),
        "{out}"
    );
    // `ssl` on another `listen` of the same address makes it a TLS one, as in nginx.
    let dir = TempDir::new("rf-h2-pki2");
    let pki = Pki::new(dir.path(), "h2b");
    let cert = pki.server("a", Key::EcdsaP256, &["a.test"]);
    let text = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT} ssl;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
    }
    server {
        listen 127.0.0.1:{PORT} http2;
        server_name b.test;
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("CERT", cert.cert.display().to_string()),
            ("KEY", cert.key.display().to_string()),
        ],
    );
    let (status, out) = Ringfront::run_check(&text);
    assert!(status.success(), "{out}");
}
