//! Realistic configurations (config/realistic/, one per feature area) run unchanged on
//! real nginx and on ringfront in front of the same backends; every request's status,
//! body, answering backend, the response headers that matter and what the backend saw
//! (target and forwarding headers) must be the same.

mod common;

use ringfront_testkit::MaskPort;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    "server",
    "x-powered-by",
    "x-runtime",
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
    "content-type",
    "content-length",
    "x-trace",
    "x-original-uri",
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

/// `stub_status` counts the harness's own readiness probes among accepted connections
/// (nginx's start is probed with a connection, ringfront's is not): those two numbers are
/// compared only for being equal (none dropped). The active and waiting counts include the
/// client's previous connections until the server has seen them close (a race in either):
/// left out. The request count and reading/writing are compared as sent.
fn stub_accepts_free(body: &str) -> String {
    if !body.starts_with("Active connections:") {
        return body.to_string();
    }
    let mut lines: Vec<String> = body.lines().map(str::to_string).collect();
    lines[0] = "Active connections: -".to_string();
    if let Some(states) = lines.get_mut(3) {
        if let Some(i) = states.find("Waiting: ") {
            states.truncate(i + 9);
            states.push('-');
        }
    }
    if let Some(counts) = lines.get_mut(2) {
        let n: Vec<&str> = counts.split_whitespace().collect();
        if let [a, h, r] = n[..] {
            let same = if a == h { "N N" } else { "A != H" };
            *counts = format!(" {same} {r} ");
        }
    }
    lines.join("\n")
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
    let body = stub_accepts_free(&signature_free(decoded(&r).trim_end()));
    let mut line = format!("{} {method} {target}: {body}", r.status);
    for f in RESPONSE_FIELDS {
        for v in r.header_all(f) {
            // A date from the clock: the two runs may fall in different seconds.
            let v = match *f {
                // `epoch` and `max` are fixed dates.
                "expires" if !v.contains("1970") && !v.contains("2037") => "DATE".to_string(),
                // Each names itself; a backend's own (`proxy_pass_header`) is compared.
                "server"
                    if v.starts_with("nginx")
                        || v == "ringfront"
                        || v.starts_with("ringfront/") =>
                {
                    "SERVER".to_string()
                }
                _ => v.mask_port(port),
            };
            line.push_str(&format!(" | {f}: {v}"));
        }
    }
    line.push_str(&format!(" | backend {}", run.backend_of(&r)));
    if let Some(up) = run.newest(&before) {
        line.push_str(&format!(
            " | upstream {} {} {}",
            up.method, up.target, up.version
        ));
        for f in UPSTREAM_FIELDS {
            if let Some(v) = up.header(f) {
                let v = v.mask_port(port);
                line.push_str(&format!(" | >{f}: {v}"));
            }
        }
        if !up.body.is_empty() {
            let body = String::from_utf8_lossy(&up.body).mask_port(port);
            line.push_str(&format!(" | >body: {body}"));
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
    differential_collect(name, reqs, prepare, |_| Vec::new())
}

/// [`differential_with`] that also compares what `collect` finds once each server has
/// stopped (log files; `collect` clears them for the next run).
fn differential_collect(
    name: &str,
    reqs: &[Req],
    prepare: impl Fn(&Run),
    collect: impl Fn(&Run) -> Vec<String>,
) -> Vec<String> {
    let run = Run::new();
    prepare(&run);
    let np = common::port();
    let nginx = Nginx::start(&run.config(name, np), np);
    let mut n = replay(&run, np, reqs);
    drop(nginx);
    n.extend(collect(&run));
    run.reset();
    let rp = common::port();
    let ringfront = Ringfront::start(&run.config(name, rp));
    let mut r = replay(&run, rp, reqs);
    // Stopped as nginx is (SIGQUIT, a graceful stop), so that what it logged is written.
    ringfront.signal(libc::SIGQUIT);
    assert!(
        ringfront.wait_exit(Duration::from_secs(5)).is_some(),
        "{name}: ringfront did not stop on SIGQUIT"
    );
    drop(ringfront);
    r.extend(collect(&run));
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

#[test]
fn proxy_pass_variables() {
    let n = differential(
        "proxy-vars.conf",
        &[
            ("GET", "/", &[]),
            ("GET", "/", &[("Host", "green.example.com")]),
            ("GET", "/home", &[("Host", "www.green.example.com")]),
            ("GET", "/", &[("Host", "legacy.example.com")]),
            ("GET", "/", &[("Host", "LEGACY.Example.NET")]),
            ("GET", "/", &[("Host", "green.example.com:8080")]),
            ("GET", "/", &[("Cookie", "deploy=green")]),
            (
                "GET",
                "/",
                &[
                    ("Host", "legacy.example.com"),
                    ("Cookie", "a=1; deploy=blue"),
                ],
            ),
            ("GET", "/debug/x?node=2", &[]),
            ("GET", "/debug/x?node=3&verbose=1", &[]),
            ("GET", "/debug/x", &[]),
            ("GET", "/debug/x?node=9", &[]),
            (
                "GET",
                "/api/users/%7Eme?id=1&q=a%20b",
                &[("Host", "green.example.com")],
            ),
            ("GET", "/api//double/./dot", &[]),
            ("GET", "/static/app.js?v=3", &[]),
            ("GET", "/static/css/site.css", &[]),
        ],
        |_| {},
    );
    some_proxied(&n);
    for b in 1..=3 {
        let mark = format!("backend {b}");
        assert!(n.iter().any(|l| l.contains(&mark)), "{mark}: {n:?}");
    }
}

#[test]
fn maps_geo_split() {
    let mut reqs: Vec<Req> = vec![
        ("GET", "/whoami", &[("Host", "acme.example.com")]),
        ("GET", "/whoami", &[("Host", "eu.acme.example.com")]),
        ("GET", "/whoami", &[("Host", "shop.example.org")]),
        ("GET", "/whoami", &[("Host", "a.beta.example.com")]),
        ("GET", "/whoami", &[("Host", "beta.example.com")]),
        ("GET", "/whoami", &[("X-Client-IP", "10.2.3.4")]),
        ("GET", "/whoami", &[("X-Client-IP", "192.0.2.5")]),
        ("GET", "/whoami", &[("X-Client-IP", "192.0.2.200")]),
        ("GET", "/whoami", &[("X-Client-IP", "198.51.100.10")]),
        ("GET", "/whoami", &[("X-Client-IP", "198.51.100.11")]),
        ("GET", "/whoami", &[("X-Client-IP", "not-an-address")]),
        ("GET", "/whoami", &[("X-Forwarded-For", "203.0.113.5")]),
        (
            "GET",
            "/whoami",
            &[("X-Forwarded-For", "203.0.113.5, 10.1.1.1")],
        ),
        (
            "GET",
            "/whoami",
            &[("X-Forwarded-For", "203.0.113.5, 198.51.100.1")],
        ),
        (
            "GET",
            "/whoami",
            &[("X-Forwarded-For", "198.51.100.1, 203.0.113.9")],
        ),
        ("GET", "/api/v3/items", &[("Host", "shop.example.org")]),
        ("GET", "/api/items", &[("X-Client-IP", "10.0.0.1")]),
        ("GET", "/API/Legacy/x", &[]),
    ];
    const USERS: &[&[(&str, &str)]] = &[
        &[("X-User", "u1")],
        &[("X-User", "u2")],
        &[("X-User", "u3")],
        &[("X-User", "u4")],
        &[("X-User", "u5")],
        &[("X-User", "u6")],
        &[("X-User", "u7")],
        &[("X-User", "u8")],
        &[("X-User", "alice@example.com")],
        &[("X-User", "bob@example.com")],
        &[],
    ];
    reqs.extend(USERS.iter().map(|h| ("GET", "/", *h)));
    let n = differential("maps-geo.conf", &reqs, |root| {
        std::fs::create_dir_all(root.join("maps")).unwrap();
        let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../config/realistic/maps/tenants.map");
        std::fs::copy(shipped, root.join("maps/tenants.map")).unwrap();
    });
    some_proxied(&n);
    let offices = n.iter().filter(|l| l.contains("office=yes")).count();
    assert_eq!(offices, 3, "{n:?}");
    for b in 1..=3 {
        let mark = format!("backend {b}");
        assert!(n.iter().any(|l| l.contains(&mark)), "{mark}: {n:?}");
    }
}

/// The access log's lines, in order, then removed for the next run.
fn take_log(run: &Run) -> Vec<String> {
    let path = run.root.path().join("logs/access.log");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    text.lines()
        .map(|l| format!("log: {}", local_size_free(l)))
        .collect()
}

/// A local answer's (`up=-`) `$body_bytes_sent`: the built-in error pages name the server
/// (docs: local responses), so their sizes differ by the name's length.
fn local_size_free(line: &str) -> String {
    let Some(i) = line.find("\" ").filter(|_| line.ends_with(" up=-")) else {
        return line.to_string();
    };
    let (head, rest) = line.split_at(i + 2);
    let mut fields: Vec<&str> = rest.splitn(3, ' ').collect();
    if fields.len() == 3 {
        fields[1] = "SIZE";
    }
    format!("{head}{}", fields.join(" "))
}

#[test]
fn operations() {
    let reqs: &[Req] = &[
        ("GET", "/nginx_status", &[]),
        ("GET", "/status", &[]),
        ("GET", "/", &[("User-Agent", "probe/1.0")]),
        ("GET", "/missing?code=404", &[("User-Agent", "crawler")]),
        ("GET", "/boom?code=500", &[]),
        ("GET", "/sidecar/hello", &[]),
        ("GET", "/sidecar/fail?code=503", &[]),
        ("POST", "/form", &[]),
        ("GET", "/nginx_status", &[]),
    ];
    let n = differential_collect(
        "ops.conf",
        reqs,
        |run| {
            let root = run.root.path();
            std::fs::create_dir_all(root.join("logs")).unwrap();
            std::fs::create_dir_all(root.join("tmp")).unwrap();
        },
        take_log,
    );
    some_proxied(&n);
    assert!(
        n[0].starts_with("200 GET /nginx_status: Active connections:"),
        "{n:?}"
    );
    assert!(n[8].contains(" N N 11 \nReading: 0 Writing: 1"), "{n:?}");
    assert!(n.iter().any(|l| l.contains("via-unix unix:")), "{n:?}");
    let logged: Vec<&String> = n.iter().filter(|l| l.starts_with("log: ")).collect();
    assert!(logged.iter().any(|l| l.contains("up=503")), "{n:?}");
    assert!(!logged.iter().any(|l| l.contains(" 200 ")), "{n:?}");
}

#[test]
fn locations_and_methods() {
    let n = differential(
        "locations.conf",
        &[
            ("GET", "/api/items", &[]),
            ("HEAD", "/api/items", &[]),
            ("POST", "/api/items", &[]),
            ("DELETE", "/api/items/1", &[]),
            ("POST", "/upload/file", &[]),
            ("GET", "/upload/file", &[]),
            ("PUT", "/upload/file", &[]),
            ("GET", "/app/ok", &[]),
            ("GET", "/app/x?code=503", &[]),
            ("GET", "/app/x?code=502", &[]),
            ("GET", "/app/x?code=500", &[]),
            ("GET", "/plain/x?code=503", &[]),
            ("GET", "/errors/50x.html", &[]),
            ("GET", "/elsewhere", &[]),
        ],
        |_| {},
    );
    some_proxied(&n);
    assert!(
        n.iter()
            .any(|l| l.starts_with("503 ") && l.contains("our 50x")),
        "{n:?}"
    );
}

#[test]
fn header_rewriting() {
    let n = differential_with(
        "headers-edge.conf",
        &[
            ("GET", "/portal/login", &[]),
            ("GET", "/portal/home", &[]),
            ("GET", "/portal/page.html", &[]),
            ("GET", "/portal/style.css", &[]),
            ("GET", "/portal/logo.png", &[]),
            ("GET", "/portal/data", &[]),
            ("GET", "/portal/plain", &[]),
            ("GET", "/session", &[]),
            ("GET", "/internal/page.html", &[]),
            ("GET", "/media/a.jpg", &[]),
            ("GET", "/media/b.mp4", &[]),
            ("GET", "/media/c.txt", &[]),
        ],
        |run| {
            let b = &run.backends[0];
            let typed = |ct: &str| {
                Canned::status(200, "content")
                    .header("Content-Type", ct)
                    .header("X-Powered-By", "PHP/8.1")
                    .header("X-Runtime", "0.012")
            };
            b.set_route(
                "/internal/login",
                Canned::status(302, "moved")
                    .header("Location", "http://app.internal/internal/account?next=1")
                    .header(
                        "Set-Cookie",
                        "sid=1; Domain=app.internal; Path=/internal/; HttpOnly",
                    )
                    .header("Set-Cookie", "theme=dark; Path=/internal/prefs"),
            );
            b.set_route(
                "/internal/home",
                Canned::status(301, "moved").header("Location", "http://app/internal/next"),
            );
            b.set_route("/internal/page.html", typed("text/html"));
            b.set_route("/internal/style.css", typed("text/css"));
            b.set_route("/internal/logo.png", typed("image/png"));
            b.set_route("/internal/data", typed("application/json"));
            b.set_route("/media/a.jpg", typed("image/jpeg"));
            b.set_route("/media/b.mp4", typed("video/mp4"));
            b.set_route("/media/c.txt", typed("text/plain"));
            b.set_route(
                "/session",
                Canned::status(200, "hi")
                    .header("Set-Cookie", "session=abc; Path=/")
                    .header("Set-Cookie", "other=1; Path=/"),
            );
        },
    );
    some_proxied(&n);
    assert!(
        n.iter().any(|l| l.contains("/portal/account?next=1")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|l| l.contains("Domain=app.example.com")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|l| l.contains("server: ringfront-testkit")),
        "{n:?}"
    );
}

#[test]
fn redirects_and_request_shaping() {
    let trace: &[(&str, &str)] = &[("X-Trace", "t-1"), ("User-Agent", "curl/8")];
    let n = differential_with(
        "redirects-body.conf",
        &[
            ("GET", "/download/report?id=7", trace),
            ("GET", "/download/gone", trace),
            ("GET", "/protected/report.txt", &[]),
            ("GET", "/notify?event=deploy", trace),
            ("GET", "/raw/report", trace),
            ("GET", "/raw/moved", &[]),
            ("GET", "/about", &[]),
            ("GET", "/about", &[("Host", "www.app.example.com")]),
            ("GET", "/site/about", &[("Host", "www.app.example.com")]),
            ("GET", "/rel/about?x=1", &[]),
            ("GET", "/rel/about/", &[]),
            ("GET", "/nowhere", &[]),
        ],
        |run| {
            let files = run.root.path().join("files");
            std::fs::create_dir_all(&files).unwrap();
            std::fs::write(files.join("report.txt"), "quarterly numbers\n").unwrap();
            let b = &run.backends[0];
            let accel = |to: &str| {
                Canned::status(200, "from the app")
                    .header("X-Accel-Redirect", to)
                    .header("X-Accel-Expires", "60")
            };
            b.set_route("/download/report", accel("/protected/report.txt"));
            b.set_route("/download/gone", accel("/protected/missing.txt"));
            b.set_route("/raw/report", accel("/protected/report.txt"));
            b.set_route(
                "/raw/moved",
                Canned::status(302, "").header("Location", "http://app/raw/elsewhere"),
            );
        },
    );
    some_proxied(&n);
    assert!(n.iter().any(|l| l.contains("quarterly numbers")), "{n:?}");
    assert!(
        n.iter().any(|l| l.contains(">body: {\"event\":\"deploy\"")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|l| l.contains("location: /rel/about/?x=1")),
        "{n:?}"
    );
}
