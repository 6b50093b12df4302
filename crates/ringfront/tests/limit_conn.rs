//! `limit_conn` against real nginx, `worker_processes 2` on both: requests held in flight
//! by a backend that sleeps, and the ones that come meanwhile get the same statuses, the
//! same `$limit_conn_status` (and `$limit_req_status` where both modules apply) in the
//! access log and the same "limiting connections" lines in the error log. The count is
//! per request: a keep-alive connection's requests one after another all pass, and a
//! request's count is given back when it ends.

mod common;

use std::time::{Duration, Instant};

use common::{assert_same, fill};
use ringfront_testkit::{Backend, Client, Nginx, Ringfront, TempDir};

fn config(p: u16, backend: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 2;
error_log {DIR}/e.log info;
events { worker_connections 64; }
http {
    log_format lim '$uri $status $limit_req_status $limit_conn_status';
    access_log {DIR}/a.log lim;
    server_tokens off;
    limit_conn_zone $binary_remote_addr zone=one:1m;
    limit_conn_zone $binary_remote_addr zone=two:1m;
    limit_conn_zone $binary_remote_addr zone=dry:1m;
    limit_conn_zone $binary_remote_addr zone=status:1m;
    limit_conn_zone $arg_k zone=bykey:1m;
    limit_conn_zone $binary_remote_addr zone=both:1m;
    limit_req_zone $binary_remote_addr zone=rq:1m rate=1r/m;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        location /one { limit_conn one 1; proxy_pass http://127.0.0.1:{BACKEND}; }
        location /two { limit_conn two 2; proxy_pass http://127.0.0.1:{BACKEND}; }
        location /dry {
            limit_conn dry 1;
            limit_conn_dry_run on;
            limit_conn_log_level warn;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /status {
            limit_conn status 1;
            limit_conn_status 429;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /key { limit_conn bykey 1; proxy_pass http://127.0.0.1:{BACKEND}; }
        location /both {
            limit_req zone=rq burst=10 nodelay;
            limit_conn both 1;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DIR", dir.display().to_string()),
        ],
    )
}

struct Seen {
    statuses: Vec<String>,
    access: Vec<String>,
    errors: Vec<String>,
}

/// `held` requests to `path` in flight at the backend (each sleeping a second) on their own
/// connections, then one more request; then the held ones' statuses.
fn while_held(p: u16, backend: &Backend, path: &str, held: usize, out: &mut Vec<String>) {
    let mut clients = Vec::new();
    for _ in 0..held {
        let before = backend.hits();
        let mut c = Client::connect(("127.0.0.1", p));
        let sep = if path.contains('?') { '&' } else { '?' };
        c.send_raw(
            format!(
                "GET {path}{sep}sleep=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        );
        assert!(
            backend.wait_hits(before + 1, Duration::from_secs(5)),
            "{path} reached the backend"
        );
        clients.push(c);
    }
    let r = Client::connect(("127.0.0.1", p)).request("GET", path, &[("Host", "localhost")], b"");
    out.push(format!("{path} while {held} held: {}", r.status));
    for mut c in clients {
        out.push(format!("{path} held: {}", c.read_response().status));
        // The connection closes once the request is done and its count given back (nginx
        // frees it with the request, before the close): the next phase may start.
        assert!(
            c.peer_closed(Duration::from_secs(5)),
            "{path}: held connection closed"
        );
    }
}

fn run(p: u16, backend: &Backend, dir: &std::path::Path) -> Seen {
    let mut statuses = Vec::new();
    while_held(p, backend, "/one", 1, &mut statuses);
    // Given back when the request ended: the next one passes.
    while_held(p, backend, "/one", 0, &mut statuses);
    while_held(p, backend, "/two", 1, &mut statuses);
    while_held(p, backend, "/two", 2, &mut statuses);
    while_held(p, backend, "/dry", 1, &mut statuses);
    while_held(p, backend, "/status", 1, &mut statuses);
    while_held(p, backend, "/key", 1, &mut statuses);
    while_held(p, backend, "/key?k=a", 1, &mut statuses);
    while_held(p, backend, "/both", 1, &mut statuses);
    // Keep-alive: the count is per request, not per connection.
    let mut c = Client::connect(("127.0.0.1", p));
    for _ in 0..3 {
        let r = c.request("GET", "/one", &[("Host", "localhost")], b"");
        statuses.push(format!("/one keep-alive: {}", r.status));
    }
    let access = common::log_lines(&dir.join("a.log"), 21);
    let mut access: Vec<String> = access;
    // Held and refused requests end in a different order on a 2-worker server: compare
    // them sorted.
    access.sort();
    let errors = error_lines(&dir.join("e.log"), 6);
    Seen {
        statuses,
        access,
        errors,
    }
}

fn error_lines(path: &std::path::Path, want: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| Some(l[l.find("limiting ")?..].to_string()))
            .collect();
        if lines.len() >= want || Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn limit_conn_matches_nginx() {
    let (nd, rd) = (
        TempDir::new("nginx-limit-conn"),
        TempDir::new("rf-limit-conn"),
    );
    let (nb, rb) = (Backend::start(), Backend::start());
    let (np, rp) = (common::port(), common::port());
    let _n = Nginx::start(&config(np, nb.port(), nd.path()), np);
    let _r = Ringfront::start(&config(rp, rb.port(), rd.path()));
    let n = run(np, &nb, nd.path());
    let r = run(rp, &rb, rd.path());
    assert_same("statuses", &n.statuses, &r.statuses);
    assert_same("access log", &n.access, &r.access);
    assert_same("error log", &n.errors, &r.errors);
    assert_eq!(nb.hits(), rb.hits(), "requests that reached the backend");
    // What nginx does, spelled out.
    assert_eq!(n.statuses[0], "/one while 1 held: 503");
    assert_eq!(n.statuses[2], "/one while 0 held: 200");
    assert!(n.access.contains(&"/one 503 - REJECTED".to_string()));
    assert!(n
        .access
        .contains(&"/dry 200 - REJECTED_DRY_RUN".to_string()));
    assert!(n.access.contains(&"/status 429 - REJECTED".to_string()));
    assert!(n.access.contains(&"/key 200 - -".to_string()));
    assert!(n.access.contains(&"/both 503 PASSED REJECTED".to_string()));
    assert!(n
        .errors
        .iter()
        .any(|l| l.starts_with("limiting connections, dry run, by zone \"dry\", client: ")));
    assert_eq!(
        &n.statuses[n.statuses.len() - 3..],
        [
            "/one keep-alive: 200",
            "/one keep-alive: 200",
            "/one keep-alive: 200"
        ]
    );
}
