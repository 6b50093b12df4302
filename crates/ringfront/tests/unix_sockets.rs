//! Upstreams on unix-domain sockets against real nginx on the same configuration:
//! `server unix:/path` in an `upstream`, `proxy_pass http://unix:/path:/uri` (its implicit
//! group), and `proxy_pass` with variables evaluating to `unix:/path:/uri`; the backend
//! answers with the request line and `Host` it received.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use common::fill;
use ringfront_testkit::Client;

/// A backend on a unix socket at `path` answering every request with `METHOD TARGET
/// host=HOST`, one request per connection.
fn unix_backend(path: &Path) {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).expect("bind the unix backend");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().expect("clone"));
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let mut host = String::from("-");
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some(v) = h.strip_prefix("Host: ") {
                    host = v.trim().to_string();
                }
            }
            let request = line
                .trim()
                .trim_end_matches(" HTTP/1.0")
                .trim_end_matches(" HTTP/1.1");
            let body = format!("{request} host={host}");
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
}

fn config(p: u16, sock: &Path) -> String {
    fill(
        r#"worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    upstream u {
        server unix:{SOCK};
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass http://unix:{SOCK}:/base;
        }
        location /bare/ {
            proxy_pass http://unix:{SOCK};
        }
        location /var {
            proxy_pass http://$arg_b;
        }
        location /u/ {
            proxy_pass http://u;
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("SOCK", sock.display().to_string()),
        ],
    )
}

fn answers(p: u16, sock: &Path) -> Vec<String> {
    let s = sock.display();
    [
        "/x".to_string(),
        "/bare/y?a=1".into(),
        format!("/var?b=unix:{s}:/v"),
        format!("/var?b=unix:{s}"),
        "/var?b=unix:/nonexistent/ringfront.sock".into(),
        "/u/z".into(),
    ]
    .iter()
    .map(|path| {
        let mut c = Client::connect(("127.0.0.1", p));
        let r = c.request("GET", path, &[], b"");
        let body = if r.status == 200 {
            r.text()
        } else {
            String::new()
        };
        format!("{} {body}", r.status)
    })
    .collect()
}

fn socket_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ringfront-unix-{}-{tag}.sock", std::process::id()))
}

#[test]
fn unix_socket_upstreams_match_nginx() {
    let sock = socket_path("a");
    unix_backend(&sock);
    let (_n, rf, np, rp) = common::nginx_and_ringfront(|p| config(p, &sock));
    let n = answers(np, &sock);
    let r = answers(rp, &sock);
    common::assert_same("unix_sockets", &n, &r);
    // nginx's words for the refused socket, the URL naming it as nginx does.
    let line = "connect() failed (2: No such file or directory) while connecting to upstream";
    let url = "upstream: \"http://unix:/nonexistent/ringfront.sock:/var?b=unix:/nonexistent/ringfront.sock\"";
    let second = std::time::Duration::from_secs(5);
    assert!(rf.wait_for_stderr(line, second), "{line}");
    assert!(rf.wait_for_stderr(url, second), "{url}");
    let s = sock.display();
    assert_eq!(
        n,
        [
            "200 GET /basex host=localhost".to_string(),
            "200 GET /bare/y?a=1 host=localhost".into(),
            "200 GET /v host=localhost".into(),
            format!("200 GET /var?b=unix:{s} host=localhost"),
            "502 ".into(),
            "200 GET /u/z host=u".into(),
        ]
    );
    let _ = std::fs::remove_file(&sock);
}

/// Unix-domain servers have no address to probe: health checks on them are refused.
#[test]
fn health_checks_of_unix_servers_are_refused() {
    let cfg = "events {}\nhttp {\n upstream u {\n  server unix:/tmp/x.sock;\n  check interval=1000;\n }\n}\n";
    let host = ringfront_config::MemoryHost::new();
    let err = ringfront_config::parse_str(cfg, Path::new("/c/x.conf"), &host).unwrap_err();
    assert_eq!(
        err.to_string(),
        "health checks of unix-domain socket servers are not supported by ringfront in /c/x.conf:3"
    );
}
