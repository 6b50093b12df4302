//! Shared pieces of the integration suites: configs built from templates with real ports.

#![allow(dead_code)]

pub mod body;
pub mod health;

use ringfront_testkit::{free_port, Backend};

/// Replaces `{KEY}` placeholders, so nginx's own braces need no escaping.
pub fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// nginx's recipe for reusing upstream connections, written in a location beside a group's
/// `keepalive N` (decision 0018: without it each request says `Connection: close`).
pub const REUSE: &str = "proxy_http_version 1.1; proxy_set_header Connection \"\";";

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

/// Waits (bounded, 10 s) until the log file at `path` holds at least `lines` lines (the
/// writer thread flushes when idle); its lines.
pub fn log_lines(path: &std::path::Path, lines: usize) -> Vec<String> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(str::to_string).collect();
        if got.len() >= lines || std::time::Instant::now() > end {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The `X-Backend` header (the serving backend's port) of a response.
pub fn served_by(r: &ringfront_testkit::Response) -> u16 {
    r.header("x-backend")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// Differential runs (the `semantics_*` suites): one scenario, replayed through real nginx
// and then through ringfront against the same backends, recorded as lines and compared.
// ---------------------------------------------------------------------------------------

use std::net::Ipv4Addr;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ringfront_testkit::{golden, http, Mode, Nginx, Response, Ringfront};

/// Which proxy a run drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proxy {
    Nginx,
    Ringfront,
}

/// One proxy's replay of a scenario: every observation becomes a line of `lines`, and the two
/// proxies' lines must be equal. Backends are named `b0`, `b1`, ... in the order given.
pub struct Run<'a> {
    pub proxy: Proxy,
    pub port: u16,
    backends: &'a [&'a Backend],
    /// Elapsed times are recorded as a multiple of this many seconds (rounded), so the
    /// comparison sees which timeouts a request went through, not scheduler noise.
    unit: f64,
    pub lines: Vec<String>,
}

/// A request started with [`Run::spawn`], recorded when joined.
pub struct Pending {
    label: String,
    started: Instant,
    handle: JoinHandle<std::io::Result<Response>>,
}

impl<'a> Run<'a> {
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Sets every backend's mode, in order.
    pub fn modes(&self, modes: &[Mode]) {
        assert_eq!(modes.len(), self.backends.len());
        for (b, m) in self.backends.iter().zip(modes) {
            b.set_mode(*m);
        }
    }

    /// `b3` for a response with `X-Backend` of the fourth backend, `-` for none (nginx's own
    /// error page), `?PORT` for a port that is no backend of this run.
    pub fn who(&self, r: &Response) -> String {
        let p = served_by(r);
        match self.backends.iter().position(|b| b.port() == p) {
            Some(i) => format!("b{i}"),
            None if p == 0 => "-".into(),
            None => format!("?{p}"),
        }
    }

    fn bucket(&self, d: Duration) -> String {
        let n = (d.as_secs_f64() / self.unit).round();
        format!("~{}s", n * self.unit)
    }

    fn record(
        &mut self,
        label: &str,
        r: std::io::Result<Response>,
        took: Duration,
    ) -> Option<Response> {
        let line = match &r {
            Ok(r) => format!(
                "{label} -> {} {} {}",
                r.status,
                self.who(r),
                self.bucket(took)
            ),
            Err(e) => format!("{label} -> error {:?} {}", e.kind(), self.bucket(took)),
        };
        self.lines.push(line);
        r.ok()
    }

    /// `GET path` on a fresh connection; records status, backend, elapsed bucket.
    pub fn get(&mut self, path: &str) -> Option<Response> {
        self.request("GET", path, b"")
    }

    /// Any method, on a fresh connection (`Connection: close`).
    pub fn request(&mut self, method: &str, path: &str, body: &[u8]) -> Option<Response> {
        let t = Instant::now();
        let r = ringfront_testkit::Client::try_connect(self.addr())
            .and_then(|mut c| c.try_request(method, path, &[("Connection", "close")], body));
        self.record(&format!("{method} {path}"), r, t.elapsed())
    }

    /// `GET path` from client address `src` (any 127.x.y.z).
    pub fn get_from(&mut self, src: Ipv4Addr, path: &str) -> Option<Response> {
        let t = Instant::now();
        let r = golden::get_from(src, self.addr(), path);
        self.record(&format!("GET {path} from {src}"), r, t.elapsed())
    }

    /// Starts `GET path` in the background; [`Run::join`] records it.
    pub fn spawn(&self, path: &str) -> Pending {
        let addr = self.addr();
        let p = path.to_string();
        Pending {
            label: format!("GET {path} (concurrent)"),
            started: Instant::now(),
            handle: std::thread::spawn(move || http::try_get(addr, &p)),
        }
    }

    pub fn join(&mut self, p: Pending) -> Option<Response> {
        let r = p.handle.join().expect("request thread");
        self.record(&p.label, r, p.started.elapsed())
    }

    /// Waits (up to 10 s) until the backends together have received `n` requests since the
    /// run started: how a scenario knows a background request reached its peer.
    pub fn wait_total_hits(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.backends.iter().map(|b| b.hits()).sum::<usize>() < n {
            assert!(
                Instant::now() < deadline,
                "{:?}: backends never got {n} requests",
                self.proxy
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Records how many requests each backend received so far (and, for backends in Hang
    /// mode, how many connections it accepted: `3+3acc`).
    pub fn counts(&mut self, label: &str) {
        let parts: Vec<String> = self
            .backends
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if b.mode() == Mode::Hang {
                    format!("b{i}={}+{}acc", b.hits(), b.accepted())
                } else {
                    format!("b{i}={}", b.hits())
                }
            })
            .collect();
        self.lines
            .push(format!("counts {label}: {}", parts.join(" ")));
    }

    /// Records the lines of the access log at [`access_log_path`] (waiting up to 15 s for
    /// `n` of them: ringfront writes from a log thread), each as `log: LINE`, and removes it.
    pub fn access_log(&mut self, n: usize) {
        let path = access_log_path(self.port);
        let deadline = Instant::now() + Duration::from_secs(15);
        let text = loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.lines().count() >= n || Instant::now() >= deadline {
                break text;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = std::fs::remove_file(&path);
        // Sorted: a request's line is written when its response is done, and with sequential
        // requests on separate connections two lines may land in either order (ringfront
        // logs after its write completes, nginx as its write returns). Each line names its
        // request, and every request's status and backend are compared in order elsewhere.
        let mut lines: Vec<String> = text
            .lines()
            .map(|l| {
                let mut l = l.to_string();
                for (i, b) in self.backends.iter().enumerate() {
                    l = l.replace(&addr(b), &format!("b{i}"));
                }
                format!("log: {l}")
            })
            .collect();
        lines.sort();
        self.lines.extend(lines);
    }

    /// Zeroes every backend's counters (for phases whose earlier counts are not compared).
    pub fn reset_counts(&self) {
        self.backends.iter().for_each(|b| b.reset_hits());
    }

    /// Records a free-form observation.
    pub fn note(&mut self, s: impl Into<String>) {
        self.lines.push(s.into());
    }
}

/// Runs `scenario` through nginx, then ringfront, both on `config(port)`, with backend
/// counters reset after each proxy started. Returns (nginx lines, ringfront lines).
pub fn replay(
    backends: &[&Backend],
    unit: f64,
    config: impl Fn(u16) -> String,
    scenario: impl Fn(&mut Run),
) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    for proxy in [Proxy::Nginx, Proxy::Ringfront] {
        let p = port();
        let conf = config(p);
        let mut run = Run {
            proxy,
            port: p,
            backends,
            unit,
            lines: Vec::new(),
        };
        match proxy {
            Proxy::Nginx => {
                let _n = Nginx::start(&conf, p);
                backends.iter().for_each(|b| b.reset_hits());
                scenario(&mut run);
                // Shown with --nocapture (and on failure): what nginx did.
                println!("== nginx:{p}\n{}", run.lines.join("\n"));
            }
            Proxy::Ringfront => {
                let _r = Ringfront::start(&conf);
                backends.iter().for_each(|b| b.reset_hits());
                scenario(&mut run);
            }
        }
        out.push(run.lines);
    }
    let rf = out.pop().unwrap();
    (out.pop().unwrap(), rf)
}

/// Panics with both traces side by side unless they are equal (long traces: only the
/// differing lines, at most 60).
pub fn assert_same(what: &str, nginx: &[String], ringfront: &[String]) {
    if nginx == ringfront {
        return;
    }
    let n_lines = nginx.len().max(ringfront.len());
    let differing = (0..n_lines)
        .filter(|i| nginx.get(*i) != ringfront.get(*i))
        .count();
    let mut msg =
        format!("{what}: ringfront differs from nginx on {differing} of {n_lines} lines\n");
    let mut shown = 0;
    for i in 0..n_lines {
        let n = nginx.get(i).map(String::as_str).unwrap_or("<none>");
        let r = ringfront.get(i).map(String::as_str).unwrap_or("<none>");
        if n_lines > 60 && n == r {
            continue;
        }
        shown += 1;
        if shown > 60 {
            msg.push_str("...\n");
            break;
        }
        let mark = if n == r { "  " } else { "!!" };
        msg.push_str(&format!(
            "{mark} #{i:<4} nginx: {n}\n{mark} #{i:<4}    rf: {r}\n"
        ));
    }
    panic!("{msg}");
}

/// [`replay`] then [`assert_same`]; returns nginx's lines for extra assertions.
pub fn differential(
    what: &str,
    backends: &[&Backend],
    unit: f64,
    config: impl Fn(u16) -> String,
    scenario: impl Fn(&mut Run),
) -> Vec<String> {
    let (n, r) = replay(backends, unit, config, scenario);
    assert_same(what, &n, &r);
    n
}

/// One variant for [`in_parallel`].
pub type Variant<'a> = Box<dyn FnOnce() + Send + 'a>;

/// Runs independent variants of a scenario at once (each with its own backends), so slow
/// timeout scenarios cost wall time once; panics listing every variant that failed.
pub fn in_parallel(variants: Vec<(&str, Variant<'_>)>) {
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = variants
            .into_iter()
            .map(|(name, f)| (name, s.spawn(f)))
            .collect();
        handles
            .into_iter()
            .filter_map(|(name, h)| {
                h.join().err().map(|e| {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("[{name}] {msg}")
                })
            })
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} variant(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `n` backends.
pub fn backends(n: usize) -> Vec<Backend> {
    (0..n).map(|_| Backend::start()).collect()
}

/// `server` bodies: each backend's address followed by its parameters.
pub fn servers(bs: &[&Backend], params: &[&str]) -> Vec<String> {
    bs.iter()
        .zip(params)
        .map(|(b, p)| format!("{} {p}", addr(b)).trim_end().to_string())
        .collect()
}

/// Adds directives at the `http {}` level of a config from [`proxy_config`].
pub fn with_http(conf: String, extra: &str) -> String {
    conf.replacen("http {\n", &format!("http {{\n    {extra}\n"), 1)
}

/// Where a config's access log goes (absolute: nginx and ringfront resolve relative paths
/// against different prefixes); unique per listen port.
pub fn access_log_path(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "ringfront-semantics-{}-{port}.log",
        std::process::id()
    ))
}

/// `log_format upstream ...; access_log PATH upstream;` at the http level of `conf`.
pub fn with_upstream_log(conf: String, port: u16) -> String {
    with_http(
        conf,
        &format!(
            "log_format upstream '\"$request\" $status \"$upstream_addr\" \"$upstream_status\"';\n    \
             access_log {} upstream;",
            access_log_path(port).display()
        ),
    )
}

/// Real nginx and ringfront on the same configuration (`config(port)`), each on a port of
/// its own: (nginx, ringfront, nginx's port, ringfront's port). Both are stopped on drop.
pub fn nginx_and_ringfront(config: impl Fn(u16) -> String) -> (Nginx, Ringfront, u16, u16) {
    let (np, rp) = (port(), port());
    let n = Nginx::start(&config(np), np);
    let r = Ringfront::start(&config(rp));
    (n, r, np, rp)
}
