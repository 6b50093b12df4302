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

/// The location `without_phases` finds for `GET path` (its prefix), if any.
fn found(snap: &Snapshot, method: &str, path: &str, rw: &mut RwState) -> Option<String> {
    let bytes = format!("{method} {path} HTTP/1.1\r\nHost: h\r\n\r\n");
    let (buf, head) = crate::testutil::request_head(bytes.as_bytes());
    let mut req = crate::testutil::req(&buf, &head);
    req.path = path;
    let loc = without_phases(snap, &snap.servers[0], &req, rw)?;
    match &loc.matcher {
        Some(ringfront_config::LocationMatch::Prefix(p)) => Some(p.clone()),
        Some(ringfront_config::LocationMatch::Regex { pattern, .. }) => Some(pattern.clone()),
        other => panic!("{other:?}"),
    }
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
