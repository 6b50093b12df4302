//! `proxy_socket_keepalive on|off` against real nginx: while a request waits on the
//! backend, the proxy's upstream socket has the kernel's keepalive timer (`ss -o` shows
//! `timer:(keepalive,...)`) only with `on`.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::fill;
use ringfront_testkit::{Backend, Client, Nginx, Ringfront};

fn config(port: u16, on: u16, off: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location /on/ { proxy_socket_keepalive on; proxy_pass http://127.0.0.1:{ON}; }
        location /off/ { proxy_pass http://127.0.0.1:{OFF}; }
    }
}
",
        &[
            ("PORT", port.to_string()),
            ("ON", on.to_string()),
            ("OFF", off.to_string()),
        ],
    )
}

/// The `ss -tno` lines of connections to `backend` (the proxy's side), once one is there.
fn upstream_sockets(backend: u16) -> String {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let o = Command::new("ss")
            .args(["-tnoH", "state", "established"])
            .arg(format!("( dport = :{backend} )"))
            .output()
            .expect("ss runs");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if !text.trim().is_empty() || Instant::now() > end {
            return text;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// For `/on/` and `/off/` (each to its own backend): whether the upstream socket has the
/// keepalive timer.
fn observed(port: u16, backends: [u16; 2]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, backend) in ["/on/x?sleep=1.5", "/off/x?sleep=1.5"]
        .into_iter()
        .zip(backends)
    {
        let client = std::thread::spawn(move || {
            Client::connect(("127.0.0.1", port))
                .request("GET", path, &[("Host", "a")], b"")
                .status
        });
        let ss = upstream_sockets(backend);
        let status = client.join().unwrap();
        out.push(format!(
            "{path} {status} sockets={} keepalive={}",
            ss.lines().count(),
            ss.contains("timer:(keepalive")
        ));
    }
    out
}

#[test]
fn upstream_so_keepalive_matches_nginx() {
    let b: Vec<Backend> = (0..4).map(|_| Backend::start()).collect();
    let n = {
        let port = common::port();
        let _n = Nginx::start(&config(port, b[0].port(), b[1].port()), port);
        observed(port, [b[0].port(), b[1].port()])
    };
    let r = {
        let port = common::port();
        let _r = Ringfront::start(&config(port, b[2].port(), b[3].port()));
        observed(port, [b[2].port(), b[3].port()])
    };
    common::assert_same("proxy_socket_keepalive", &n, &r);
    assert_eq!(n[0], "/on/x?sleep=1.5 200 sockets=1 keepalive=true");
    assert_eq!(n[1], "/off/x?sleep=1.5 200 sockets=1 keepalive=false");
}
