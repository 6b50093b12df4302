//! A request URI nginx's parser refuses (`/../x`, a bad `%XX`) is nginx's 400 from the
//! listen's default server (checked before the fields that would choose another), logged
//! with an empty `$uri`, and the default server's `error_page 400` answers it. Against
//! real nginx: statuses, bodies and the access-log lines.

mod common;

use common::fill;
use ringfront_testkit::{Client, TempDir};

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    log_format t '$server_name|$uri|$request_uri|$status';
    access_log {DIR}/a.log t;
    server {
        listen 127.0.0.1:{PORT};
        server_name default;
        error_page 400 /e400;
        location /e400 { return 200 \"default's page\"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name other;
        location / { return 200 other; }
    }
}
",
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

const TARGETS: &[&str] = &["/ok", "/../bad", "/%zz", "/a/%2"];

fn observed(p: u16, dir: &std::path::Path) -> Vec<String> {
    let mut lines: Vec<String> = TARGETS
        .iter()
        .map(|t| {
            let r = Client::connect(("127.0.0.1", p)).request("GET", t, &[("Host", "other")], b"");
            format!("{t} -> {} {}", r.status, r.text())
        })
        .collect();
    lines.extend(common::log_lines(&dir.join("a.log"), TARGETS.len()));
    lines
}

#[test]
fn a_refused_uri_is_the_default_servers_logged_400_as_nginx() {
    let (nd, rd) = (TempDir::new("nginx-bad-uri"), TempDir::new("rf-bad-uri"));
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = ringfront_testkit::Nginx::start(&config(np, nd.path()), np);
        observed(np, nd.path())
    };
    let r = {
        let _r = ringfront_testkit::Ringfront::start(&config(rp, rd.path()));
        observed(rp, rd.path())
    };
    common::assert_same("bad uri", &n, &r);
    assert_eq!(n[5], "default|/e400|-|400", "{n:?}");
}
