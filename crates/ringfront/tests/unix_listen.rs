//! `listen unix:PATH` against real nginx on the same configuration: the address variables
//! of a unix client (`$remote_addr` `unix:`, `$server_addr` `unix:PATH`, empty ports), `geo`
//! (255.255.255.255), `allow`/`deny unix:`, server selection by `server_name` among the
//! servers on the path, `X-Forwarded-For` through a TCP front; then a stale socket file
//! replaced at start, the socket kept across a reload and its file removed at stop.

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::fill;
use ringfront_testkit::{Client, Ringfront, SIGHUP, SIGQUIT};

const WAIT: Duration = Duration::from_secs(10);

fn config(p: u16, sock: &Path, tag: &str) -> String {
    fill(
        r#"worker_processes 2;
events { worker_connections 64; }
http {
    access_log off;
    geo $geo {
        default default;
        255.255.255.255 none;
    }
    geo $remote_addr $geora {
        default default;
        255.255.255.255 none;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_pass http://unix:{SOCK};
        }
    }
    server {
        listen unix:{SOCK};
        server_name localhost;
        root /nonexistent/ringfront-unix-listen;
        location / {
            return 200 "{TAG} ra=$remote_addr rp=[$remote_port] sa=$server_addr sp=[$server_port] geo=$geo geora=$geora xff=$proxy_add_x_forwarded_for\n";
        }
        location /allow_unix/ { allow unix:; deny all; }
        location /deny_unix/ { deny unix:; }
        location /deny_all/ { deny all; }
        location /deny_v6/ { deny ::/0; deny 0.0.0.0/0; }
    }
    server {
        listen unix:{SOCK};
        server_name other;
        location / {
            return 200 "other sa=$server_addr\n";
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("SOCK", sock.display().to_string()),
            ("TAG", tag.to_string()),
        ],
    )
}

/// One HTTP/1.0 request over the unix socket at `sock`: the status and, for a 200, the
/// body (the socket path written as `SOCK`, so both servers' answers compare).
fn unix_get(sock: &Path, path: &str, host: &str) -> String {
    let mut s = UnixStream::connect(sock).expect("connect to the unix listener");
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    answer(s, sock)
}

fn answer(mut s: UnixStream, sock: &Path) -> String {
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the answer");
    let status = raw.split(' ').nth(1).unwrap_or("-").to_string();
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let body = if status == "200" { body } else { "" };
    format!(
        "{status} {}",
        body.replace(&sock.display().to_string(), "SOCK")
    )
}

fn answers(p: u16, sock: &Path) -> Vec<String> {
    let mut all: Vec<String> = [
        ("/", "localhost"),
        ("/", "other"),
        ("/", "unknown.example"),
        ("/allow_unix/x", "localhost"),
        ("/deny_unix/x", "localhost"),
        ("/deny_all/x", "localhost"),
        ("/deny_v6/x", "localhost"),
    ]
    .iter()
    .map(|(path, host)| unix_get(sock, path, host))
    .collect();
    let mut c = Client::connect(("127.0.0.1", p));
    let r = c.request("GET", "/front", &[], b"");
    all.push(format!(
        "{} {}",
        r.status,
        r.text().replace(&sock.display().to_string(), "SOCK")
    ));
    all
}

fn socket_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "ringfront-listen-{}-{tag}.sock",
        std::process::id()
    ))
}

#[test]
fn unix_listeners_match_nginx() {
    let (ns, rs) = (socket_path("nginx"), socket_path("rf"));
    let (np, rp) = (common::port(), common::port());
    let n = ringfront_testkit::Nginx::start(&config(np, &ns, "a"), np);
    let rf = Ringfront::start(&config(rp, &rs, "a"));
    let a = answers(np, &ns);
    let b = answers(rp, &rs);
    for (x, y) in a.iter().zip(&b) {
        let mark = if x == y { " " } else { "!" };
        println!("{mark} nginx: {x:?}\n     rf: {y:?}");
    }
    assert_eq!(b, a);
    let vars = "ra=unix: rp=[] sa=unix:SOCK sp=[] geo=none geora=none";
    assert_eq!(
        a,
        [
            format!("200 a {vars} xff=unix:\n"),
            "200 other sa=unix:SOCK\n".into(),
            format!("200 a {vars} xff=unix:\n"),
            "404 ".into(),
            "403 ".into(),
            "403 ".into(),
            "404 ".into(),
            format!("200 a {vars} xff=127.0.0.1, unix:\n"),
        ]
    );
    // As nginx leaves it: a socket anybody may connect to.
    for sock in [&ns, &rs] {
        let mode = std::fs::metadata(sock).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666, "{}", sock.display());
    }
    n.signal(SIGQUIT);
    assert!(n.wait_exit(WAIT).is_some());
    assert!(!ns.exists(), "nginx removes its socket at exit");
    drop(rf);
    let _ = std::fs::remove_file(&rs);
}

/// A reload keeps the listening socket (the same file; a connection made before the reload
/// is answered, new ones get the new configuration); a graceful stop removes the file.
#[test]
fn reload_keeps_the_socket_and_stop_removes_it() {
    let sock = socket_path("reload");
    // A stale socket file, as a killed server leaves it: removed before the bind.
    drop(UnixListener::bind(&sock).expect("stale socket"));
    assert!(sock.exists());
    let p = common::port();
    let rf = Ringfront::start(&config(p, &sock, "before"));
    assert!(unix_get(&sock, "/", "localhost").starts_with("200 before "));
    let inode = std::fs::metadata(&sock).unwrap().ino();
    let queued = UnixStream::connect(&sock).expect("connect before the reload");
    rf.write_config(&config(p, &sock, "after"));
    rf.signal(SIGHUP);
    assert!(
        rf.wait_for_stderr("reconfigured (generation 2)", WAIT),
        "{:?}",
        rf.stderr_lines()
    );
    assert_eq!(
        std::fs::metadata(&sock).unwrap().ino(),
        inode,
        "the same socket"
    );
    let mut queued = queued;
    queued.set_read_timeout(Some(WAIT)).unwrap();
    write!(queued, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    // Served by the configuration it was accepted under (as an old nginx worker serves
    // what it accepted), which may be either: the point is it was not dropped.
    let got = answer(queued, &sock);
    assert!(
        got.starts_with("200 before ") || got.starts_with("200 after "),
        "{got}"
    );
    assert!(unix_get(&sock, "/", "localhost").starts_with("200 after "));
    rf.signal(SIGQUIT);
    assert!(rf.wait_exit(WAIT).is_some_and(|s| s.success()));
    assert!(!sock.exists(), "removed at stop");
}
