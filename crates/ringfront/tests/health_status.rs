//! Seeing health: the `check_status` page in every format (the HTML one rendered by a real
//! headless Chromium, screenshot taken), its filters, Prometheus metrics scraped and parsed,
//! and the read-only nginx-Plus-style API.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{addr, fill, port};
use ringfront_testkit::{browser, http, Backend, Mode, Ringfront};

struct Setup {
    rf: Ringfront,
    port: u16,
    good: [Backend; 2],
    bad: Backend,
}

fn setup() -> Setup {
    let good = [Backend::start(), Backend::start()];
    let bad = Backend::start();
    bad.set_mode(Mode::Refuse);
    let p = port();
    let cfg = fill(
        "worker_processes 2;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
        server {A} slow_start=10s;
        server {B} weight=2;
        server {C} max_fails=3;
        passive_health confirm;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            proxy_pass http://backend;
            health_check interval=200ms fails=1 passes=1;
        }
        location /status { check_status; }
        location /metrics { check_status prometheus; }
        location /api/ { api; }
    }
}
",
        &[
            ("A", addr(&good[0])),
            ("B", addr(&good[1])),
            ("C", addr(&bad)),
            ("PORT", p.to_string()),
        ],
    );
    let rf = Ringfront::start(&cfg);
    let needle = format!("upstream server {} of \"backend\" marked down", addr(&bad));
    assert!(
        rf.wait_for_stderr(&needle, Duration::from_secs(10)),
        "no state-change line: {:?}",
        rf.stderr_lines()
    );
    Setup {
        rf,
        port: p,
        good,
        bad,
    }
}

fn get(s: &Setup, path: &str) -> http::Response {
    http::get(("127.0.0.1", s.port), path)
}

fn text(r: &http::Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn status_page_formats_and_filters() {
    let s = setup();
    for _ in 0..9 {
        assert_eq!(get(&s, "/").status, 200);
    }
    // CSV: one row per peer, the refusing one down with its cause.
    let r = get(&s, "/status?format=csv");
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/csv"));
    let body = text(&r);
    let rows: Vec<&str> = body.lines().collect();
    assert!(rows[0].starts_with("upstream,index,name,state"), "{body}");
    assert_eq!(rows.len(), 4, "{body}");
    let bad_row = rows
        .iter()
        .find(|l| l.contains(&addr(&s.bad)))
        .expect("bad peer row");
    assert!(bad_row.contains(",down,"), "{bad_row}");
    assert!(bad_row.contains("connect refused"), "{bad_row}");
    for g in &s.good {
        let row = rows.iter().find(|l| l.contains(&addr(g))).expect("row");
        assert!(row.contains(",up,"), "{row}");
    }
    // Filters.
    let down = text(&get(&s, "/status?format=csv&status=down"));
    assert_eq!(down.lines().count(), 2, "{down}");
    assert!(down.contains(&addr(&s.bad)));
    let up = text(&get(&s, "/status?format=csv&status=up"));
    assert_eq!(up.lines().count(), 3, "{up}");
    assert!(!up.contains(&addr(&s.bad)));
    assert_eq!(get(&s, "/status?format=yaml").status, 400);
    // JSON: parses, counts the peers, and the requests add up.
    let r = get(&s, "/status?format=json");
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    let servers = &v["servers"]["server"];
    assert_eq!(v["servers"]["total"], 3, "{v}");
    let requests: u64 = servers
        .as_array()
        .expect("array")
        .iter()
        .map(|p| p["requests"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(requests, 9, "{v}");
    drop(s.rf);
}

/// Strict-enough parser of the text exposition format: `name{labels} value` per sample.
fn parse_metrics(body: &str) -> Vec<(String, HashMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in body
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        let value: f64 = value.parse().expect("value");
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        let labels = labels
            .split("\",")
            .filter(|l| !l.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once("=\"").expect("label");
                (k.to_string(), v.trim_end_matches('"').to_string())
            })
            .collect();
        out.push((name.to_string(), labels, value));
    }
    out
}

#[test]
fn prometheus_metrics_are_scraped_and_parsed() {
    let s = setup();
    for _ in 0..12 {
        assert_eq!(get(&s, "/").status, 200);
    }
    // A worker counts a response once the client has it all: the last one may be a moment
    // behind the scrape (another worker can answer it). Scrape until all 12 are in.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (r, body, samples) = loop {
        let r = get(&s, "/metrics");
        let body = text(&r);
        let samples = parse_metrics(&body);
        let counted: f64 = samples
            .iter()
            .filter(|(n, _, _)| n == "ringfront_upstream_peer_response_time_seconds_count")
            .map(|(_, _, v)| v)
            .sum();
        if counted >= 12.0 || std::time::Instant::now() > deadline {
            break (r, body, samples);
        }
    };
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/plain"));
    let sum = |name: &str, f: &dyn Fn(&HashMap<String, String>) -> bool| -> f64 {
        samples
            .iter()
            .filter(|(n, l, _)| n == name && f(l))
            .map(|(_, _, v)| v)
            .sum()
    };
    assert_eq!(
        sum("ringfront_upstream_peer_requests_total", &|_| true),
        12.0
    );
    let bad = addr(&s.bad);
    assert_eq!(
        sum("ringfront_upstream_peer_requests_total", &|l| l["peer"]
            == bad),
        0.0
    );
    assert_eq!(
        sum("ringfront_upstream_peer_state", &|l| l["peer"] == bad
            && l["state"] == "down"),
        1.0,
        "{body}"
    );
    // The response-time histogram counted every response; buckets are cumulative.
    assert_eq!(
        sum(
            "ringfront_upstream_peer_response_time_seconds_count",
            &|_| true
        ),
        12.0,
        "{body}"
    );
    assert_eq!(
        sum(
            "ringfront_upstream_peer_response_time_seconds_bucket",
            &|l| l["le"] == "+Inf"
        ),
        12.0
    );
    assert!(
        sum("ringfront_upstream_peer_health_checks_total", &|l| l
            ["peer"]
            == bad
            && l["result"] == "fail")
            >= 1.0
    );
    // Per worker: requests counted (the scrape itself included), 2 workers.
    let workers: Vec<_> = samples
        .iter()
        .filter(|(n, _, _)| n == "ringfront_worker_requests_total")
        .collect();
    assert_eq!(workers.len(), 2, "{body}");
    assert!(sum("ringfront_worker_requests_total", &|_| true) >= 13.0);
    drop(s.rf);
}

#[test]
fn api_answers_like_nginx_plus_and_is_read_only() {
    let s = setup();
    let r = get(&s, "/api/9/http/upstreams");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    let peers = v["backend"]["peers"].as_array().expect("peers");
    assert_eq!(peers.len(), 3);
    let bad = peers
        .iter()
        .find(|p| p["server"] == addr(&s.bad).as_str())
        .expect("bad peer");
    assert_eq!(bad["state"], "unhealthy", "{bad}");
    let r = get(&s, "/api/9/http/upstreams/backend/servers");
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(v.as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(v[0]["slow_start"], "10s", "{v}");
    assert_eq!(v[1]["weight"], 2, "{v}");
    let r = get(&s, "/api/9/http/upstreams/nope");
    assert_eq!(r.status, 404);
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(v["error"]["code"], "UpstreamNotFound");
    let mut c = http::Client::connect(("127.0.0.1", s.port));
    let r = c.request("DELETE", "/api/9/http/upstreams/backend", &[], b"");
    assert_eq!(r.status, 405);
    drop(s.rf);
}

#[test]
fn html_status_page_renders_in_a_real_browser() {
    let s = setup();
    let url = format!("http://127.0.0.1:{}/status", s.port);
    let dom = browser::dump_dom(&url).expect("chromium --dump-dom");
    // The browser parsed the table: each peer is a row with its state class.
    let bad_row = format!("data-peer=\"{}\"", addr(&s.bad));
    let at = dom
        .find(&bad_row)
        .unwrap_or_else(|| panic!("no row for the bad peer:\n{dom}"));
    let tr_start = dom[..at].rfind("<tr").expect("row start");
    assert!(
        dom[tr_start..at].contains("state-down"),
        "{}",
        &dom[tr_start..at + 60]
    );
    for g in &s.good {
        assert!(dom.contains(&format!("data-peer=\"{}\"", addr(g))));
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let shot = dir.join("ringfront-status.png");
    browser::screenshot(&url, &shot, 1280, 720).expect("chromium --screenshot");
    let png = std::fs::read(&shot).expect("screenshot file");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1000);
    if let Some(keep) = std::env::var_os("RINGFRONT_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("copy screenshot");
    }
    drop(s.rf);
}
