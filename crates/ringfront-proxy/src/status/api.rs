//! A read-only subset of the nginx Plus REST API (`ngx_http_api_module`), version 9 and
//! older: the version list, `/nginx`, `/connections`, `/workers`, `/http/requests` and the
//! upstreams with their peers and server configurations. GET and HEAD are answered here;
//! POST, PATCH and DELETE of `/N/http/upstreams/NAME/servers[/ID]` under `api write=on`
//! go to api_write.rs ([`write_target`] finds them), and are refused here otherwise.

use std::fmt::Write;

use super::iso8601;
use super::json::Writer;
use super::query::percent_decode;
use super::view::{PeerView, StatusView, UpstreamView, Verdict};

/// The newest API version served; every version from 1 up to it answers the same way.
pub const API_VERSION: u32 = 9;

/// The content type of every API answer, errors included.
pub const API_CONTENT_TYPE: &str = "application/json";

const HREF: &str = "https://nginx.org/en/docs/http/ngx_http_api_module.html";

/// An API answer: always JSON ([`API_CONTENT_TYPE`]). For HEAD the caller sends the headers
/// of this answer (Content-Length included) without the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResponse {
    pub status: u16,
    pub body: String,
}

/// Answers one API request. `path` is the request path after the location prefix, without
/// the query (e.g. `/9/http/upstreams`); segments are percent-decoded and empty segments
/// (doubled or trailing slashes) ignored. `request_id` goes into error documents (nginx uses
/// `$request_id`); when empty, one is derived from the view's time.
pub fn api(view: &StatusView, method: &str, path: &str, request_id: &str) -> ApiResponse {
    let rid = if request_id.is_empty() {
        derived_request_id(view, path)
    } else {
        request_id.to_string()
    };
    if method != "GET" && method != "HEAD" {
        return error(405, "method disabled", "MethodDisabled", &rid);
    }
    let mut segs = Vec::new();
    for s in path.split('/').filter(|s| !s.is_empty()) {
        match percent_decode(s, false) {
            Ok(s) => segs.push(s),
            Err(_) => return error(404, "path not found", "PathNotFound", &rid),
        }
    }
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let Some((version, rest)) = segs.split_first() else {
        let mut out = String::new();
        let mut a = Writer::array(&mut out);
        for v in 1..=API_VERSION {
            let _ = write!(a.item(), "{v}");
        }
        a.end();
        return ok(out);
    };
    if !known_version(version) {
        return error(404, "unknown version", "UnknownVersion", &rid);
    }
    match route(view, rest) {
        Ok(body) => ok(body),
        Err(Miss::Path) => error(404, "path not found", "PathNotFound", &rid),
        Err(Miss::Upstream(name)) => error(
            404,
            &format!("unknown upstream \"{name}\""),
            "UpstreamNotFound",
            &rid,
        ),
        Err(Miss::Server(id)) => error(
            404,
            &format!("server with ID \"{id}\" does not exist"),
            "UpstreamServerNotFound",
            &rid,
        ),
    }
}

/// The target of a write method: the upstream's name and the server's id as written
/// (`None` for the list), when `path` is `/N/http/upstreams/NAME/servers[/ID]` of a known
/// version.
pub fn write_target(path: &str) -> Option<(String, Option<String>)> {
    let mut segs = Vec::new();
    for s in path.split('/').filter(|s| !s.is_empty()) {
        segs.push(percent_decode(s, false).ok()?);
    }
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (version, rest) = segs.split_first()?;
    if !known_version(version) {
        return None;
    }
    match rest {
        ["http", "upstreams", name, "servers"] => Some(((*name).to_string(), None)),
        ["http", "upstreams", name, "servers", id] => {
            Some(((*name).to_string(), Some((*id).to_string())))
        }
        _ => None,
    }
}

fn known_version(version: &str) -> bool {
    version
        .parse::<u32>()
        .is_ok_and(|v| (1..=API_VERSION).contains(&v) && !version.starts_with(['0', '+']))
}

enum Miss {
    Path,
    Upstream(String),
    Server(String),
}

fn ok(mut body: String) -> ApiResponse {
    body.push('\n');
    ApiResponse { status: 200, body }
}

/// An answer of `status` with a JSON body (a newline is added).
pub fn answer(status: u16, mut body: String) -> ApiResponse {
    body.push('\n');
    ApiResponse { status, body }
}

/// nginx Plus's error document.
pub fn error(status: u16, text: &str, code: &str, request_id: &str) -> ApiResponse {
    let mut body = String::new();
    let mut doc = Writer::object(&mut body);
    {
        let mut e = Writer::object(doc.key("error"));
        e.num("status", u64::from(status));
        e.str("text", text);
        e.str("code", code);
        e.end();
    }
    doc.str("request_id", request_id);
    doc.str("href", HREF);
    doc.end();
    body.push('\n');
    ApiResponse { status, body }
}

/// 32 hex digits, like `$request_id`, from the view's time and the path (FNV-1a, then a
/// 64-bit mix), for callers that have no request id.
pub(crate) fn derived_request_id(view: &StatusView, path: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in view.now_unix_ms.to_le_bytes().iter().chain(path.as_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mix = |mut x: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    };
    format!("{:016x}{:016x}", mix(h), mix(h ^ 0x9e37_79b9_7f4a_7c15))
}

fn names(list: &[&str]) -> String {
    let mut out = String::new();
    let mut a = Writer::array(&mut out);
    for n in list {
        super::json::push_str(a.item(), n);
    }
    a.end();
    out
}

fn route(view: &StatusView, rest: &[&str]) -> Result<String, Miss> {
    match rest {
        [] => Ok(names(&["nginx", "connections", "http", "workers"])),
        ["nginx"] => Ok(nginx(view)),
        ["connections"] => Ok(connections(view)),
        ["workers"] => Ok(workers(view)),
        ["http"] => Ok(names(&["requests", "upstreams"])),
        ["http", "requests"] => {
            let total = view
                .workers
                .iter()
                .fold(0u64, |a, w| a.saturating_add(w.requests));
            let mut out = String::new();
            let mut o = Writer::object(&mut out);
            o.num("total", total);
            o.end();
            Ok(out)
        }
        ["http", "upstreams"] => {
            let mut out = String::new();
            let mut o = Writer::object(&mut out);
            for u in &view.upstreams {
                upstream(o.key(&u.name), u);
            }
            o.end();
            Ok(out)
        }
        ["http", "upstreams", name, more @ ..] => {
            let u = view
                .upstreams
                .iter()
                .find(|u| u.name == *name)
                .ok_or_else(|| Miss::Upstream((*name).to_string()))?;
            let mut out = String::new();
            match more {
                [] => upstream(&mut out, u),
                ["servers"] => {
                    let mut a = Writer::array(&mut out);
                    for p in &u.peers {
                        server_conf(a.item(), p);
                    }
                    a.end();
                }
                ["servers", id] => {
                    let p = id
                        .parse::<usize>()
                        .ok()
                        .filter(|_| id.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|i| u.peers.iter().find(|p| p.id == i))
                        .ok_or_else(|| Miss::Server((*id).to_string()))?;
                    server_conf(&mut out, p);
                }
                _ => return Err(Miss::Path),
            }
            Ok(out)
        }
        _ => Err(Miss::Path),
    }
}

fn nginx(view: &StatusView) -> String {
    let mut out = String::new();
    let mut o = Writer::object(&mut out);
    o.str("version", env!("CARGO_PKG_VERSION"));
    o.str("build", "ringfront");
    o.num("generation", view.generation);
    o.str("load_timestamp", &iso8601(view.started_unix_ms));
    o.str("timestamp", &iso8601(view.now_unix_ms));
    o.num("pid", u64::from(std::process::id()));
    o.end();
    out
}

fn connections(view: &StatusView) -> String {
    let active = view
        .workers
        .iter()
        .fold(0u64, |a, w| a.saturating_add(w.connections));
    let mut out = String::new();
    let mut o = Writer::object(&mut out);
    o.num("active", active);
    o.end();
    out
}

fn workers(view: &StatusView) -> String {
    let mut out = String::new();
    let mut a = Writer::array(&mut out);
    for w in &view.workers {
        let mut o = Writer::object(a.item());
        o.num("id", w.id as u64);
        {
            let mut c = Writer::object(o.key("connections"));
            c.num("active", w.connections);
            c.end();
        }
        {
            let mut h = Writer::object(o.key("http"));
            let mut r = Writer::object(h.key("requests"));
            r.num("total", w.requests);
            r.end();
            h.end();
        }
        o.end();
    }
    a.end();
    out
}

fn upstream(out: &mut String, u: &UpstreamView) {
    let mut o = Writer::object(out);
    {
        let mut peers = Writer::array(o.key("peers"));
        for p in &u.peers {
            peer(peers.item(), p);
        }
        peers.end();
    }
    o.num("keepalive", 0);
    o.num("zombies", 0);
    o.str("zone", &u.name);
    o.end();
}

fn peer(out: &mut String, p: &PeerView) {
    let mut o = Writer::object(out);
    o.num("id", p.id as u64);
    o.str("server", &p.server);
    o.str("name", &p.name);
    o.bool("backup", p.backup);
    o.num("weight", u64::from(p.weight));
    o.str("state", p.state.api_str());
    o.num("active", u64::from(p.active_conns));
    if p.max_conns > 0 {
        o.num("max_conns", u64::from(p.max_conns));
    }
    o.num("requests", p.requests);
    {
        let mut r = Writer::object(o.key("responses"));
        for (class, n) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().zip(p.responses) {
            r.num(class, n);
        }
        r.num("total", p.responses_total());
        r.end();
    }
    o.num("sent", 0);
    o.num("received", 0);
    o.num("fails", p.failures_total());
    o.num("unavail", p.unavail);
    {
        let mut h = Writer::object(o.key("health_checks"));
        h.num("checks", p.checks_total);
        h.num("fails", p.checks_failed);
        h.num("unhealthy", p.unhealthy);
        if p.active != Verdict::Unknown {
            h.bool("last_passed", p.active == Verdict::Pass);
        }
        h.end();
    }
    o.num("downtime", p.downtime_ms);
    if !p.state.is_up() {
        if let Some(t) = p.last_change_unix_ms {
            o.str("downstart", &iso8601(t));
        }
    }
    if let Some(t) = p.last_selected_unix_ms {
        o.str("selected", &iso8601(t));
    }
    if p.response_time_ms > 0 || p.rt_count > 0 {
        o.num("response_time", p.response_time_ms);
    }
    o.end();
}

fn server_conf(out: &mut String, p: &PeerView) {
    let mut o = Writer::object(out);
    o.num("id", p.id as u64);
    o.str("server", &p.server);
    o.num("weight", u64::from(p.weight));
    o.num("max_conns", u64::from(p.max_conns));
    o.num("max_fails", u64::from(p.max_fails));
    o.str("fail_timeout", &format!("{}s", p.fail_timeout_s));
    o.str("slow_start", &format!("{}s", p.slow_start_s));
    o.str("route", "");
    o.bool("backup", p.backup);
    o.bool("down", p.down_configured);
    if p.drain_configured {
        o.bool("drain", true);
    }
    o.end();
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;
    use super::*;
    use serde_json::{json, Value};

    fn get(path: &str) -> (u16, Value) {
        let r = api(&sample(), "GET", path, "");
        let v = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.body));
        (r.status, v)
    }

    fn err_code(v: &Value) -> &str {
        v["error"]["code"].as_str().unwrap()
    }

    #[test]
    fn directories() {
        assert_eq!(get(""), (200, json!([1, 2, 3, 4, 5, 6, 7, 8, 9])));
        assert_eq!(get("/"), (200, json!([1, 2, 3, 4, 5, 6, 7, 8, 9])));
        assert_eq!(
            get("/9"),
            (200, json!(["nginx", "connections", "http", "workers"]))
        );
        assert_eq!(get("/9/http/"), (200, json!(["requests", "upstreams"])));
        assert_eq!(get("/4/http"), (200, json!(["requests", "upstreams"])));
        assert_eq!(get("/9/http/requests"), (200, json!({"total": 131})));
        assert_eq!(get("/9/connections"), (200, json!({"active": 4})));
        let (s, w) = get("/9/workers");
        assert_eq!(s, 200);
        assert_eq!(w[1]["http"]["requests"]["total"], 31);
        assert_eq!(w[0]["connections"]["active"], 3);
        let (s, n) = get("/9/nginx");
        assert_eq!(s, 200);
        assert_eq!(n["generation"], 4);
        assert_eq!(n["timestamp"], "2023-11-14T22:13:20.000Z");
    }

    #[test]
    fn upstreams() {
        let (s, all) = get("/9/http/upstreams");
        assert_eq!(s, 200);
        let keys: Vec<&String> = all.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 2);
        let b = &all["backend"];
        assert_eq!(b["zone"], "backend");
        assert_eq!(b["keepalive"], 0);
        assert_eq!(b["zombies"], 0);
        let p0 = &b["peers"][0];
        assert_eq!(p0["id"], 0);
        assert_eq!(p0["server"], "127.0.0.1:8081");
        assert_eq!(p0["name"], "127.0.0.1:8081");
        assert_eq!(p0["state"], "up");
        assert_eq!(p0["active"], 2);
        assert_eq!(p0["max_conns"], 100);
        assert_eq!(p0["weight"], 5);
        assert_eq!(
            p0["responses"],
            json!({"1xx": 0, "2xx": 110, "3xx": 2, "4xx": 3, "5xx": 5, "total": 120})
        );
        assert_eq!(p0["fails"], 8);
        assert_eq!(
            p0["health_checks"],
            json!({"checks": 40, "fails": 1, "unhealthy": 0, "last_passed": true})
        );
        assert_eq!(p0["selected"], "2023-11-14T22:13:19.990Z");
        assert_eq!(p0["response_time"], 12);
        assert!(p0.get("downstart").is_none());
        let p1 = &b["peers"][1];
        assert_eq!(p1["state"], "unhealthy");
        assert_eq!(p1["health_checks"]["last_passed"], false);
        assert_eq!(p1["downtime"], 3000);
        assert_eq!(p1["downstart"], "2023-11-14T22:13:17.000Z");
        let p2 = &b["peers"][2];
        assert_eq!(p2["state"], "checking");
        assert_eq!(p2["backup"], true);
        assert_eq!(p2["server"], "backup.example:8083");
        assert_eq!(p2["name"], "127.0.0.1:8083");
        assert!(p2["health_checks"].get("last_passed").is_none());
        assert!(p2.get("selected").is_none());
        let a = &all["api \"v2\""];
        assert_eq!(a["peers"][0]["state"], "unavail");
        assert_eq!(a["peers"][0]["unavail"], 1);
        assert_eq!(a["peers"][2]["state"], "down");

        let (s, one) = get("/9/http/upstreams/backend");
        assert_eq!((s, &one), (200, b));
        let (s, one) = get("/9/http/upstreams/api%20%22v2%22/");
        assert_eq!((s, &one), (200, a));
    }

    #[test]
    fn servers() {
        let (s, list) = get("/9/http/upstreams/backend/servers");
        assert_eq!(s, 200);
        assert_eq!(list.as_array().unwrap().len(), 3);
        assert_eq!(
            list[0],
            json!({"id": 0, "server": "127.0.0.1:8081", "weight": 5, "max_conns": 100,
                   "max_fails": 1, "fail_timeout": "10s", "slow_start": "30s", "route": "",
                   "backup": false, "down": false})
        );
        let (s, one) = get("/9/http/upstreams/backend/servers/2");
        assert_eq!(s, 200);
        assert_eq!(one["server"], "backup.example:8083");
        assert_eq!(one["backup"], true);
        let (_, d) = get("/9/http/upstreams/api%20%22v2%22/servers/2");
        assert_eq!(d["down"], true);
    }

    #[test]
    fn errors() {
        let (s, e) = get("/9/http/upstreams/nope");
        assert_eq!(s, 404);
        assert_eq!(
            e["error"],
            json!({"status": 404, "text": "unknown upstream \"nope\"", "code": "UpstreamNotFound"})
        );
        assert_eq!(e["href"], HREF);
        let rid = e["request_id"].as_str().unwrap();
        assert_eq!(rid.len(), 32);
        assert!(rid.bytes().all(|b| b.is_ascii_hexdigit()));
        for path in [
            "/9/nope",
            "/9/http/caches",
            "/9/http/upstreams/backend/peers",
            "/9/http/upstreams/backend/servers/0/x",
            "/9/%zz",
        ] {
            let (s, e) = get(path);
            assert_eq!((s, err_code(&e)), (404, "PathNotFound"), "{path}");
            assert_eq!(e["error"]["text"], "path not found");
        }
        for path in ["/10", "/0", "/v9", "/09", "/+9", "/99999999999999999999"] {
            let (s, e) = get(path);
            assert_eq!((s, err_code(&e)), (404, "UnknownVersion"), "{path}");
        }
        for path in [
            "/9/http/upstreams/backend/servers/3",
            "/9/http/upstreams/backend/servers/-1",
            "/9/http/upstreams/backend/servers/+1",
            "/9/http/upstreams/backend/servers/x",
        ] {
            let (s, e) = get(path);
            assert_eq!((s, err_code(&e)), (404, "UpstreamServerNotFound"), "{path}");
        }
        for m in ["POST", "PATCH", "DELETE", "PUT", "get"] {
            let r = api(&sample(), m, "/9/http/upstreams", "abc");
            assert_eq!(r.status, 405);
            let e: Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(
                e,
                json!({"error": {"status": 405, "text": "method disabled", "code": "MethodDisabled"},
                       "request_id": "abc", "href": HREF})
            );
        }
        let head = api(&sample(), "HEAD", "/9/http/upstreams", "");
        let get = api(&sample(), "GET", "/9/http/upstreams", "");
        assert_eq!(head, get);
    }

    #[test]
    fn escaped_names() {
        let mut v = sample();
        v.upstreams[0].name = "a\"<b>\\".into();
        let r = api(&v, "GET", "/9/http/upstreams", "");
        let doc: Value = serde_json::from_str(&r.body).unwrap();
        assert!(doc.get("a\"<b>\\").is_some());
        let r = api(&v, "GET", "/9/http/upstreams/x%22y", "");
        let doc: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(doc["error"]["text"], "unknown upstream \"x\"y\"");
    }
}
