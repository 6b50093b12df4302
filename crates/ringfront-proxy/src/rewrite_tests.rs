//! `without_phases`: a location only where no phase before the content has work.

use super::*;

fn snapshot(http: &str, server: &str) -> Snapshot {
    let text = format!(
        "events {{}}\nhttp {{\n{http}\n server {{\n  listen 127.0.0.1:1;\n{server}\n }}\n}}\n"
    );
    let host = ringfront_config::MemoryHost::default();
    let path = std::path::Path::new("/t/r.conf");
    let cfg = ringfront_config::parse_str(&text, path, &host).unwrap();
    Snapshot::build(&cfg, 1).unwrap()
}

/// The location `without_phases` finds for `METHOD path` (its pattern), if any; where it
/// finds one, `process` (the phases run as futures) must answer with the same location and
/// `Continue`.
fn found(snap: &Snapshot, method: &str, path: &str, rw: &mut RwState) -> Option<String> {
    let bytes = format!("{method} {path} HTTP/1.1\r\nHost: h\r\n\r\n");
    let (buf, head) = crate::testutil::request_head(bytes.as_bytes());
    let mut req = crate::testutil::req(&buf, &head);
    req.path = path;
    let server = &snap.servers[0];
    let loc = without_phases(snap, server, &req, rw)?;
    let w = worker(snap);
    let (full, outcome) = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()
        .expect("runtime")
        .block_on(process(&w, snap, server, &req, rw));
    assert!(std::ptr::eq(loc, full), "{method} {path}: another location");
    assert!(matches!(outcome, Outcome::Continue), "{outcome:?}");
    match &loc.matcher {
        Some(ringfront_config::LocationMatch::Prefix(p)) => Some(p.clone()),
        Some(ringfront_config::LocationMatch::Regex { pattern, .. }) => Some(pattern.clone()),
        other => panic!("{other:?}"),
    }
}

/// A worker of its own for `snap`, as the engine makes one (nothing started).
fn worker(snap: &Snapshot) -> Worker {
    use std::sync::atomic::{AtomicU64, AtomicU8};
    let (logger, _writer) = crate::logger::Logger::start();
    let (health_tx, _health_rx) = crate::wake::channel().expect("channel");
    let (resolver_bell, _bell) = crate::wake::bell().expect("bell");
    let shared = std::sync::Arc::new(crate::Shared {
        // The published snapshot is not what `process` reads (it is given `snap`).
        snapshot: arc_swap::ArcSwap::from_pointee(snapshot("", "")),
        published: crate::Alone(AtomicU64::new(1)),
        state: AtomicU8::new(0),
        next_conn: crate::Alone(AtomicU64::new(0)),
        logger,
        health_tx,
        resolver_bell,
        wakers: Box::new([]),
        applied: crate::wake::Applied::new(1, snap.generation),
        workers: Box::new([crate::WorkerStats::default()]),
        started_unix_ms: 0,
        release_memory: None,
        unix: Default::default(),
    });
    Worker::new(0, shared, snap)
}

const PROXY: &str = "proxy_pass http://127.0.0.1:2;";

#[test]
fn a_plain_proxy_location_is_found_without_the_phases() {
    let snap = snapshot(
        "",
        &format!("location / {{ {PROXY} }} location /s/ {{ }} location /a/ {{ {PROXY} }}"),
    );
    let mut rw = RwState::default();
    assert_eq!(found(&snap, "GET", "/x", &mut rw).as_deref(), Some("/"));
    assert_eq!(
        found(&snap, "GET", "/a/b/", &mut rw).as_deref(),
        Some("/a/")
    );
    assert_eq!(found(&snap, "GET", "/s/f", &mut rw).as_deref(), Some("/s/"));
    // The index module looks for `/s/index.html`: the phases run.
    assert_eq!(found(&snap, "GET", "/s/", &mut rw), None);
    assert_eq!(found(&snap, "PUT", "/s/", &mut rw).as_deref(), Some("/s/"));
    // `/a` is redirected to `/a/` (nginx's auto_redirect of a proxying `location /a/`).
    assert_eq!(found(&snap, "GET", "/a", &mut rw), None);
    // A regex location without captures that anything reads.
    let snap = snapshot("", &format!("location ~ ^/(x) {{ {PROXY} }}"));
    assert_eq!(found(&snap, "GET", "/x", &mut rw).as_deref(), Some("^/(x)"));
    // `limit_except`: a listed method answers with the location itself; another with the
    // block's configuration, whose `deny` the access phase runs.
    let le = format!("location / {{ limit_except GET {{ deny all; }} {PROXY} }}");
    let snap = snapshot("", &le);
    assert_eq!(found(&snap, "GET", "/x", &mut rw).as_deref(), Some("/"));
    assert_eq!(found(&snap, "POST", "/x", &mut rw), None);
    // A URI changed, a named location or an internal redirect pending: the phases run.
    let pending: [fn(&mut RwState); 3] = [
        |rw| rw.uri = Some("/x".into()),
        |rw| rw.named = Some("n".into()),
        |rw| rw.internal = true,
    ];
    for set in pending {
        let mut rw = RwState::default();
        set(&mut rw);
        assert_eq!(found(&snap, "GET", "/x", &mut rw), None, "{rw:?}");
    }
}

#[test]
fn every_phase_with_work_takes_the_full_path() {
    let cases = [
        ("", format!("rewrite ^ /y; location / {{ {PROXY} }}")),
        ("", format!("location / {{ set $a 1; {PROXY} }}")),
        ("", format!("location / {{ internal; {PROXY} }}")),
        (
            "limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;",
            format!("location / {{ limit_req zone=z; {PROXY} }}"),
        ),
        (
            "limit_conn_zone $binary_remote_addr zone=c:1m;",
            format!("location / {{ limit_conn c 1; {PROXY} }}"),
        ),
        ("", format!("location / {{ deny all; {PROXY} }}")),
        ("", "location / { try_files $uri =404; }".to_string()),
        ("", format!("location ~ ^/(?<n>x) {{ {PROXY} }}")),
        (
            "",
            format!("location / {{ {PROXY} }} location /p/ {{ {PROXY} }}"),
        ),
    ];
    for (http, server) in &cases {
        let snap = snapshot(http, server);
        let path = if server.contains("/p/") { "/p" } else { "/x" };
        let mut rw = RwState::default();
        assert_eq!(found(&snap, "GET", path, &mut rw), None, "{server}");
    }
}
