//! `listen` forms beyond one address: a port range listens on every port of it (nginx
//! 1.15.10+), compared with real nginx on the same configuration.

mod common;

use common::fill;
use ringfront_testkit::{Client, MaskPort};

fn config(main: u16, first: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{MAIN};
        listen 127.0.0.1:{FIRST}-{LAST};
        location / {
            return 200 "$server_addr:$server_port";
        }
    }
}
"#,
        &[
            ("MAIN", main.to_string()),
            ("FIRST", first.to_string()),
            ("LAST", (first + 1).to_string()),
        ],
    )
}

fn answer(port: u16) -> String {
    let mut c = Client::connect(("127.0.0.1", port));
    let r = c.request("GET", "/", &[], b"");
    format!("{} {}", r.status, r.text())
}

#[test]
fn a_port_range_listens_on_every_port_as_nginx() {
    let answers = |main: u16, first: u16| {
        [main, first, first + 1]
            .iter()
            .map(|&p| answer(p).mask_port(p))
            .collect::<Vec<_>>()
    };
    let (np, nf) = (common::port(), ringfront_testkit::free_port_pair());
    let nginx = ringfront_testkit::Nginx::start(&config(np, nf), np);
    let n = answers(np, nf);
    drop(nginx);
    let (rp, rf) = (common::port(), ringfront_testkit::free_port_pair());
    let ringfront = ringfront_testkit::Ringfront::start(&config(rp, rf));
    let r = answers(rp, rf);
    drop(ringfront);
    assert_eq!(r, n);
    assert_eq!(n, vec!["200 127.0.0.1:PORT"; 3]);
}

/// nginx's words for a range that runs backwards, at `-t`.
#[test]
fn a_backward_range_is_refused_as_nginx() {
    let cfg = "events {}\nhttp {\n server {\n  listen 127.0.0.1:8183-8182;\n }\n}\n";
    let (status, out) = ringfront_testkit::Nginx::run_check(cfg);
    assert!(!status.success());
    let want = "invalid port range in \"127.0.0.1:8183-8182\" of the \"listen\" directive";
    assert!(out.contains(want), "nginx: {out}");
    let host = ringfront_config::MemoryHost::new();
    let path = std::path::Path::new("/c/x.conf");
    let err = ringfront_config::parse_str(cfg, path, &host).unwrap_err();
    assert_eq!(err.to_string(), format!("{want} in /c/x.conf:4"));
}

/// `listen PORT; listen [::]:PORT;` — the usual dual-stack pair — works as in nginx: the
/// IPv6 listener is v6-only by default, so the two do not clash, and each family reaches
/// its own.
#[test]
fn ipv4_and_ipv6_wildcards_side_by_side_as_nginx() {
    let config = |p: u16| {
        fill(
            r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen {PORT};
        listen [::]:{PORT};
        location / {
            return 200 "$server_addr";
        }
    }
}
"#,
            &[("PORT", p.to_string())],
        )
    };
    let ask = |p: u16| {
        ["127.0.0.1", "::1"]
            .iter()
            .map(|ip| {
                let mut c = Client::connect((*ip, p));
                c.request("GET", "/", &[], b"").text()
            })
            .collect::<Vec<_>>()
    };
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let (n, r) = (ask(np), ask(rp));
    assert_eq!(r, n);
    assert_eq!(n, ["127.0.0.1", "::1"]);
}
