//! The rewrite module in the shapes edge configurations take (canonical host redirects,
//! method filters, API prefixes stripped before proxying, legacy URL redirects, CORS
//! preflights, a maintenance switch, per-tenant routing by a named capture), against real
//! nginx on the same configuration: status, Location, the backend chosen and the request
//! line it received.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn config(p: u16, app: u16, api: u16, flag: &str) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    upstream app { server 127.0.0.1:{APP}; }
    upstream api { server 127.0.0.1:{API}; }
    server {
        listen 127.0.0.1:{PORT};
        server_name example.com www.example.com;
        if ($host = www.example.com) {
            return 301 http://example.com$request_uri;
        }
        if ($http_x_forwarded_proto = "http") {
            rewrite ^ https://$host$request_uri? permanent;
        }
        location / {
            if ($request_method !~ ^(GET|HEAD|POST|OPTIONS)$) {
                return 405;
            }
            if (-f {FLAG}) {
                return 503;
            }
            proxy_set_header Host $host;
            proxy_set_header X-Original-URI $request_uri;
            proxy_pass http://app;
        }
        location /api/ {
            if ($request_method = OPTIONS) {
                add_header Access-Control-Allow-Origin "*";
                add_header Access-Control-Allow-Methods "GET, POST, OPTIONS";
                return 204;
            }
            rewrite ^/api/v1/(.*)$ /v1/$1 break;
            rewrite ^/api/(.*)$ /$1 break;
            proxy_pass http://api;
        }
        location /legacy/ {
            rewrite "^/legacy/(\d+)/?$" /items?id=$1 permanent;
            rewrite ^/legacy/(.*)$ /$1 last;
        }
        location ~ ^/t/(?<tenant>[a-z]+)(?<rest>/.*)?$ {
            set $plan "free";
            if ($arg_plan) {
                set $plan $arg_plan;
            }
            proxy_set_header X-Tenant "$tenant:$plan";
            proxy_pass http://app;
            if ($tenant = api) {
                proxy_pass http://api;
            }
            rewrite ^ /tenant/$tenant$rest break;
        }
        location ~* \.(php|aspx?)$ {
            return 404;
        }
        location = /health {
            return 200 "ok\n";
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("APP", app.to_string()),
            ("API", api.to_string()),
            ("FLAG", flag.to_string()),
        ],
    )
}

/// (method, Host, target, extra header fields).
type Request = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const REQUESTS: &[Request] = &[
    ("GET", "www.example.com", "/a?b=1", &[]),
    (
        "GET",
        "example.com",
        "/a?b=1",
        &[("X-Forwarded-Proto", "http")],
    ),
    ("GET", "example.com", "/page?x=1", &[]),
    ("DELETE", "example.com", "/page", &[]),
    ("OPTIONS", "example.com", "/api/things", &[]),
    ("GET", "example.com", "/api/v1/things?q=2", &[]),
    ("GET", "example.com", "/api/other", &[]),
    ("GET", "example.com", "/legacy/42", &[]),
    ("GET", "example.com", "/legacy/42/?k=v", &[]),
    ("GET", "example.com", "/legacy/old/page?k=v", &[]),
    ("GET", "example.com", "/t/api/x?y=1", &[]),
    ("GET", "example.com", "/t/acme", &[]),
    ("GET", "example.com", "/t/acme/?plan=pro", &[]),
    ("GET", "example.com", "/index.PHP", &[]),
    ("GET", "example.com", "/health", &[]),
];

/// Status, Location (port made neutral), CORS header, and which backend got what.
fn answers(p: u16, app: &Backend, api: &Backend) -> Vec<String> {
    REQUESTS
        .iter()
        .map(|(method, host, path, headers)| {
            let mut c = Client::connect(("127.0.0.1", p));
            let mut h = vec![("Host", *host)];
            h.extend_from_slice(headers);
            let (na, nb) = (app.requests().len(), api.requests().len());
            let r = c.request(method, path, &h, b"");
            let got = |b: &Backend, n: usize, name: &str| {
                b.requests().get(n).map(|q| {
                    let orig = q.header("X-Original-URI").unwrap_or("-").to_string();
                    let tenant = q.header("X-Tenant").unwrap_or("-").to_string();
                    format!(
                        "{name} {} {} host={:?} orig={orig} tenant={tenant}",
                        q.method,
                        q.target,
                        q.header("Host")
                    )
                })
            };
            let upstream = got(app, na, "app")
                .or_else(|| got(api, nb, "api"))
                .unwrap_or_else(|| format!("local {}", r.text().lines().next().unwrap_or("")));
            let location = r
                .header("Location")
                .unwrap_or("-")
                .replace(&format!(":{p}"), ":PORT");
            let cors = r.header("Access-Control-Allow-Methods").unwrap_or("-");
            format!("{} {location} {cors} {upstream}", r.status)
        })
        .collect()
}

#[test]
fn edge_shapes_match_nginx() {
    let (app, api) = (Backend::start(), Backend::start());
    let flag = std::env::temp_dir().join(format!("ringfront-maint-{}", std::process::id()));
    let _ = std::fs::remove_file(&flag);
    let flag_s = flag.display().to_string();
    let (ap, bp) = (app.port(), api.port());
    let (_n, _r, np, rp) = common::nginx_and_ringfront(|p| config(p, ap, bp, &flag_s));
    let n = answers(np, &app, &api);
    let r = answers(rp, &app, &api);
    for (i, (a, b)) in n.iter().zip(&r).enumerate() {
        let mark = if a == b { " " } else { "!" };
        println!("{mark} {:?}\n  nginx: {a:?}\n     rf: {b:?}", REQUESTS[i]);
    }
    assert_eq!(r, n);
    assert!(n[5].contains("api GET /v1/things?q=2"), "{n:?}");
    // The maintenance switch: the file appears, the same request is a 503 on both.
    std::fs::write(&flag, b"").expect("flag file");
    let mut c = Client::connect(("127.0.0.1", np));
    let nginx = c
        .request("GET", "/page", &[("Host", "example.com")], b"")
        .status;
    let mut c = Client::connect(("127.0.0.1", rp));
    let ours = c
        .request("GET", "/page", &[("Host", "example.com")], b"")
        .status;
    let _ = std::fs::remove_file(&flag);
    assert_eq!((ours, nginx), (503, 503));
}
