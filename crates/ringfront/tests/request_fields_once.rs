//! Request fields nginx 1.22 takes once (`ngx_http_process_unique_header_line`: a repeat is
//! a 400) and `$remote_user` from a `Basic` `Authorization` field, against real nginx.

mod common;

use common::fill;
use ringfront_testkit::Client;

fn config(p: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    server {
        listen 127.0.0.1:{PORT};
        location / { add_header X-User \"[$remote_user]\"; return 204; }
    }
}
",
        &[("PORT", p.to_string())],
    )
}

const AUTH: &[&str] = &[
    "Basic dXNlcjpzZWNyZXQ=",
    "basic    dXNlcjpzZWNyZXQ",
    "Basic OnNlY3JldA==",
    "Basic dXNlcg==",
    "Basic dXNlcjp*",
    "Bearer dXNlcjpzZWNyZXQ=",
    "Basic YTpi",
];

const ONCE: &[&str] = &[
    "If-Modified-Since",
    "If-Unmodified-Since",
    "If-Match",
    "If-None-Match",
    "Content-Range",
    "If-Range",
    "Expect",
    "Authorization",
    "Accept",
    "User-Agent",
];

fn observed(p: u16) -> Vec<String> {
    let mut lines = Vec::new();
    for a in AUTH {
        let r = Client::connect(("127.0.0.1", p)).request(
            "GET",
            "/",
            &[("Host", "a"), ("Authorization", a)],
            b"",
        );
        lines.push(format!("{a} -> {} {:?}", r.status, r.header("x-user")));
    }
    for name in ONCE {
        let r = Client::connect(("127.0.0.1", p)).request(
            "GET",
            "/",
            &[("Host", "a"), (name, "x"), (name, "x")],
            b"",
        );
        lines.push(format!("twice {name} -> {}", r.status));
    }
    lines
}

#[test]
fn unique_fields_and_remote_user_match_nginx() {
    let (np, rp) = (common::port(), common::port());
    let n = {
        let _n = ringfront_testkit::Nginx::start(&config(np), np);
        observed(np)
    };
    let r = {
        let _r = ringfront_testkit::Ringfront::start(&config(rp));
        observed(rp)
    };
    common::assert_same("unique fields / remote_user", &n, &r);
    assert_eq!(n[0], "Basic dXNlcjpzZWNyZXQ= -> 204 Some(\"[user]\")");
    assert_eq!(n[AUTH.len()], "twice If-Modified-Since -> 400");
}
