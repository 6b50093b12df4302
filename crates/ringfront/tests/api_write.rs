//! The nginx Plus API's write methods (`api write=on`), driven with curl against a running
//! ringfront: servers added, patched and deleted change where requests go, keep the
//! counters of peers that stay, and answer with nginx Plus's documents and error codes;
//! `state FILE` keeps them across a restart and a reload; six keep-alive clients see no
//! failed request while servers are added, patched and deleted.

mod common;

use std::process::Command;

use common::{addr, fill, port, served_by};
use ringfront_testkit::{http, Backend, Ringfront};
use serde_json::{json, Value};

const CONFIG: &str = "worker_processes 2;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
        zone backend 64k;
        {SERVERS}
    }
    upstream fixed {
        server {B1};
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://backend; }
        location /fixed/ { proxy_pass http://fixed; }
        location /api/ { api write=on; }
        location /ro/ { api; }
        location /guarded/ {
            api write=on;
            limit_except GET { deny all; }
        }
    }
}
";

fn config(p: u16, b1: &Backend, servers: &str) -> String {
    fill(
        CONFIG,
        &[
            ("PORT", p.to_string()),
            ("B1", addr(b1)),
            ("SERVERS", servers.to_string()),
        ],
    )
}

/// One curl call: the status and the JSON body.
fn curl(p: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let url = format!("http://127.0.0.1:{p}{path}");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-X", method, "-w", "\n%{http_code}", &url]);
    if let Some(b) = body {
        cmd.args(["-H", "Content-Type: application/json", "--data-binary"]);
        cmd.arg(b.to_string());
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (doc, code) = text.rsplit_once('\n').expect("curl's status line");
    let v = serde_json::from_str(doc).unwrap_or_else(|e| panic!("{method} {path}: {e}: {doc}"));
    (code.parse().expect("status"), v)
}

fn servers(p: u16) -> Value {
    let (s, v) = curl(p, "GET", "/api/9/http/upstreams/backend/servers", None);
    assert_eq!(s, 200, "{v}");
    v
}

/// Which backends `n` requests on one keep-alive connection reach.
fn spread(p: u16, n: usize) -> Vec<u16> {
    let mut c = http::Client::connect(("127.0.0.1", p));
    (0..n)
        .map(|_| {
            let r = c.request("GET", "/", &[], b"");
            assert_eq!(r.status, 200);
            served_by(&r)
        })
        .collect()
}

fn peer_requests(p: u16, id: u64) -> u64 {
    let (_, v) = curl(p, "GET", "/api/9/http/upstreams/backend", None);
    let peers = v["peers"].as_array().expect("peers");
    let peer = peers.iter().find(|q| q["id"] == id).expect("peer by id");
    peer["requests"].as_u64().expect("requests")
}

#[test]
fn servers_are_added_patched_and_deleted_through_the_api() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&config(p, &b1, &format!("server {};", addr(&b1))));
    assert_eq!(spread(p, 4), vec![b1.port(); 4]);

    // POST: the new server gets the next id and takes requests at once.
    let (s, v) = curl(
        p,
        "POST",
        "/api/9/http/upstreams/backend/servers",
        Some(&json!({"server": addr(&b2), "max_fails": 2, "fail_timeout": "5s"})),
    );
    assert_eq!(s, 201, "{v}");
    assert_eq!(
        v,
        json!({"id": 1, "server": addr(&b2), "weight": 1, "max_conns": 0, "max_fails": 2,
               "fail_timeout": "5s", "slow_start": "0s", "route": "", "backup": false,
               "down": false})
    );
    let got = spread(p, 4);
    assert_eq!(
        got.iter().filter(|&&b| b == b2.port()).count(),
        2,
        "{got:?}"
    );
    let list = servers(p);
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
    assert_eq!(
        (list[0]["id"].clone(), list[1]["id"].clone()),
        (json!(0), json!(1))
    );

    // PATCH weight: the peer that stays keeps its counters.
    let before = peer_requests(p, 0);
    assert!(before >= 6, "{before}");
    let (s, v) = curl(
        p,
        "PATCH",
        "/api/9/http/upstreams/backend/servers/1",
        Some(&json!({"weight": 3})),
    );
    assert_eq!(
        (s, &v["weight"], &v["server"]),
        (200, &json!(3), &json!(addr(&b2)))
    );
    assert!(peer_requests(p, 0) >= before);
    let got = spread(p, 8);
    assert_eq!(
        got.iter().filter(|&&b| b == b2.port()).count(),
        6,
        "{got:?}"
    );

    // PATCH down: no request reaches it.
    let (s, _) = curl(
        p,
        "PATCH",
        "/api/9/http/upstreams/backend/servers/0",
        Some(&json!({"down": true})),
    );
    assert_eq!(s, 200);
    assert_eq!(servers(p)[0]["down"], true);
    assert_eq!(spread(p, 4), vec![b2.port(); 4]);

    // DELETE answers with the servers left; a later POST does not take the old id.
    let (s, v) = curl(p, "DELETE", "/api/9/http/upstreams/backend/servers/0", None);
    assert_eq!(s, 200);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v[0]["id"], 1);
    let (s, v) = curl(
        p,
        "POST",
        "/api/9/http/upstreams/backend/servers",
        Some(&json!({"server": addr(&b3)})),
    );
    assert_eq!((s, &v["id"]), (201, &json!(2)));
    let got = spread(p, 8);
    assert_eq!(
        got.iter().filter(|&&b| b == b3.port()).count(),
        2,
        "{got:?}"
    );
    assert!(!got.contains(&b1.port()), "{got:?}");
    // The peers document shows the API's ids.
    let (_, v) = curl(p, "GET", "/api/9/http/upstreams/backend", None);
    let ids: Vec<_> = v["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].clone())
        .collect();
    assert_eq!(ids, vec![json!(1), json!(2)]);
    drop(rf);
}

#[test]
fn refused_writes_answer_with_nginx_plus_errors() {
    let b1 = Backend::start();
    let p = port();
    let rf = Ringfront::start(&config(p, &b1, &format!("server {};", addr(&b1))));
    let add = json!({"server": "127.0.0.1:1"});
    let code = |method: &str, path: &str, body: Option<&Value>| {
        let (s, v) = curl(p, method, path, body);
        assert_eq!(v["error"]["status"], s, "{v}");
        assert_eq!(v["request_id"].as_str().map(str::len), Some(32), "{v}");
        (s, v["error"]["code"].as_str().unwrap_or("").to_string())
    };
    let servers_of = |up: &str| format!("/api/9/http/upstreams/{up}/servers");
    // write=off: nginx Plus's 405 MethodDisabled.
    assert_eq!(
        code("POST", "/ro/9/http/upstreams/backend/servers", Some(&add)),
        (405, "MethodDisabled".into())
    );
    // An upstream without a zone cannot change.
    assert_eq!(
        code("POST", &servers_of("fixed"), Some(&add)),
        (400, "UpstreamStatic".into())
    );
    assert_eq!(
        code("POST", &servers_of("nope"), Some(&add)),
        (404, "UpstreamNotFound".into())
    );
    assert_eq!(
        code("PATCH", &format!("{}/7", servers_of("backend")), Some(&add)),
        (404, "UpstreamServerNotFound".into())
    );
    assert_eq!(
        code("POST", &servers_of("backend"), Some(&json!({"weight": 2}))),
        (400, "UpstreamConfFormatError".into())
    );
    assert_eq!(
        code(
            "PATCH",
            &format!("{}/0", servers_of("backend")),
            Some(&json!({"drain": "yes"}))
        ),
        (400, "UpstreamConfFormatError".into())
    );
    assert_eq!(
        code(
            "PATCH",
            &format!("{}/0", servers_of("backend")),
            Some(&json!({"weight": 0}))
        ),
        (400, "UpstreamBadWeight".into())
    );
    assert_eq!(
        code("DELETE", &servers_of("backend"), None),
        (405, "MethodNotAllowed".into())
    );
    assert_eq!(
        code("POST", "/api/9/nginx", Some(&add)),
        (405, "MethodNotAllowed".into())
    );
    // allow/deny (here under limit_except) guard the write methods, not the reads.
    let url = format!("http://127.0.0.1:{p}/guarded/9/http/upstreams/backend/servers");
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "POST",
            "-d",
            "{}",
            &url,
        ])
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");
    let (s, _) = curl(p, "GET", "/guarded/9/http/upstreams/backend/servers", None);
    assert_eq!(s, 200);
    // Nothing of the above changed the group.
    assert_eq!(servers(p).as_array().map(Vec::len), Some(1));
    assert_eq!(spread(p, 2), vec![b1.port(); 2]);
    drop(rf);
}

const STATE_CONFIG: &str = "worker_processes 2;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
        zone backend 64k;
        state {STATE};
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://backend; }
        location /api/ { api write=on; }
    }
}
";

fn post(p: u16, b: &Backend, extra: Value) -> Value {
    let mut body = json!({"server": addr(b)});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (s, v) = curl(
        p,
        "POST",
        "/api/9/http/upstreams/backend/servers",
        Some(&body),
    );
    assert_eq!(s, 201, "{v}");
    v
}

/// (server, weight, down) of each server the API lists.
fn listed(p: u16) -> Vec<(String, u64, bool)> {
    let v = servers(p);
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let server = s["server"].as_str().unwrap().to_string();
            (server, s["weight"].as_u64().unwrap(), s["down"] == true)
        })
        .collect()
}

#[test]
fn the_state_file_keeps_api_changes_across_a_restart_and_a_reload() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let p = port();
    let dir = std::env::temp_dir().join(format!("rf-api-state-{}-{p}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("backend.state");
    let cfg = fill(
        STATE_CONFIG,
        &[
            ("PORT", p.to_string()),
            ("STATE", state.display().to_string()),
        ],
    );
    let rf = Ringfront::start(&cfg);
    // No file yet: an empty group.
    assert_eq!(servers(p), json!([]));
    post(p, &b1, json!({}));
    post(p, &b2, json!({"max_fails": 3}));
    let (s, _) = curl(
        p,
        "PATCH",
        "/api/9/http/upstreams/backend/servers/0",
        Some(&json!({"weight": 2})),
    );
    assert_eq!(s, 200);
    let text = std::fs::read_to_string(&state).expect("state file written");
    assert_eq!(
        text,
        format!(
            "server {} weight=2 max_fails=1 fail_timeout=10s;\n\
             server {} weight=1 max_fails=3 fail_timeout=10s;\n",
            addr(&b1),
            addr(&b2)
        )
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left: {left:?}");
    drop(rf);

    // A new process with the same configuration comes back with the API's servers.
    let rf = Ringfront::start(&cfg);
    let want = vec![(addr(&b1), 2, false), (addr(&b2), 1, false)];
    assert_eq!(listed(p), want);
    let got = spread(p, 6);
    assert_eq!(
        got.iter().filter(|&&b| b == b1.port()).count(),
        4,
        "{got:?}"
    );

    // A change, then a reload: the reload reads the file the change wrote.
    post(p, &b3, json!({"down": true}));
    let (s, _) = curl(p, "DELETE", "/api/9/http/upstreams/backend/servers/1", None);
    assert_eq!(s, 200);
    rf.signal(ringfront_testkit::SIGHUP);
    // Each API change counted a generation too: two in this process.
    let line = "reconfigured (generation 4)";
    assert!(
        rf.wait_for_stderr(line, std::time::Duration::from_secs(10)),
        "{:?}",
        rf.stderr_lines()
    );
    let want = vec![(addr(&b1), 2, false), (addr(&b3), 1, true)];
    assert_eq!(listed(p), want);
    assert_eq!(spread(p, 3), vec![b1.port(); 3]);
    drop(rf);
    std::fs::remove_dir_all(&dir).unwrap();
}

const DRAIN_CONFIG: &str = "worker_processes 1;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
        zone backend 64k;
        state {STATE};
        sticky route $arg_s;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://backend; }
        location /api/ { api write=on; }
    }
}
";

/// The backends of `n` requests to `path`, each on its own connection.
fn served_path(p: u16, path: &str, n: usize) -> Vec<u16> {
    (0..n)
        .map(|_| {
            let r = http::get(("127.0.0.1", p), path);
            assert_eq!(r.status, 200, "{path}");
            served_by(&r)
        })
        .collect()
}

/// The `state` the API's peers document gives the peer with server id `id`.
fn peer_state(p: u16, id: u64) -> String {
    let (_, v) = curl(p, "GET", "/api/9/http/upstreams/backend", None);
    let peers = v["peers"].as_array().expect("peers");
    let peer = peers.iter().find(|q| q["id"] == id).expect("peer by id");
    peer["state"].as_str().unwrap_or_default().to_string()
}

/// Requests that do not name a session (one worker, so round robin is exact): none reach
/// `drained`, and its own counter does not move.
fn none_reach(p: u16, drained: &Backend, others: usize) {
    let hits = drained.hits();
    let got = served_path(p, "/", 2 * others);
    assert!(!got.contains(&drained.port()), "{got:?}");
    assert_eq!(drained.hits(), hits);
}

#[test]
fn a_patch_drains_a_server_and_the_state_file_keeps_it() {
    let (b1, b2, b3) = (Backend::start(), Backend::start(), Backend::start());
    let p = port();
    let dir = std::env::temp_dir().join(format!("rf-api-drain-{}-{p}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("backend.state");
    let cfg = fill(
        DRAIN_CONFIG,
        &[
            ("PORT", p.to_string()),
            ("STATE", state.display().to_string()),
        ],
    );
    let rf = Ringfront::start(&cfg);
    for (b, route) in [(&b1, "a"), (&b2, "b"), (&b3, "c")] {
        post(p, b, json!({"route": route}));
    }
    assert_eq!(served_path(p, "/?s=a", 2), vec![b1.port(); 2]);

    // A session request held on b1 while the PATCH drains it.
    b1.set_mode(ringfront_testkit::Mode::Hold);
    let before = b1.hits();
    let in_flight = std::thread::spawn(move || http::get(("127.0.0.1", p), "/?s=a"));
    assert!(
        b1.wait_hits(before + 1, std::time::Duration::from_secs(10)),
        "the session request reached b1"
    );
    let (s, v) = curl(
        p,
        "PATCH",
        "/api/9/http/upstreams/backend/servers/0",
        Some(&json!({"drain": true})),
    );
    assert_eq!(
        (s, &v["drain"], &v["down"]),
        (200, &json!(true), &json!(false))
    );
    assert_eq!(servers(p)[0]["drain"], true);
    assert_eq!(
        servers(p)[1].get("drain"),
        None,
        "written only when draining"
    );
    assert_eq!(peer_state(p, 0), "draining");
    b1.set_mode(ringfront_testkit::Mode::Ok);
    let r = in_flight.join().expect("in-flight client");
    assert_eq!(
        (r.status, served_by(&r)),
        (200, b1.port()),
        "in flight finished"
    );
    none_reach(p, &b1, 2);
    assert_eq!(served_path(p, "/?s=a", 3), vec![b1.port(); 3]);
    assert_eq!(served_path(p, "/?s=c", 2), vec![b3.port(); 2]);

    // Kept as nginx Plus writes it, and read back by a new process.
    let text = std::fs::read_to_string(&state).expect("state file written");
    let first = text.lines().next().unwrap_or_default().to_string();
    assert_eq!(
        first,
        format!(
            "server {} weight=1 max_fails=1 fail_timeout=10s route=a drain;",
            addr(&b1)
        )
    );
    drop(rf);
    let rf = Ringfront::start(&cfg);
    assert_eq!(peer_state(p, 0), "draining");
    none_reach(p, &b1, 2);
    assert_eq!(served_path(p, "/?s=a", 2), vec![b1.port(); 2]);

    // Undrained: back in rotation, and the file says so.
    let (s, v) = curl(
        p,
        "PATCH",
        "/api/9/http/upstreams/backend/servers/0",
        Some(&json!({"drain": false})),
    );
    assert_eq!((s, v.get("drain")), (200, None), "{v}");
    assert_eq!(peer_state(p, 0), "up");
    let got = served_path(p, "/", 6);
    assert_eq!(
        got.iter().filter(|&&b| b == b1.port()).count(),
        2,
        "{got:?}"
    );
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(!text.contains("drain"), "{text}");
    drop(rf);
    std::fs::remove_dir_all(&dir).unwrap();
}

const CHECKED_CONFIG: &str = "worker_processes 2;
error_log stderr notice;
events { worker_connections 256; }
http {
    upstream backend {
        zone backend 64k;
        server {B1};
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass http://backend;
            health_check interval=200ms fails=1 passes=1 uri=/health mandatory;
        }
        location /api/ { api write=on; }
    }
}
";

/// Requests `b` served that were not probes.
fn user_requests(b: &Backend) -> usize {
    b.requests()
        .iter()
        .filter(|r| !r.target.starts_with("/health"))
        .count()
}

/// With a `mandatory` check, a server the API adds is held out (`checking`, then
/// `unhealthy`) until its first probe passes, while the server that was there keeps
/// serving, not checked again by the change (nor by a PATCH of its weight).
#[test]
fn a_posted_server_waits_for_its_mandatory_check() {
    let (b1, b2) = (Backend::start(), Backend::start());
    b2.set_route(
        "/health",
        ringfront_testkit::Canned::status(503, "warming up"),
    );
    let p = port();
    let cfg = fill(
        CHECKED_CONFIG,
        &[("PORT", p.to_string()), ("B1", addr(&b1))],
    );
    let rf = Ringfront::start(&cfg);
    let up = format!("upstream server {} of \"backend\" marked up", addr(&b1));
    assert!(rf.wait_for_stderr(&up, std::time::Duration::from_secs(10)));
    let v = post(p, &b2, json!({}));
    assert_eq!(v["id"], 1);
    // At once: b1 serves every request, b2 none (held out before any probe).
    let got = served_path(p, "/", 6);
    assert_eq!(got, vec![b1.port(); 6]);
    let down = format!("upstream server {} of \"backend\" marked down", addr(&b2));
    assert!(rf.wait_for_stderr(&down, std::time::Duration::from_secs(10)));
    assert_eq!(peer_state(p, 1), "unhealthy");
    let (s, _) = curl(
        p,
        "PATCH",
        "/api/9/http/upstreams/backend/servers/0",
        Some(&json!({"weight": 2})),
    );
    assert_eq!(s, 200);
    assert_eq!(served_path(p, "/", 6), vec![b1.port(); 6]);
    assert_eq!(user_requests(&b2), 0);
    let b1_lines = |what: &str| {
        let line = format!("upstream server {} of \"backend\" {what}", addr(&b1));
        rf.stderr_lines()
            .iter()
            .filter(|l| l.contains(&line))
            .count()
    };
    assert_eq!((b1_lines("marked up"), b1_lines("held out")), (1, 0));
    // b2's probe passes: it takes requests.
    b2.clear_route("/health");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while peer_state(p, 1) != "up" {
        assert!(std::time::Instant::now() < deadline, "b2 never came up");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let got = served_path(p, "/", 9);
    assert!(got.contains(&b2.port()), "{got:?}");
    assert!(
        got.iter().all(|&b| b == b1.port() || b == b2.port()),
        "{got:?}"
    );
    drop(rf);
}

/// Keep-alive clients in threads, each sending GETs until told to stop; every answer that
/// is not a 200 (or a broken connection) is a failure.
struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    done: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<Vec<String>>>,
}

impl Load {
    fn start(p: u16, clients: usize) -> Load {
        use std::sync::atomic::Ordering::Relaxed;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads = (0..clients)
            .map(|_| {
                let (stop, done) = (stop.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut failures = Vec::new();
                    let mut c = http::Client::connect(("127.0.0.1", p));
                    while !stop.load(Relaxed) {
                        match c.try_request("GET", "/", &[], b"") {
                            // `keepalive_requests` (1000) ends a connection with its last
                            // answer: the client opens the next.
                            Ok(r) if r.status == 200 && r.header("connection") == Some("close") => {
                                c = http::Client::connect(("127.0.0.1", p));
                            }
                            Ok(r) if r.status == 200 => {}
                            Ok(r) => failures.push(format!("status {}", r.status)),
                            Err(e) => {
                                failures.push(format!("error {e}"));
                                c = http::Client::connect(("127.0.0.1", p));
                            }
                        }
                        done.fetch_add(1, Relaxed);
                    }
                    failures
                })
            })
            .collect();
        Load {
            stop,
            done,
            threads,
        }
    }

    /// Returns once the clients have answered `n` more requests.
    fn wait_for(&self, n: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let until = self.done.load(Relaxed) + n;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.done.load(Relaxed) < until {
            assert!(std::time::Instant::now() < deadline, "the load stalled");
            std::thread::yield_now();
        }
    }

    fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let failures = self
            .threads
            .into_iter()
            .flat_map(|t| t.join().expect("load thread"))
            .collect();
        (
            self.done.load(std::sync::atomic::Ordering::Relaxed),
            failures,
        )
    }
}

#[test]
fn no_request_fails_while_servers_change_under_load() {
    let backends: Vec<Backend> = (0..4).map(|_| Backend::start()).collect();
    let p = port();
    let first = format!("server {};", addr(&backends[0]));
    let rf = Ringfront::start(&config(p, &backends[0], &first));
    let load = Load::start(p, 6);
    load.wait_for(200);
    let servers_path = "/api/9/http/upstreams/backend/servers";
    for b in &backends[1..] {
        let (s, v) = curl(p, "POST", servers_path, Some(&json!({"server": addr(b)})));
        assert_eq!(s, 201, "{v}");
        load.wait_for(200);
    }
    for (id, patch) in [
        (1, json!({"weight": 5})),
        (2, json!({"down": true})),
        (0, json!({"weight": 2, "max_fails": 0})),
        (2, json!({"down": false})),
    ] {
        let (s, v) = curl(p, "PATCH", &format!("{servers_path}/{id}"), Some(&patch));
        assert_eq!(s, 200, "{v}");
        load.wait_for(200);
    }
    for id in [0, 2] {
        let (s, v) = curl(p, "DELETE", &format!("{servers_path}/{id}"), None);
        assert_eq!(s, 200, "{v}");
        load.wait_for(200);
    }
    // The open keep-alive connections follow the change: the deleted servers get nothing
    // more.
    let (gone0, gone2) = (backends[0].hits(), backends[2].hits());
    let (kept1, kept3) = (backends[1].hits(), backends[3].hits());
    load.wait_for(600);
    let (total, failures) = load.finish();
    assert!(
        failures.is_empty(),
        "{} of {total} failed: {:?}\n{:?}",
        failures.len(),
        &failures[..failures.len().min(10)],
        rf.stderr_lines()
    );
    assert_eq!((backends[0].hits(), backends[2].hits()), (gone0, gone2));
    // Weight 5 against 1: backend 1 takes most of the rest.
    let (more1, more3) = (backends[1].hits() - kept1, backends[3].hits() - kept3);
    assert!(more1 > 3 * more3 && more3 > 0, "{more1} vs {more3}");
    let listed: Vec<_> = servers(p)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(listed, vec![json!(1), json!(3)]);
    eprintln!("{total} requests under load, none failed");
    drop(rf);
}
