//! The preaccess phase's order: realip (with a location's `set_real_ip_from`) runs before
//! `limit_req` / `limit_conn`, so the limits count the real client address. Against real
//! nginx: proxied requests from one connection address carrying different and equal
//! `X-Real-IP`s (a `return` would answer in the rewrite phase, before both).

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn config(p: u16, backend: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    limit_req_zone $binary_remote_addr zone=one:64k rate=1r/m;
    server {
        listen 127.0.0.1:{PORT};
        location / {
            set_real_ip_from 127.0.0.1;
            limit_req zone=one;
            add_header X-Addr $remote_addr always;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
    }
}
",
        &[("PORT", p.to_string()), ("BACKEND", backend.to_string())],
    )
}

const FROM: &[&str] = &["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.2"];

fn observed(p: u16) -> Vec<String> {
    FROM.iter()
        .map(|ip| {
            let r = Client::connect(("127.0.0.1", p)).request(
                "GET",
                "/",
                &[("Host", "a"), ("X-Real-IP", ip)],
                b"",
            );
            format!("{ip} -> {} {:?}", r.status, r.header("x-addr"))
        })
        .collect()
}

#[test]
fn limits_count_the_address_realip_decided_as_nginx() {
    let b = Backend::start();
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = ringfront_testkit::Nginx::start(&config(np, b.port()), np);
        observed(np)
    };
    let r = {
        let _r = ringfront_testkit::Ringfront::start(&config(rp, b.port()));
        observed(rp)
    };
    common::assert_same("realip before limit_req", &n, &r);
    assert_eq!(n[1], "10.0.0.2 -> 200 Some(\"10.0.0.2\")");
    assert_eq!(n[2], "10.0.0.1 -> 503 Some(\"10.0.0.1\")");
}
