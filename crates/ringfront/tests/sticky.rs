//! `sticky cookie | route | learn` (nginx 1.29.6+ / nginx Plus; nginx 1.22 has no sticky, so
//! there is no differential oracle): clients that keep cookies — a small jar here and real
//! curl with its cookie file — reach the same backend across many connections and both
//! worker threads; a pinned backend that is down or failed sends the request elsewhere with
//! a fresh cookie; forged ids go to the balancer; routes and learned sessions pin as well.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use common::{addr, fill, port, served_by};
use ringfront_testkit::{http::Client, Backend, Canned, Mode, Response, Ringfront, SIGHUP};

/// A two-worker configuration over `servers` with `upstream` lines added.
fn config(p: u16, servers: &[String], upstream: &str) -> String {
    let servers: String = servers.iter().map(|s| format!("server {s};\n")).collect();
    fill(
        "worker_processes 2;
error_log stderr info;
events { worker_connections 256; }
http {
    upstream backend {
        {SERVERS}
        {UP}
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://backend; }
    }
}
",
        &[
            ("SERVERS", servers),
            ("UP", upstream.to_string()),
            ("PORT", p.to_string()),
        ],
    )
}

fn three() -> Vec<Backend> {
    (0..3).map(|_| Backend::start()).collect()
}

fn plain(bs: &[Backend]) -> Vec<String> {
    bs.iter().map(addr).collect()
}

/// One request on a new connection (so the two workers both serve), with `cookie`.
fn get(p: u16, path: &str, cookie: Option<&str>) -> Response {
    let mut c = Client::connect(("127.0.0.1", p));
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
    c.request("GET", path, &headers, b"")
}

/// The value of cookie `name` a response sets, and its attributes as sent.
fn set_cookie<'r>(r: &'r Response, name: &str) -> Option<&'r str> {
    r.header_all("set-cookie")
        .into_iter()
        .find(|v| v.starts_with(&format!("{name}=")))
}

fn value_of(set: &str) -> String {
    let first = set.split(';').next().unwrap_or("");
    first.split_once('=').map_or("", |(_, v)| v).to_string()
}

/// The server id ringfront gives each backend (by port), learned from cookieless requests.
fn ids(p: u16, bs: &[Backend]) -> HashMap<u16, String> {
    let mut ids = HashMap::new();
    for _ in 0..30 {
        let r = get(p, "/", None);
        assert_eq!(r.status, 200);
        let v = value_of(set_cookie(&r, "srv").expect("a sticky cookie"));
        if let Some(old) = ids.insert(served_by(&r), v.clone()) {
            assert_eq!(old, v, "one id per backend");
        }
        if ids.len() == bs.len() {
            break;
        }
    }
    assert_eq!(ids.len(), bs.len(), "every backend served: {ids:?}");
    ids
}

#[test]
fn the_first_response_sets_the_cookie_with_the_attributes_configured() {
    let bs = three();
    let p = port();
    let _rf = Ringfront::start(&config(
        p,
        &plain(&bs),
        "sticky cookie srv \"expires=1h 3m\" domain=.example.com httponly samesite=lax secure path=/app;",
    ));
    let r = get(p, "/", None);
    assert_eq!(r.status, 200);
    let set = set_cookie(&r, "srv").expect("Set-Cookie srv");
    // nginx's order: value, expires + max-age, domain, httponly, secure, samesite, path.
    let parts: Vec<&str> = set.split("; ").collect();
    assert_eq!(parts.len(), 8, "{set}");
    let id = value_of(set);
    assert_eq!(id.len(), 32, "{set}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{set}");
    let port_text = served_by(&r).to_string();
    assert!(
        !set.contains("127.0.0.1") && !id.contains(&port_text),
        "{set}"
    );
    assert!(
        parts[1].starts_with("expires=") && parts[1].ends_with(" GMT"),
        "{set}"
    );
    assert_eq!(
        &parts[2..],
        [
            "max-age=3780",
            "domain=.example.com",
            "httponly",
            "secure",
            "samesite=lax",
            "path=/app"
        ]
    );
}

#[test]
fn expires_max_is_nginxs_fixed_date() {
    let bs = three();
    let p = port();
    let _rf = Ringfront::start(&config(p, &plain(&bs), "sticky cookie srv expires=max;"));
    let r = get(p, "/", None);
    let set = set_cookie(&r, "srv").unwrap();
    assert!(
        set.ends_with("; expires=Thu, 31-Dec-37 23:55:55 GMT; max-age=315360000"),
        "{set}"
    );
}

/// With the cookie, every request (new connections, both workers) reaches the same backend,
/// whatever the balancer would have chosen; every response names it again. The ids come
/// from another ringfront with round robin and another group name: an id depends only on
/// the server's address (as nginx's), so it holds in every group that lists the server.
fn sticks_with(bs: &[Backend], ids: &HashMap<u16, String>, balancer: &str) {
    let p = port();
    let _rf = Ringfront::start(&config(
        p,
        &plain(bs),
        &format!("{balancer}\nsticky cookie srv;"),
    ));
    for b in bs {
        let id = &ids[&b.port()];
        let cookie = format!("other=1; srv={id}");
        for i in 0..12 {
            let r = get(p, &format!("/?x={i}"), Some(&cookie));
            assert_eq!(r.status, 200);
            assert_eq!(served_by(&r), b.port(), "{balancer}: request {i}");
            assert_eq!(value_of(set_cookie(&r, "srv").unwrap()), *id, "{balancer}");
        }
    }
}

/// Three backends and their ids, learned from a round-robin ringfront.
fn learned_ids() -> (Vec<Backend>, HashMap<u16, String>) {
    let bs = three();
    let p = port();
    let other = config(p, &plain(&bs), "sticky cookie srv;")
        .replace("upstream backend", "upstream elsewhere")
        .replace("http://backend", "http://elsewhere");
    let _rf = Ringfront::start(&other);
    let ids = ids(p, &bs);
    (bs, ids)
}

#[test]
fn a_cookie_pins_with_round_robin() {
    let (bs, ids) = learned_ids();
    sticks_with(&bs, &ids, "");
}

#[test]
fn a_cookie_pins_with_every_other_balancer() {
    let (bs, ids) = learned_ids();
    for b in [
        "least_conn;",
        "ip_hash;",
        "hash $arg_x;",
        "hash $arg_x consistent;",
        "random;",
        "random two least_conn;",
        "least_time header;",
    ] {
        sticks_with(&bs, &ids, b);
    }
}

#[test]
fn a_pinned_backend_that_is_gone_or_failed_is_replaced_with_a_fresh_cookie() {
    let bs = three();
    let p = port();
    let servers: Vec<String> = bs
        .iter()
        .map(|b| format!("{} max_fails=1 fail_timeout=60s", addr(b)))
        .collect();
    let _rf = Ringfront::start(&config(p, &servers, "sticky cookie srv;"));
    let ids = ids(p, &bs);
    // Killed (connections refused): the request goes on to another peer, which is named.
    let (dead, id) = (&bs[0], ids[&bs[0].port()].clone());
    dead.set_mode(Mode::Refuse);
    let r = get(p, "/", Some(&format!("srv={id}")));
    assert_eq!(r.status, 200);
    assert_ne!(served_by(&r), dead.port());
    let fresh = value_of(set_cookie(&r, "srv").unwrap());
    assert_ne!(fresh, id);
    assert_eq!(fresh, ids[&served_by(&r)]);
    // The new cookie sticks to the new backend.
    for _ in 0..10 {
        let r = get(p, "/", Some(&format!("srv={fresh}")));
        assert_eq!(value_of(set_cookie(&r, "srv").unwrap()), fresh);
        assert_eq!(ids[&served_by(&r)], fresh);
    }
    // The old cookie, while its backend is failed out, never reaches it even when it is
    // back: it is out for fail_timeout, and the balancer chooses.
    dead.set_mode(Mode::Ok);
    dead.reset_hits();
    for _ in 0..10 {
        let r = get(p, "/", Some(&format!("srv={id}")));
        assert_eq!(r.status, 200);
        assert_ne!(served_by(&r), dead.port());
    }
    assert_eq!(dead.hits(), 0);
}

#[test]
fn a_pinned_backend_at_max_conns_falls_back_to_the_balancer() {
    let bs = three();
    let p = port();
    let servers = vec![
        format!("{} max_conns=1", addr(&bs[0])),
        addr(&bs[1]),
        addr(&bs[2]),
    ];
    let _rf = Ringfront::start(&config(p, &servers, "sticky cookie srv;"));
    let ids = ids(p, &bs);
    let id = ids[&bs[0].port()].clone();
    // One slow request holds bs[0]'s only slot.
    let before = bs[0].hits();
    let slow = {
        let cookie = format!("srv={id}");
        std::thread::spawn(move || get(p, "/?sleep=1", Some(&cookie)))
    };
    assert!(bs[0].wait_hits(before + 1, std::time::Duration::from_secs(5)));
    for _ in 0..5 {
        let r = get(p, "/", Some(&format!("srv={id}")));
        assert_ne!(served_by(&r), bs[0].port(), "bs0 is full");
        assert_eq!(
            ids[&served_by(&r)],
            value_of(set_cookie(&r, "srv").unwrap())
        );
    }
    let first = slow.join().unwrap();
    assert_eq!(served_by(&first), bs[0].port());
    assert_eq!(value_of(set_cookie(&first, "srv").unwrap()), id);
}

#[test]
fn forged_or_unknown_cookies_go_to_the_balancer() {
    let bs = three();
    let p = port();
    let _rf = Ringfront::start(&config(p, &plain(&bs), "sticky cookie srv;"));
    let ids = ids(p, &bs);
    let known: BTreeSet<&String> = ids.values().collect();
    let mut served = BTreeSet::new();
    for forged in ["0123456789abcdef0123456789abcdef", "127.0.0.1:1", "", "x;y"] {
        for _ in 0..3 {
            let r = get(p, "/", Some(&format!("srv={forged}")));
            assert_eq!(r.status, 200);
            let v = value_of(set_cookie(&r, "srv").unwrap());
            assert!(known.contains(&v), "a real id replaces {forged:?}");
            served.insert(served_by(&r));
        }
    }
    assert_eq!(served.len(), 3, "round robin spread the forged requests");
}

/// Real curl keeping its cookie file: after the first answer every request goes to the same
/// backend (a new connection each time).
#[test]
fn curl_with_a_cookie_jar_sticks() {
    let bs = three();
    let p = port();
    let _rf = Ringfront::start(&config(
        p,
        &plain(&bs),
        "sticky cookie srv expires=1h path=/ httponly samesite=lax;",
    ));
    let dir = std::env::temp_dir().join(format!("ringfront-sticky-jar-{p}"));
    let jar = dir.to_string_lossy().to_string();
    let url = format!("http://127.0.0.1:{p}/");
    let mut seen = BTreeSet::new();
    for _ in 0..12 {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-D",
                "-",
                "-c",
                &jar,
                "-b",
                &jar,
                &url,
            ])
            .output()
            .expect("curl runs");
        let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
        let backend = head
            .lines()
            .find_map(|l| l.strip_prefix("x-backend: "))
            .map(|v| v.trim().to_string())
            .expect("x-backend");
        seen.insert(backend);
    }
    let _ = std::fs::remove_file(&dir);
    assert_eq!(seen.len(), 1, "curl stayed on one backend: {seen:?}");
}

#[test]
fn route_pins_by_the_first_non_empty_variable() {
    let bs = three();
    let p = port();
    let servers: Vec<String> = bs
        .iter()
        .zip(["a", "b", "c"])
        .map(|(b, r)| format!("{} route={r}", addr(b)))
        .collect();
    let _rf = Ringfront::start(&config(p, &servers, "sticky route $cookie_x $arg_route;"));
    for _ in 0..6 {
        assert_eq!(served_by(&get(p, "/?route=b", None)), bs[1].port());
        // The cookie comes first.
        assert_eq!(served_by(&get(p, "/?route=b", Some("x=c"))), bs[2].port());
        // An empty cookie does not count: the argument does.
        assert_eq!(served_by(&get(p, "/?route=a", Some("x="))), bs[0].port());
    }
    // An unknown route goes to the balancer (whose weights the pinned requests moved, as
    // nginx's); route mode sets no cookie.
    let mut served = BTreeSet::new();
    for _ in 0..12 {
        let r = get(p, "/?route=zz", None);
        assert!(r.header("set-cookie").is_none());
        served.insert(served_by(&r));
    }
    assert!(served.len() >= 2, "{served:?}");
}

/// `header`: the session is learned when the head arrives, before the client has the
/// response, so its next request finds it (without `header` nginx learns when the request
/// ends, a moment after the client got the response).
#[test]
fn learn_remembers_the_session_the_backend_created() {
    let bs = three();
    for (i, b) in bs.iter().enumerate() {
        b.set_route(
            "/login",
            Canned::status(200, "in").header("Set-Cookie", &format!("sid=s{i}; path=/")),
        );
    }
    let p = port();
    let _rf = Ringfront::start(&config(
        p,
        &plain(&bs),
        "sticky learn create=$upstream_cookie_sid lookup=$cookie_sid zone=sessions:1m header;",
    ));
    // Each login lands on some backend and creates its session there.
    let mut sessions = HashMap::new();
    for _ in 0..30 {
        let r = get(p, "/login", None);
        let sid = value_of(set_cookie(&r, "sid").unwrap());
        sessions.insert(sid, served_by(&r));
        if sessions.len() == 3 {
            break;
        }
    }
    assert_eq!(sessions.len(), 3, "round robin spread the logins");
    for (sid, port) in &sessions {
        for _ in 0..10 {
            let r = get(p, "/", Some(&format!("sid={sid}")));
            assert_eq!(served_by(&r), *port, "session {sid}");
        }
    }
    // An unknown session goes to the balancer (whose round-robin weights the pinned
    // requests moved, as nginx's: not necessarily every backend in a few requests).
    let mut served = BTreeSet::new();
    for _ in 0..12 {
        served.insert(served_by(&get(p, "/", Some("sid=nobody"))));
    }
    assert!(served.len() >= 2, "{served:?}");
}

#[test]
fn config_errors_in_nginxs_words() {
    let cases = [
        (
            "sticky cookie srv; sticky route $arg_a;",
            "\"sticky\" directive is duplicate",
        ),
        ("sticky foo bar;", "unknown parameter \"foo\""),
        ("sticky cookie srv bogus;", "unknown parameter \"bogus\""),
        (
            "sticky cookie srv expires=xx;",
            "\"sticky\" directive invalid \"expires\" parameter value",
        ),
        (
            "sticky cookie srv samesite=odd;",
            "\"sticky\" directive invalid \"samesite\" parameter value",
        ),
        (
            "sticky cookie srv httponly httponly;",
            "\"sticky\" directive parameter \"httponly\" is duplicate",
        ),
        (
            "sticky cookie srv domain=;",
            "\"sticky\" directive no value for \"domain\"",
        ),
        (
            "sticky cookie srv secret=;",
            "\"sticky\" directive no value for \"secret\"",
        ),
        ("sticky route arg;", "invalid variable name \"arg\""),
        ("sticky route $nosuchvar;", "unknown \"nosuchvar\" variable"),
        (
            "sticky learn create=$upstream_cookie_s zone=z:1m;",
            "\"sticky\" directive \"lookup\" parameter is not specified",
        ),
        (
            "sticky learn lookup=$cookie_s zone=z:1m;",
            "\"sticky\" directive \"create\" parameter is not specified",
        ),
        (
            "sticky learn create=$upstream_cookie_s lookup=$cookie_s;",
            "\"sticky\" directive \"zone\" parameter is not specified",
        ),
        (
            "sticky learn create=$upstream_cookie_s lookup=$cookie_s zone=z:1k;",
            "\"sticky\" directive zone is too small",
        ),
        (
            "sticky learn create=$upstream_cookie_s lookup=$cookie_s zone=z:1m timeout=0;",
            "\"sticky\" directive invalid timeout",
        ),
        (
            "sticky learn create=upstream lookup=$cookie_s zone=z:1m;",
            "\"sticky\" directive missing variable in the \"create\" parameter",
        ),
        (
            "sticky cookie;",
            "invalid number of arguments in \"sticky\" directive",
        ),
    ];
    for (line, want) in cases {
        let text = config(1, &["127.0.0.1:1".into()], line);
        let (status, out) = Ringfront::run_check(&text);
        assert!(!status.success(), "{line}");
        assert!(out.contains(want), "{line}: {out}");
        assert!(out.contains("ringfront.conf:"), "{line}: a place: {out}");
    }
    let (status, out) = Ringfront::run_check(&config(1, &["127.0.0.1:1 route=".into()], ""));
    assert!(!status.success() && out.contains("route is empty"), "{out}");
    let long = format!("127.0.0.1:1 route={}", "r".repeat(33));
    let (status, out) = Ringfront::run_check(&config(1, &[long], ""));
    assert!(
        !status.success() && out.contains("route is longer than 32"),
        "{out}"
    );
}

#[test]
fn ids_and_learned_sessions_survive_a_reload() {
    let bs = three();
    for (i, b) in bs.iter().enumerate() {
        b.set_route(
            "/login",
            Canned::status(200, "in").header("Set-Cookie", &format!("sid=s{i}")),
        );
    }
    let p = port();
    let learn = "sticky learn create=$upstream_cookie_sid lookup=$cookie_sid zone=s:1m header;";
    let rf = Ringfront::start(&config(p, &plain(&bs), learn));
    let r = get(p, "/login", None);
    let (sid, home) = (value_of(set_cookie(&r, "sid").unwrap()), served_by(&r));
    // Reload with a changed configuration (a new location option) but the same group.
    let next = config(p, &plain(&bs), learn).replace(
        "proxy_pass http://backend; }",
        "proxy_pass http://backend; proxy_read_timeout 30s; }",
    );
    rf.write_config(&next);
    rf.signal(SIGHUP);
    assert!(
        rf.wait_for_stderr(
            "reconfigured (generation 2)",
            std::time::Duration::from_secs(10)
        ),
        "{:?}",
        rf.stderr_lines()
    );
    for _ in 0..6 {
        assert_eq!(served_by(&get(p, "/", Some(&format!("sid={sid}")))), home);
    }
}

/// Without `header` the session is learned when the request ends: once its access-log line
/// is written (after the request ended), the next request finds the session.
#[test]
fn learn_without_header_learns_when_the_request_ends() {
    let bs = three();
    for (i, b) in bs.iter().enumerate() {
        b.set_route(
            "/login",
            Canned::status(200, "in").header("Set-Cookie", &format!("sid=t{i}")),
        );
    }
    let p = port();
    let log = std::env::temp_dir().join(format!("ringfront-sticky-{}-{p}.log", std::process::id()));
    let conf = config(
        p,
        &plain(&bs),
        "sticky learn create=$upstream_cookie_sid lookup=$cookie_sid zone=t:64k timeout=1h;",
    )
    .replacen(
        "http {\n",
        &format!("http {{\n    access_log {};\n", log.display()),
        1,
    );
    let _rf = Ringfront::start(&conf);
    let r = get(p, "/login", None);
    let (sid, home) = (value_of(set_cookie(&r, "sid").unwrap()), served_by(&r));
    assert_eq!(common::log_lines(&log, 1).len(), 1);
    for _ in 0..6 {
        assert_eq!(served_by(&get(p, "/", Some(&format!("sid={sid}")))), home);
    }
    let _ = std::fs::remove_file(&log);
}

/// `create=$cookie_sid`: a session the client names is created on the peer the balancer
/// chose; when that peer answers with a listed status the request moves on and the session
/// moves with it (nginx's `upstream_sticky_learn.t`, "pnu 403").
#[test]
fn a_client_session_follows_the_request_to_the_next_peer() {
    let bs = three();
    let p = port();
    let conf = config(
        p,
        &plain(&bs),
        "sticky learn lookup=$cookie_sid create=$cookie_sid zone=c:1m header;",
    )
    .replace(
        "proxy_pass http://backend; }",
        "proxy_pass http://backend; proxy_next_upstream http_403; }",
    );
    let _rf = Ringfront::start(&conf);
    let first = served_by(&get(p, "/", Some("sid=v1")));
    for _ in 0..4 {
        assert_eq!(served_by(&get(p, "/", Some("sid=v1"))), first);
    }
    let x = bs.iter().find(|b| b.port() == first).unwrap();
    x.set_route("/", Canned::status(403, "no"));
    let moved = get(p, "/", Some("sid=v1"));
    assert_eq!(moved.status, 200);
    assert_ne!(served_by(&moved), first);
    x.clear_route("/");
    for _ in 0..4 {
        assert_eq!(served_by(&get(p, "/", Some("sid=v1"))), served_by(&moved));
    }
}

/// `secret=` (ringfront only) keys the ids' hash: other ids than without it, which pin the
/// same way.
#[test]
fn a_secret_changes_every_id() {
    let (bs, plain_ids) = learned_ids();
    let p = port();
    let _rf = Ringfront::start(&config(
        p,
        &plain(&bs),
        "sticky cookie srv secret=Zm9vYmFy;",
    ));
    let keyed = ids(p, &bs);
    for b in &bs {
        assert_ne!(keyed[&b.port()], plain_ids[&b.port()]);
        let cookie = format!("srv={}", keyed[&b.port()]);
        for _ in 0..4 {
            assert_eq!(served_by(&get(p, "/", Some(&cookie))), b.port());
        }
    }
}
