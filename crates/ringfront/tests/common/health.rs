//! Helpers of the health-check suites (`health_*.rs`): configs with checks, waiting for the
//! checker's state-change lines, and counting which backend served the user requests.

use std::time::{Duration, Instant};

use ringfront_testkit::{Backend, Client, Ringfront};

use super::{fill, proxy_config, served_by};

/// How long a state change may take to show up (generous: a noisy 2-core machine).
pub const WAIT: Duration = Duration::from_secs(10);

/// A one-upstream config (group `backend`) with `http_extra` at the http level (e.g. a
/// `match` block), `upstream_extra` in the group and `location_extra` in `location /`.
pub fn hc_config(
    port: u16,
    servers: &[String],
    upstream_extra: &str,
    location_extra: &str,
    http_extra: &str,
) -> String {
    let conf = proxy_config(port, servers, upstream_extra, location_extra);
    conf.replacen(
        "http {\n",
        &fill("http {\n{X}\n", &[("X", http_extra.into())]),
        1,
    )
}

/// `upstream server 127.0.0.1:PORT of "backend"`: how the checker names a peer.
pub fn label(b: &Backend) -> String {
    format!("upstream server 127.0.0.1:{} of \"backend\"", b.port())
}

/// Waits for the checker's line `upstream server ADDR of "backend" WHAT...` (`what`: `marked
/// down`, `marked up: 2 passed`, `kept up`, ...); returns the first such line. Panics with
/// the whole stderr on timeout.
pub fn wait_state(rf: &Ringfront, b: &Backend, what: &str) -> String {
    wait_state_nth(rf, b, what, 1)
}

/// Like [`wait_state`], for the `n`th such line (1-based).
pub fn wait_state_nth(rf: &Ringfront, b: &Backend, what: &str, n: usize) -> String {
    let needle = format!("{} {what}", label(b));
    let deadline = Instant::now() + WAIT;
    loop {
        let lines = rf.stderr_lines();
        if let Some(line) = lines.iter().filter(|l| l.contains(&needle)).nth(n - 1) {
            return line.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no line #{n} with `{needle}` within {WAIT:?}; stderr:\n{}",
            lines.join("\n")
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a line `upstream server ADDR of "backend" WHAT` was printed so far.
pub fn has_state(rf: &Ringfront, b: &Backend, what: &str) -> bool {
    let needle = format!("{} {what}", label(b));
    rf.stderr_lines().iter().any(|l| l.contains(&needle))
}

/// The checker's state lines for `b` so far (`marked up`, `marked down`, `held out`, `kept up`).
pub fn state_lines(rf: &Ringfront, b: &Backend) -> Vec<String> {
    let l = label(b);
    rf.stderr_lines()
        .into_iter()
        .filter(|line| line.contains(&l))
        .collect()
}

/// stderr lines after the first one containing `marker` (which must have been printed).
pub fn lines_after(rf: &Ringfront, marker: &str) -> Vec<String> {
    let lines = rf.stderr_lines();
    let i = lines
        .iter()
        .position(|l| l.contains(marker))
        .expect("marker line");
    lines[i + 1..].to_vec()
}

/// Whether ringfront logged a failed request to `b` (`connect() failed`, `timed out`, ...)
/// in `lines`: an error line naming `b` as the request's upstream.
pub fn tried(lines: &[String], b: &Backend) -> Vec<String> {
    let upstream = format!("upstream: \"http://127.0.0.1:{}/", b.port());
    lines
        .iter()
        .filter(|l| l.contains("[error]") && l.contains(&upstream))
        .cloned()
        .collect()
}

/// Polls `cond` every 10 ms until it holds; panics with `what` after [`WAIT`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Requests `path` on `b` whose target starts with `prefix` (e.g. the probes: `/health`).
pub fn requests_to(b: &Backend, prefix: &str) -> usize {
    b.requests()
        .iter()
        .filter(|r| r.target.starts_with(prefix))
        .count()
}

/// User requests on `b`: every request whose target does not start with `probe`.
pub fn user_requests(b: &Backend, probe: &str) -> usize {
    b.requests()
        .iter()
        .filter(|r| !r.target.starts_with(probe))
        .count()
}

/// A keepalive client on the proxy that records which backend served each request.
pub struct Load {
    port: u16,
    client: Option<Client>,
}

impl Load {
    pub fn new(port: u16) -> Load {
        Load { port, client: None }
    }

    /// `GET path`; returns (status, serving backend's port or 0).
    pub fn get(&mut self, path: &str) -> (u16, u16) {
        for _ in 0..2 {
            let c = match self.client.as_mut() {
                Some(c) => c,
                None => self
                    .client
                    .insert(Client::connect(("127.0.0.1", self.port))),
            };
            match c.try_request("GET", path, &[], b"") {
                Ok(r) => {
                    if r.header("connection").is_some_and(|v| v == "close") {
                        self.client = None;
                    }
                    return (r.status, served_by(&r));
                }
                // A keepalive connection the proxy closed meanwhile: once more, afresh.
                Err(_) => self.client = None,
            }
        }
        panic!("GET {path} on 127.0.0.1:{} failed twice", self.port);
    }

    /// `n` requests for `/`; the serving backend of each (0 for the proxy's own page).
    pub fn spread(&mut self, n: usize) -> Vec<u16> {
        (0..n).map(|_| self.get("/").1).collect()
    }
}

/// How many entries of `served` are `b`.
pub fn count(served: &[u16], b: &Backend) -> usize {
    served.iter().filter(|p| **p == b.port()).count()
}
