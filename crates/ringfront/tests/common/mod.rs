//! Shared pieces of the integration suites: configs built from templates with real ports.

#![allow(dead_code)]

use ringfront_testkit::{free_port, Backend};

/// Replaces `{KEY}` placeholders, so nginx's own braces need no escaping.
pub fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// A one-upstream config in front of `servers` (each line a full `server ...;` body).
pub fn proxy_config(
    port: u16,
    servers: &[String],
    upstream_extra: &str,
    location_extra: &str,
) -> String {
    let servers: String = servers
        .iter()
        .map(|s| format!("        server {s};\n"))
        .collect();
    fill(
        "worker_processes 1;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
{SERVERS}        {UPEXTRA}
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        location / {
            proxy_pass http://backend;
            {LOCEXTRA}
        }
    }
}
",
        &[
            ("SERVERS", servers),
            ("UPEXTRA", upstream_extra.to_string()),
            ("PORT", port.to_string()),
            ("LOCEXTRA", location_extra.to_string()),
        ],
    )
}

pub fn addr(b: &Backend) -> String {
    format!("127.0.0.1:{}", b.port())
}

pub fn port() -> u16 {
    free_port()
}

/// The `X-Backend` header (the serving backend's port) of a response.
pub fn served_by(r: &ringfront_testkit::Response) -> u16 {
    r.header("x-backend")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
