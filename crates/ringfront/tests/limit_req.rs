//! `limit_req` against real nginx, `worker_processes 2` on both: the same requests in the
//! same order get the same statuses, the same `$limit_req_status` in the access log, the
//! same "limiting requests" lines in the error log and the same delays (whole seconds):
//! a plain limit, `burst` with and without `nodelay`, `delay=`, `limit_req_status`,
//! `limit_req_dry_run`, two limits at once (a rejection by the second leaves the first
//! unaccounted), inheritance (a location with its own `limit_req` drops the server's),
//! an empty key (not accounted), the phase order (`return` runs before, `deny` after) and
//! an index file's internal redirect (counted once); and one zone shared by both workers
//! (requests on fresh connections, spread over the workers, count in the same state).
//! Rates of 1r/m keep the excess independent of the test's pace; delays use 1r/s.

mod common;

use std::time::{Duration, Instant};

use common::{assert_same, fill};
use ringfront_testkit::{Client, Nginx, Ringfront, TempDir};

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 2;
error_log {DIR}/e.log info;
events { worker_connections 64; }
http {
    log_format lim '$uri $status $limit_req_status';
    access_log {DIR}/a.log lim;
    server_tokens off;
    limit_req_zone $binary_remote_addr zone=plain:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=nodelay:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=status:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=dry:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=drydelay:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=loose:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=strict:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=srv:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=own:1m rate=1r/m;
    limit_req_zone $arg_k zone=bykey:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=ret:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=deny:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=slow:1m rate=1r/s;
    limit_req_zone $binary_remote_addr zone=twostage:1m rate=1r/s;
    limit_req_zone $binary_remote_addr zone=dir:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=slowa:1m rate=1r/s;
    limit_req_zone $binary_remote_addr zone=slowb:1m rate=2r/s;
    limit_req_zone $binary_remote_addr zone=shared:1m rate=1r/m;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {DIR}/www;
        limit_req zone=srv;
        location /plain { limit_req zone=plain; }
        location /nodelay { limit_req zone=nodelay burst=2 nodelay; }
        location /status { limit_req zone=status; limit_req_status 429; }
        location /dry { limit_req zone=dry; limit_req_dry_run on; }
        location /drydelay {
            limit_req zone=drydelay burst=5;
            limit_req_dry_run on;
        }
        location /multi {
            limit_req zone=loose burst=10 nodelay;
            limit_req zone=strict;
        }
        location /loose { limit_req zone=loose burst=1 nodelay; }
        location /inherit { }
        location /own { limit_req zone=own; }
        location /key { limit_req zone=bykey; }
        location /ret { limit_req zone=ret; return 204; }
        location /deny { limit_req zone=deny; deny all; }
        location /dir/ { limit_req zone=dir; }
        location /shared { limit_req zone=shared burst=2 nodelay; }
        location /delay { limit_req zone=slow burst=5; }
        location /twostage { limit_req zone=twostage burst=5 delay=1; }
        location /twodelays { limit_req zone=slowa burst=5; limit_req zone=slowb burst=5; }
    }
}
"#,
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

/// Requests without a delay, in order, on one keep-alive connection.
const COUNTED: &[(&str, usize)] = &[
    ("/plain", 3),
    ("/nodelay", 4),
    ("/status", 2),
    ("/dry", 3),
    ("/drydelay", 2),
    ("/multi", 3),
    ("/loose", 2),
    ("/own", 2),
    ("/inherit", 2),
    ("/key", 2),
    ("/key?k=a", 2),
    ("/ret", 3),
    ("/deny", 2),
    ("/dir/", 3),
];

/// Requests to `/shared`, each on its own connection.
const SHARED: usize = 12;

/// Requests that may wait: path, how many, sent one after the other.
const DELAYED: &[(&str, usize)] = &[("/delay", 3), ("/twostage", 4), ("/twodelays", 2)];

struct Seen {
    statuses: Vec<String>,
    /// Whole seconds each delayed request took.
    seconds: Vec<u64>,
    access: Vec<String>,
    errors: Vec<String>,
}

/// The files the locations serve (a `return` would answer in the rewrite phase, before
/// limit_req runs).
fn www(dir: &std::path::Path) {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).expect("www");
    std::fs::create_dir_all(www.join("dir")).expect("dir");
    std::fs::write(www.join("dir/index.html"), "index\n").expect("index");
    for (path, _) in COUNTED
        .iter()
        .chain(DELAYED)
        .filter(|(p, _)| !p.ends_with('/'))
    {
        let name = path
            .trim_start_matches('/')
            .split('?')
            .next()
            .unwrap_or_default();
        std::fs::write(www.join(name), "ok\n").expect("file");
    }
    std::fs::write(www.join("other"), "other\n").expect("file");
    std::fs::write(www.join("shared"), "shared\n").expect("file");
}

fn run(p: u16, dir: &std::path::Path) -> Seen {
    let mut statuses = Vec::new();
    let mut c = Client::connect(("127.0.0.1", p));
    for (path, n) in COUNTED {
        for _ in 0..*n {
            let r = c.request("GET", path, &[("Host", "localhost")], b"");
            statuses.push(format!("{path} {}", r.status));
        }
    }
    // A fresh connection each: they land on both workers, which share the zone.
    for _ in 0..SHARED {
        let r = Client::connect(("127.0.0.1", p)).request(
            "GET",
            "/shared",
            &[("Host", "localhost")],
            b"",
        );
        statuses.push(format!("/shared {}", r.status));
    }
    let mut seconds = Vec::new();
    for (path, n) in DELAYED {
        for _ in 0..*n {
            let started = Instant::now();
            let r = c.request("GET", path, &[("Host", "localhost")], b"");
            statuses.push(format!("{path} {}", r.status));
            seconds.push(started.elapsed().as_secs_f64().round() as u64);
        }
    }
    let total: usize = COUNTED.iter().chain(DELAYED).map(|(_, n)| n).sum::<usize>() + SHARED;
    let mut access = common::log_lines(&dir.join("a.log"), total);
    // The two workers' lines may interleave differently: the /shared ones compare as a set.
    let (mut shared, own): (Vec<String>, Vec<String>) =
        access.drain(..).partition(|l| l.starts_with("/shared "));
    shared.sort();
    access = own;
    access.extend(shared);
    // Lines of two workers: compared as a set.
    let mut errors = error_lines(&dir.join("e.log"));
    errors.sort();
    Seen {
        statuses,
        seconds,
        access,
        errors,
    }
}

/// `line` with its excess value as `E`.
fn without_excess(line: &str) -> String {
    let Some(at) = line.find("excess: ") else {
        return line.to_string();
    };
    let start = at + "excess: ".len();
    let end = line[start..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(line.len(), |n| start + n);
    format!("{}E{}", &line[..start], &line[end..])
}

/// The error log's limit_req lines from "limiting" or "delaying" on (the time and process
/// in front differ); the 1r/s zones' excess (and that of the zone many connections share)
/// depends on the pace: it reads `E` there.
fn error_lines(path: &std::path::Path) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let at = l.find("limiting ").or_else(|| l.find("delaying "))?;
                let line = &l[at..];
                let timed = ["zone \"slow", "\"shared\"", "\"twostage\""];
                Some(match timed.iter().any(|z| line.contains(z)) {
                    true => without_excess(line),
                    false => line.to_string(),
                })
            })
            .collect();
        if lines.len() >= 30 || Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn limit_req_matches_nginx() {
    let (nd, rd) = (
        TempDir::new("nginx-limit-req"),
        TempDir::new("rf-limit-req"),
    );
    let (np, rp) = (common::port(), common::port());
    www(nd.path());
    www(rd.path());
    let _n = Nginx::start(&config(np, nd.path()), np);
    let _r = Ringfront::start(&config(rp, rd.path()));
    let n = run(np, nd.path());
    let r = run(rp, rd.path());
    assert_same("statuses", &n.statuses, &r.statuses);
    assert_same("access log", &n.access, &r.access);
    assert_same("error log", &n.errors, &r.errors);
    assert_eq!(r.seconds, n.seconds, "delays in whole seconds");
    // What nginx does, spelled out (so that a change in both would show).
    // Two limits: the longer delay (1 s of slowa, not slowb's half second) is waited.
    assert_eq!(n.seconds, [0, 1, 1, 0, 0, 1, 1, 0, 1]);
    assert!(n
        .errors
        .iter()
        .any(|l| l.starts_with("delaying request") && l.contains("\"slowa\"")));
    let first = |p: &str| {
        n.access
            .iter()
            .filter(|l| l.starts_with(p))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        first("/plain "),
        [
            "/plain 200 PASSED",
            "/plain 503 REJECTED",
            "/plain 503 REJECTED"
        ]
    );
    assert_eq!(first("/status ")[1], "/status 429 REJECTED");
    assert_eq!(first("/dry ")[2], "/dry 200 REJECTED_DRY_RUN");
    assert_eq!(first("/drydelay ")[1], "/drydelay 200 DELAYED_DRY_RUN");
    assert_eq!(
        first("/loose ")[0],
        "/loose 200 PASSED",
        "multi left loose unaccounted"
    );
    assert_eq!(first("/inherit ")[0], "/inherit 200 PASSED");
    assert_eq!(
        first("/key ")[1],
        "/key 200 -",
        "an empty key is not accounted"
    );
    assert_eq!(
        first("/ret ")[2],
        "/ret 204 -",
        "return runs before limit_req"
    );
    assert_eq!(first("/deny "), ["/deny 403 PASSED", "/deny 503 REJECTED"]);
    let shared = n.statuses.iter().filter(|l| l.starts_with("/shared "));
    assert_eq!(
        shared.filter(|l| l.ends_with(" 200")).count(),
        3,
        "burst=2 across workers"
    );
    // The index module's internal redirect does not count the request twice.
    assert_eq!(
        first("/dir/"),
        [
            "/dir/index.html 200 PASSED",
            "/dir/ 503 REJECTED",
            "/dir/ 503 REJECTED"
        ]
    );
    assert!(n.errors.iter().any(|l| l.starts_with(
        "limiting requests, excess: 1.000 by zone \"plain\", client: 127.0.0.1, server: localhost"
    )));
}

fn one_worker(p: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    limit_req_zone $binary_remote_addr zone=slow:1m rate=1r/s;
    server {
        listen 127.0.0.1:{PORT};
        root {DIR}/www;
        location /delay { limit_req zone=slow burst=5; }
        location /other { }
    }
}
"#,
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

/// A delayed request waits on the worker's timer: the same worker answers other
/// connections meanwhile (one worker, so it is the same one).
#[test]
fn a_delay_does_not_hold_up_the_worker() {
    for nginx in [true, false] {
        let p = common::port();
        let dir = TempDir::new("limit-req-worker");
        www(dir.path());
        let (_n, _r);
        if nginx {
            _n = Some(Nginx::start(&one_worker(p, dir.path()), p));
        } else {
            _r = Some(Ringfront::start(&one_worker(p, dir.path())));
        }
        let mut first = Client::connect(("127.0.0.1", p));
        assert_eq!(first.request("GET", "/delay", &[], b"").status, 200);
        let started = Instant::now();
        let mut waiting = Client::connect(("127.0.0.1", p));
        waiting.send_raw(b"GET /delay HTTP/1.1\r\nHost: x\r\n\r\n");
        std::thread::sleep(Duration::from_millis(100));
        let other = Client::connect(("127.0.0.1", p)).request("GET", "/other", &[], b"");
        assert_eq!(other.status, 200);
        assert!(
            started.elapsed() < Duration::from_millis(700),
            "nginx={nginx}: {:?}",
            started.elapsed()
        );
        assert_eq!(waiting.read_response().status, 200);
        let waited = started.elapsed();
        assert!(
            waited > Duration::from_millis(800) && waited < Duration::from_millis(1800),
            "nginx={nginx}: {waited:?}"
        );
    }
}

fn reloaded(p: u16, dir: &std::path::Path, size: &str, rate: &str) -> String {
    fill(
        r#"worker_processes 2;
events { worker_connections 64; }
http {
    access_log off;
    limit_req_zone $binary_remote_addr zone=kept:{SIZE} rate={RATE};
    server {
        listen 127.0.0.1:{PORT};
        root {DIR}/www;
        location /plain { limit_req zone=kept; }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("DIR", dir.display().to_string()),
            ("SIZE", size.to_string()),
            ("RATE", rate.to_string()),
        ],
    )
}

/// A reload keeps a zone's states when its name, size and key stay (as nginx keeps its
/// shared memory), its new rate applying to them: the key that used its one request per
/// minute is still refused; a zone whose size changed starts empty (a new shared memory
/// zone in nginx too).
#[test]
fn a_reload_keeps_an_unchanged_zone() {
    let dir = TempDir::new("limit-req-reload");
    www(dir.path());
    let p = common::port();
    let rf = Ringfront::start(&reloaded(p, dir.path(), "1m", "1r/m"));
    let get = || {
        Client::connect(("127.0.0.1", p))
            .request("GET", "/plain", &[], b"")
            .status
    };
    assert_eq!(get(), 200);
    assert_eq!(get(), 503);
    let reload = |cfg: &str, generation: u64| {
        rf.write_config(cfg);
        rf.signal(ringfront_testkit::SIGHUP);
        let line = format!("reconfigured (generation {generation})");
        assert!(
            rf.wait_for_stderr(&line, Duration::from_secs(10)),
            "{:?}",
            rf.stderr_lines()
        );
    };
    reload(&reloaded(p, dir.path(), "1m", "2r/m"), 2);
    assert_eq!(get(), 503, "the state survived the reload");
    reload(&reloaded(p, dir.path(), "2m", "2r/m"), 3);
    assert_eq!(get(), 200, "a resized zone starts empty");
    assert_eq!(get(), 503);
}
