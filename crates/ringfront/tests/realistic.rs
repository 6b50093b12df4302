//! Realistic configurations (config/realistic/, one per feature area) run unchanged on
//! real nginx and on ringfront in front of the same backends; every request's status,
//! body, answering backend, the response headers that matter and what the backend saw
//! (target and forwarding headers) must be the same.

mod common;

use std::path::{Path, PathBuf};

use ringfront_testkit::{Backend, Canned, Client, Nginx, Recorded, Response, Ringfront, TempDir};

/// One request: method, target, extra headers.
type Req = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Response fields compared (besides status, body and the answering backend).
const RESPONSE_FIELDS: &[&str] = &[
    "location",
    "content-type",
    "cache-control",
    "expires",
    "x-frame-options",
    "x-content-type-options",
    "set-cookie",
    "vary",
    "content-encoding",
];

/// Request fields the backend saw that are compared.
const UPSTREAM_FIELDS: &[&str] = &[
    "host",
    "x-real-ip",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-client",
    "connection",
    "upgrade",
];

/// nginx's built-in pages name it; ringfront's name ringfront (docs: local responses).
fn signature_free(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("<center>") {
        let end = rest[i..].find("</center>").map_or(rest.len(), |j| i + j);
        let inner = &rest[i + 8..end];
        out.push_str(&rest[..i + 8]);
        let named = inner.starts_with("nginx") || inner.starts_with("ringfront");
        out.push_str(if named { "SERVER" } else { inner });
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The body as the client reads it: gzip-decoded when it came compressed (the compressed
/// bytes differ between zlib builds; what they decode to must not).
fn decoded(r: &Response) -> String {
    if r.header("content-encoding") != Some("gzip") {
        return r.text();
    }
    let mut out = String::new();
    let mut d = flate2::read::GzDecoder::new(&r.body[..]);
    match std::io::Read::read_to_string(&mut d, &mut out) {
        Ok(_) => out,
        Err(e) => format!("(bad gzip: {e})"),
    }
}

struct Run {
    backends: [Backend; 3],
    root: TempDir,
}

impl Run {
    fn new() -> Run {
        let root = TempDir::new("realistic-root");
        let files: &[(&str, &str)] = &[
            ("index.html", "<html>shell</html>\n"),
            ("assets/app.3f2a.js", "console.log(1);\n"),
            ("assets/site.css", "body{}\n"),
            ("about/index.html", "<html>about</html>\n"),
            ("errors/404.html", "<html>our 404</html>\n"),
            ("errors/50x.html", "<html>our 50x</html>\n"),
        ];
        for (name, text) in files {
            let p = root.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Run {
            backends: [Backend::start(), Backend::start(), Backend::start()],
            root,
        }
    }

    fn config(&self, name: &str, port: u16) -> String {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../config/realistic")
            .join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut text = text.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
        for (i, b) in self.backends.iter().enumerate() {
            let from = format!("127.0.0.1:{}", 9001 + i);
            text = text.replace(&from, &format!("127.0.0.1:{}", b.port()));
        }
        text.replace("/srv/realistic", &self.root.path().display().to_string())
    }

    /// Which backend answered (1-based; 0: none), by the port it names.
    fn backend_of(&self, r: &Response) -> usize {
        let port = common::served_by(r);
        self.backends
            .iter()
            .position(|b| b.port() == port)
            .map_or(0, |i| i + 1)
    }

    fn reset(&self) {
        for b in &self.backends {
            b.reset_hits();
        }
    }

    /// How many requests each backend has seen.
    fn counts(&self) -> Vec<usize> {
        self.backends.iter().map(|b| b.requests().len()).collect()
    }

    /// The request a backend got since `before` (`counts`), if one did.
    fn newest(&self, before: &[usize]) -> Option<Recorded> {
        self.backends
            .iter()
            .zip(before)
            .find_map(|(b, &n)| b.requests().get(n..).and_then(|r| r.last().cloned()))
    }
}

/// What one request produced, as compared.
fn record(run: &Run, port: u16, req: &Req) -> String {
    let before = run.counts();
    let (method, target, headers) = req;
    let mut c = Client::connect(("127.0.0.1", port));
    let mut h: Vec<(&str, &str)> = vec![("Host", "app.example.com")];
    for (k, v) in headers.iter() {
        if k.eq_ignore_ascii_case("host") {
            h.retain(|(n, _)| !n.eq_ignore_ascii_case("host"));
        }
        h.push((k, v));
    }
    let r = c.request(method, target, &h, b"");
    let body = signature_free(decoded(&r).trim_end());
    let mut line = format!("{} {method} {target}: {body}", r.status);
    for f in RESPONSE_FIELDS {
        for v in r.header_all(f) {
            // A date from the clock: the two runs may fall in different seconds.
            let v = match *f {
                "expires" => "DATE".to_string(),
                _ => v.replace(&port.to_string(), "PORT"),
            };
            line.push_str(&format!(" | {f}: {v}"));
        }
    }
    line.push_str(&format!(" | backend {}", run.backend_of(&r)));
    if let Some(up) = run.newest(&before) {
        line.push_str(&format!(" | upstream {} {}", up.method, up.target));
        for f in UPSTREAM_FIELDS {
            // nginx adds `Connection: close` to upstreams by default; ringfront keeps
            // them alive (docs: upstream connections).
            if let Some(v) = up.header(f).filter(|v| *f != "connection" || *v != "close") {
                let v = v.replace(&port.to_string(), "PORT");
                line.push_str(&format!(" | >{f}: {v}"));
            }
        }
    }
    line
}

fn replay(run: &Run, port: u16, reqs: &[Req]) -> Vec<String> {
    reqs.iter().map(|r| record(run, port, r)).collect()
}

/// Runs `name` on nginx, then on ringfront, and compares; nginx's lines.
fn differential(name: &str, reqs: &[Req], prepare: impl Fn(&Path)) -> Vec<String> {
    differential_with(name, reqs, |run: &Run| prepare(run.root.path()))
}

/// [`differential`] with the backends at hand too (canned answers).
fn differential_with(name: &str, reqs: &[Req], prepare: impl Fn(&Run)) -> Vec<String> {
    let run = Run::new();
    prepare(&run);
    let np = common::port();
    let nginx = Nginx::start(&run.config(name, np), np);
    let n = replay(&run, np, reqs);
    drop(nginx);
    run.reset();
    let rp = common::port();
    let ringfront = Ringfront::start(&run.config(name, rp));
    let r = replay(&run, rp, reqs);
    drop(ringfront);
    for (a, b) in n.iter().zip(&r) {
        let mark = if a == b { " " } else { "≠" };
        println!("{mark} nginx: {a}\n{mark}    rf: {b}");
    }
    assert_eq!(r, n, "{name}: ringfront differs from nginx");
    n
}

/// Some request reached a backend (the comparison was not of error pages only).
fn some_proxied(lines: &[String]) {
    assert!(
        lines.iter().any(|l| l.contains(" | upstream ")),
        "no request reached a backend: {lines:?}"
    );
}

#[test]
fn lb_basic() {
    let n = differential(
        "lb-basic.conf",
        &[
            ("GET", "/healthz", &[]),
            ("GET", "/", &[]),
            ("GET", "/", &[]),
            ("GET", "/", &[]),
            (
                "GET",
                "/api/users?id=7",
                &[("X-Forwarded-For", "203.0.113.9")],
            ),
            ("GET", "/api/", &[]),
            ("HEAD", "/page", &[]),
            ("GET", "/missing?code=404", &[]),
            ("GET", "/oops?code=500", &[]),
        ],
        |_| {},
    );
    some_proxied(&n);
}

#[test]
fn websocket() {
    let n = differential(
        "websocket.conf",
        &[
            ("GET", "/socket/chat", &[]),
            ("GET", "/socket/chat", &[]),
            ("GET", "/", &[("Host", "other.example.com")]),
        ],
        |_| {},
    );
    some_proxied(&n);
}

#[test]
fn rewrites() {
    let n = differential(
        "rewrites.conf",
        &[
            ("GET", "/blog/2021/05/hello-world", &[]),
            ("GET", "/old-shop/cart?x=1", &[]),
            ("GET", "/old-shop", &[]),
            ("GET", "/app/dashboard?tab=2", &[]),
            ("GET", "/go?utm=mail", &[]),
            ("GET", "/docs/intro", &[]),
            ("GET", "/docs/intro/", &[]),
            ("GET", "/anything", &[("X-Maintenance", "on")]),
            ("GET", "/anything", &[("Host", "example.com")]),
        ],
        |_| {},
    );
    some_proxied(&n);
}

#[test]
fn access_and_geo() {
    let n = differential(
        "access-geo.conf",
        &[
            ("GET", "/admin/panel", &[]),
            ("GET", "/internal/x", &[]),
            ("GET", "/internal/x", &[("X-Forwarded-For", "10.1.2.3")]),
            ("GET", "/internal/x", &[("X-Forwarded-For", "198.51.100.7")]),
            ("GET", "/api/items", &[]),
            ("GET", "/api/items", &[("X-Api-Key", "k-123")]),
            ("GET", "/api/items", &[("X-Api-Key", "k-9001")]),
            ("GET", "/u", &[("X-User", "alice")]),
            ("GET", "/u", &[("X-User", "bob")]),
            ("GET", "/u", &[("X-User", "carol")]),
            ("GET", "/u", &[("X-User", "alice")]),
        ],
        |_| {},
    );
    some_proxied(&n);
}

#[test]
fn spa_static() {
    let reqs: &[Req] = &[
        ("GET", "/", &[]),
        ("GET", "/settings/profile", &[]),
        ("GET", "/about/", &[]),
        ("GET", "/about", &[]),
        ("GET", "/assets/site.css", &[]),
        ("GET", "/assets/missing.js", &[]),
        ("GET", "/api/list", &[]),
    ];
    some_proxied(&differential("spa-static.conf", reqs, |_| {}));
    let down = differential(
        "spa-static.conf",
        &[("GET", "/", &[]), ("GET", "/api/list", &[])],
        |root| std::fs::write(root.join("maintenance.on"), "").unwrap(),
    );
    assert!(down.iter().all(|l| l.starts_with("503 ")), "{down:?}");
}

#[test]
fn canary_split() {
    let n = differential(
        "canary.conf",
        &[
            ("GET", "/", &[("Cookie", "uid=1")]),
            ("GET", "/", &[("Cookie", "uid=2")]),
            ("GET", "/", &[("Cookie", "uid=3")]),
            ("GET", "/", &[("Cookie", "uid=4")]),
            ("GET", "/", &[("Cookie", "uid=5")]),
            ("GET", "/", &[("Cookie", "uid=6")]),
            ("GET", "/", &[("Cookie", "uid=7")]),
            ("GET", "/", &[("Cookie", "uid=8")]),
            ("GET", "/", &[("Cookie", "uid=9")]),
            ("GET", "/", &[("Cookie", "uid=1"), ("X-Pool", "canary")]),
            ("GET", "/", &[("Cookie", "uid=1"), ("X-Pool", "stable")]),
        ],
        |_| {},
    );
    some_proxied(&n);
    assert!(n.iter().any(|l| l.contains("backend 2")), "{n:?}");
}

#[test]
fn error_pages() {
    let n = differential(
        "error-pages.conf",
        &[
            ("GET", "/api/ok", &[]),
            ("GET", "/api/fail?code=500", &[]),
            ("GET", "/api/gone?code=503", &[]),
            ("GET", "/api/missing?code=404", &[]),
            ("GET", "/down/x", &[]),
            ("GET", "/nothing-here", &[]),
            ("GET", "/errors/404.html", &[]),
        ],
        |_| {},
    );
    some_proxied(&n);
    assert!(n.iter().any(|l| l.contains("our 50x")), "{n:?}");
}

#[test]
fn headers_and_gzip() {
    let n = differential_with(
        "headers-gzip.conf",
        &[
            ("GET", "/shop/login", &[]),
            ("GET", "/shop/item", &[("Accept-Encoding", "gzip")]),
            ("GET", "/shop/item", &[]),
            (
                "GET",
                "/shop/data.json",
                &[("Accept-Encoding", "gzip, deflate")],
            ),
        ],
        |run| {
            let b = &run.backends[0];
            b.set_route(
                "/login",
                Canned::status(302, "moved")
                    .header("Location", "http://app.internal/account")
                    .header("Set-Cookie", "sid=1; Path=/; HttpOnly"),
            );
            b.set_route(
                "/data.json",
                Canned::status(200, "{\"items\":[1,2,3,4,5,6,7,8,9,10]}")
                    .header("Content-Type", "application/json"),
            );
        },
    );
    some_proxied(&n);
    assert!(
        n.iter().any(|l| l.contains("content-encoding: gzip")),
        "{n:?}"
    );
    assert!(
        n.iter()
            .any(|l| l.contains("location: http://app.example.com:PORT/shop/account")),
        "{n:?}"
    );
}
