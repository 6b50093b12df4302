//! How `Location` is made against real nginx on the same configuration: `absolute_redirect`
//! on and off (inherited and overridden), `server_name_in_redirect`, `port_in_redirect`,
//! the `Host` name (lower-cased, without its port) or else the local address; for
//! `return`, `rewrite`, a folder's 301 (also under `alias`, with arguments and escaped
//! names) and nginx's auto redirect to a proxying location named with a final `/` (not for
//! a location of the URI's own name), also reached from an `error_page`; the escaping of
//! a location's name (every byte RFC 3986 forbids), and a `Host` nginx refuses: its 400
//! through the default server's `error_page`, made absolute with the local address.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn files() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-redirects-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("dir")).expect("test folder");
    std::fs::create_dir_all(dir.join("dir sp")).expect("test folder");
    dir
}

fn config(p: u16, backend: u16, root: &std::path::Path) -> String {
    fill(
        r##"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    absolute_redirect off;
    root {ROOT};
    server {
        listen 127.0.0.1:{PORT};
        server_name on;
        absolute_redirect on;
        error_page 400 /return301;

        location / { }
        location /auto/ {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location = /exact/ {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /own {
            return 200 "own\n";
        }
        location /n/ {
            location /n/p/ {
                proxy_pass http://127.0.0.1:{BACKEND};
            }
        }
        location /own/ {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /return301 {
            return 301 /redirect;
        }
        location /return301/name {
            return 301 /redirect;
            server_name_in_redirect on;
        }
        location /return301/port {
            return 301 /redirect;
            port_in_redirect off;
        }
        location /rw {
            rewrite ^ /target?a=1 redirect;
        }
        location /i/ {
            alias {ROOT}/;
        }
        location /err302 {
            error_page 302 /auto;
            return 302 "first";
        }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name off;

        location / { }
        location /auto/ {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /return301 {
            return 301 /redirect;
        }
        location /i/ {
            alias {ROOT}/;
        }
        location '/auto "#%<>?\^`{|}/' {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
    }
}
"##,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("ROOT", root.display().to_string()),
        ],
    )
}

/// (Host, path); an empty Host sends none (HTTP/1.0).
const REQUESTS: &[(&str, &str)] = &[
    ("on", "/dir"),
    ("on", "/i/dir"),
    ("on", "/dir%20sp"),
    ("on", "/dir%20sp?a=b"),
    ("on", "/auto"),
    ("on", "/auto?a=b"),
    ("on", "/exact"),
    ("on", "/own"),
    ("on", "/n/p?x=1"),
    ("on", "/return301"),
    ("host", "/return301/name"),
    ("host", "/return301"),
    ("HoSt:8000", "/return301"),
    ("", "/return301"),
    ("host", "/return301/port"),
    ("on", "/rw"),
    ("on", "/err302"),
    ("off", "/dir"),
    ("off", "/i/dir"),
    ("off", "/dir%20sp?a=b"),
    ("off", "/auto"),
    ("off", "/auto?a=b"),
    ("off", "/return301"),
    (".", "/return301"),
    ("off", "/auto%20%22%23%25%3C%3E%3F%5C%5E%60%7B%7C%7D"),
];

fn answers(p: u16, b: &Backend) -> Vec<String> {
    REQUESTS
        .iter()
        .map(|(host, path)| {
            let before = b.requests().len();
            let mut c = Client::connect(("127.0.0.1", p));
            let r = if host.is_empty() {
                c.send_raw(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes());
                c.read_response()
            } else {
                c.request("GET", path, &[("Host", host)], b"")
            };
            let proxied = b.requests().len() - before;
            let location = r.header("Location").unwrap_or("-");
            let location = location.replace(&format!(":{p}"), ":PORT");
            format!("{} {location} proxied={proxied}", r.status)
        })
        .collect()
}

#[test]
fn locations_are_made_as_nginx_makes_them() {
    let b = Backend::start();
    let root = files();
    let (n, r, np, rp) = common::nginx_and_ringfront(|p| config(p, b.port(), &root));
    let nginx = answers(np, &b);
    let ours = answers(rp, &b);
    drop((n, r));
    common::assert_same("redirects", &nginx, &ours);
    let has = |want: &str| nginx.iter().any(|a| a.contains(want));
    for want in [
        "301 http://on:PORT/auto/?a=b",
        "301 http://on:PORT/n/p/?x=1",
        "301 /auto/ proxied=0",
        "301 http://host/redirect",
        "301 http://127.0.0.1:PORT/redirect",
        "301 /auto%20%22%23%25%3C%3E%3F%5C%5E%60%7B%7C%7D/ proxied=0",
    ] {
        assert!(has(want), "{want}: {nginx:?}");
    }
    // `Host: .`: the 400's error_page, no `Host` name to use.
    let bad_host = &nginx[REQUESTS.len() - 2];
    assert_eq!(bad_host, "301 http://127.0.0.1:PORT/redirect proxied=0");
    let _ = std::fs::remove_dir_all(&root);
}
