//! `merge_slashes on|off` against real nginx: `$uri` and location matching of paths with
//! `//` (also escaped `%2F`, and with `.`/`..` segments), on a server of each kind.

mod common;

use common::fill;
use ringfront_testkit::{Client, Nginx, Ringfront};

fn config(on: u16, off: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{ON};
        location = /x/y { return 200 \"exact $uri\"; }
        location / { return 200 \"[$uri]\"; }
    }
    server {
        listen 127.0.0.1:{OFF};
        merge_slashes off;
        location = /x/y { return 200 \"exact $uri\"; }
        location / { return 200 \"[$uri]\"; }
    }
}
",
        &[("ON", on.to_string()), ("OFF", off.to_string())],
    )
}

const TARGETS: &[&str] = &[
    "/x/y",
    "/x//y",
    "//x/y",
    "/x///y/",
    "/x/%2Fy",
    "/x//./y",
    "/a//../x/y",
    "/a/b//..//x?q=1",
];

fn observed(ports: [u16; 2]) -> Vec<String> {
    let mut out = Vec::new();
    for p in ports {
        for t in TARGETS {
            let r = Client::connect(("127.0.0.1", p)).request("GET", t, &[("Host", "a")], b"");
            out.push(format!("{t} -> {} {}", r.status, r.text()));
        }
    }
    out
}

#[test]
fn merge_slashes_matches_nginx() {
    let n = {
        let ports = [common::port(), common::port()];
        let _n = Nginx::start(&config(ports[0], ports[1]), ports[0]);
        observed(ports)
    };
    let r = {
        let ports = [common::port(), common::port()];
        let _r = Ringfront::start(&config(ports[0], ports[1]));
        observed(ports)
    };
    common::assert_same("merge_slashes", &n, &r);
    assert_eq!(n[1], "/x//y -> 200 exact /x/y");
    assert_eq!(n[TARGETS.len() + 1], "/x//y -> 200 [/x//y]");
}
