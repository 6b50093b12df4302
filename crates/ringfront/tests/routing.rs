//! Locations, servers and local answers: nginx's location matching order, `return`,
//! `error_page` with `root`, `proxy_pass` URI replacement, and the access log's per-try values.

mod common;

use std::time::Duration;

use common::{addr, fill, port};
use ringfront_testkit::{http, Backend, Mode, Ringfront};

#[test]
fn location_matching_order_is_nginx_s() {
    let p = port();
    let cfg = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT};
        location = /exact { return 200 \"exact\"; }
        location /static/ { return 200 \"prefix-static\"; }
        location ^~ /assets/ { return 200 \"no-regex-assets\"; }
        location ~ \\.php$ { return 200 \"regex-php\"; }
        location ~* \\.PNG$ { return 200 \"regex-png-ci\"; }
        location /static/deep/ { return 200 \"longest-prefix\"; }
        location / { return 200 \"root\"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name other.example *.wild.example;
        location / { return 200 \"other-server\"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name .example.com;
        location / { return 200 \"dot-server\"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name \"~^api-(\\d+)\\.regex\\.test$\" ;
        location / { return 200 \"regex-server\"; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name \"~^(?P<sub>WWW\\D+)\\.Case\\.test$\";
        location / { return 200 \"case-regex-server\"; }
    }
}
",
        &[("PORT", p.to_string())],
    );
    let _rf = Ringfront::start(&cfg);
    let body = |path: &str| http::get(("127.0.0.1", p), path).text();
    assert_eq!(body("/exact"), "exact");
    assert_eq!(body("/exact/more"), "root");
    assert_eq!(body("/static/x"), "prefix-static");
    assert_eq!(body("/static/x.php"), "regex-php");
    assert_eq!(body("/assets/x.php"), "no-regex-assets");
    assert_eq!(body("/img/a.png"), "regex-png-ci");
    assert_eq!(body("/static/deep/y"), "longest-prefix");
    assert_eq!(body("/nothing"), "root");
    let mut c = ringfront_testkit::Client::connect(("127.0.0.1", p));
    assert_eq!(by_host_once(p, "example.com"), "dot-server");
    assert_eq!(by_host_once(p, "www.example.com"), "dot-server");
    assert_eq!(by_host_once(p, "api-7.regex.test"), "regex-server");
    // Regexes keep their case (`\D` stays "not a digit", named groups parse) and match
    // case-insensitively, as nginx's.
    assert_eq!(by_host_once(p, "www-abc.case.test"), "case-regex-server");
    assert_eq!(by_host_once(p, "WWW-ABC.CASE.TEST"), "case-regex-server");
    assert_eq!(by_host_once(p, "www7.case.test"), "root");
    let by_host = |c: &mut ringfront_testkit::Client, host: &str| {
        c.request("GET", "/", &[("Host", host)], b"").text()
    };
    assert_eq!(by_host(&mut c, "other.example"), "other-server");
    assert_eq!(by_host(&mut c, "a.wild.example:8080"), "other-server");
    assert_eq!(by_host(&mut c, "unknown.example"), "root");
}

fn by_host_once(p: u16, host: &str) -> String {
    let mut c = ringfront_testkit::Client::connect(("127.0.0.1", p));
    c.request("GET", "/", &[("Host", host)], b"").text()
}

#[test]
fn return_redirect_and_error_page_from_root() {
    let p = port();
    let be = Backend::start();
    be.set_mode(Mode::Refuse);
    let html = std::env::temp_dir().join(format!("ringfront-errpage-{p}"));
    std::fs::create_dir_all(&html).unwrap();
    std::fs::write(html.join("50x.html"), "<p>sorry, try later</p>\n").unwrap();
    let cfg = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT};
        location /old { return 301 http://example.com$request_uri; }
        location /gone { return 410; }
        location /drop { return 444; }
        location /rel { return 302 /elsewhere; }
        location / {
            proxy_pass http://{BACKEND};
            error_page 502 503 504 /50x.html;
        }
        location = /50x.html {
            root {ROOT};
        }
    }
}
",
        &[
            ("PORT", p.to_string()),
            ("BACKEND", addr(&be)),
            ("ROOT", html.display().to_string()),
        ],
    );
    let _rf = Ringfront::start(&cfg);
    let r = http::get(("127.0.0.1", p), "/old/page?x=1");
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("location"),
        Some("http://example.com/old/page?x=1")
    );
    assert_eq!(http::get(("127.0.0.1", p), "/gone").status, 410);
    let r = http::get(("127.0.0.1", p), "/rel");
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("location"),
        Some(format!("http://127.0.0.1:{p}/elsewhere").as_str())
    );
    // 444 closes the connection without an answer.
    let mut c = ringfront_testkit::Client::connect(("127.0.0.1", p));
    c.send_raw(b"GET /drop HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(c.try_read_response().is_err());
    let r = http::get(("127.0.0.1", p), "/app");
    assert_eq!(r.status, 502);
    assert_eq!(r.text(), "<p>sorry, try later</p>\n");
    let _ = std::fs::remove_dir_all(&html);
}

#[test]
fn proxy_pass_with_uri_replaces_the_location_prefix() {
    let p = port();
    let be = Backend::start();
    let cfg = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT};
        location /api/ { proxy_pass http://{BACKEND}/v2/; }
        location / { proxy_pass http://{BACKEND}; }
    }
}
",
        &[("PORT", p.to_string()), ("BACKEND", addr(&be))],
    );
    let _rf = Ringfront::start(&cfg);
    assert_eq!(http::get(("127.0.0.1", p), "/api/users?id=7").status, 200);
    assert_eq!(http::get(("127.0.0.1", p), "/plain?q").status, 200);
    let targets: Vec<String> = be.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(targets, ["/v2/users?id=7", "/plain?q"]);
    // Implicit upstream: $proxy_host is host:port.
    assert_eq!(be.requests()[0].header("host"), Some(addr(&be).as_str()));
}

#[test]
fn access_log_has_one_value_per_try() {
    let p = port();
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Refuse);
    let log = std::env::temp_dir().join(format!("ringfront-access-{p}.log"));
    let _ = std::fs::remove_file(&log);
    let cfg = fill(
        "events {}
http {
    log_format tries '$remote_addr \"$request\" $status $body_bytes_sent ua=\"$http_user_agent\" '
                     'up=[$upstream_addr] st=[$upstream_status] rt=[$upstream_response_time]';
    upstream b { server {A}; server {B}; }
    server {
        listen 127.0.0.1:{PORT};
        access_log {LOG} tries;
        location / { proxy_pass http://b; }
    }
}
",
        &[
            ("PORT", p.to_string()),
            ("A", addr(&a)),
            ("B", addr(&b)),
            ("LOG", log.display().to_string()),
        ],
    );
    let rf = Ringfront::start(&cfg);
    let mut c = ringfront_testkit::Client::connect(("127.0.0.1", p));
    let r = c.request("GET", "/first", &[("User-Agent", "t/1 \"q\"")], b"");
    assert_eq!(r.status, 200);
    // QUIT flushes the log writer before exiting.
    drop(c);
    rf.signal(ringfront_testkit::SIGQUIT);
    assert!(rf.wait_exit(Duration::from_secs(10)).is_some());
    let text = std::fs::read_to_string(&log).unwrap();
    let line = text.lines().next().unwrap_or_default();
    let expect = format!(
        "127.0.0.1 \"GET /first HTTP/1.1\" 200 {} ua=\"t/1 \\x22q\\x22\" up=[{}, {}] st=[502, 200] rt=[",
        r.body.len(),
        addr(&a),
        addr(&b)
    );
    assert!(
        line.starts_with(&expect),
        "{line}\nexpected prefix: {expect}"
    );
    let _ = std::fs::remove_file(&log);
}

#[test]
fn allow_and_deny_first_match_wins() {
    let p = port();
    let be = Backend::start();
    let cfg = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT};
        location /open { return 200 \"open\"; }
        location /admin {
            allow 10.0.0.0/8;
            deny all;
            proxy_pass http://{BACKEND};
        }
        location /early {
            deny all;
            return 200 \"early\";
        }
        location /local {
            allow 127.0.0.1;
            deny all;
            proxy_pass http://{BACKEND};
        }
    }
}
",
        &[("PORT", p.to_string()), ("BACKEND", addr(&be))],
    );
    let rf = Ringfront::start(&cfg);
    assert_eq!(http::get(("127.0.0.1", p), "/open").text(), "open");
    // `return` runs in nginx's rewrite phase, before the access phase.
    assert_eq!(http::get(("127.0.0.1", p), "/early").text(), "early");
    let mut c = ringfront_testkit::Client::connect(("127.0.0.1", p));
    let r = c.request("GET", "/admin", &[], b"");
    assert_eq!(r.status, 403);
    // A denied request without a body keeps the connection usable.
    assert_eq!(c.request("GET", "/local", &[], b"").status, 200);
    // With a body, the connection is closed after the 403 and nothing reaches a backend.
    let r = c.request("POST", "/admin", &[], b"payload");
    assert_eq!(r.status, 403);
    assert!(c.peer_closed(Duration::from_secs(5)));
    assert_eq!(be.hits(), 1);
    assert!(rf.wait_for_stderr(
        "access forbidden by rule, client: 127.0.0.1",
        Duration::from_secs(5)
    ));
}

/// `access_log ... if=COND`: a line only when the condition is neither empty nor "0".
#[test]
fn access_log_if_skips_empty_and_zero() {
    let p = port();
    let log = std::env::temp_dir().join(format!("ringfront-access-if-{p}.log"));
    let _ = std::fs::remove_file(&log);
    let cfg = fill(
        "events {}
http {
    log_format uri '$request_uri';
    server {
        listen 127.0.0.1:{PORT};
        access_log {LOG} uri if=$arg_log;
        location / { return 200 \"ok\"; }
    }
}
",
        &[("PORT", p.to_string()), ("LOG", log.display().to_string())],
    );
    let rf = Ringfront::start(&cfg);
    for path in ["/a?log=1", "/b?log=0", "/c", "/d?log=yes", "/e?log="] {
        assert_eq!(http::get(("127.0.0.1", p), path).status, 200);
    }
    // QUIT flushes the log writer before exiting.
    rf.signal(ringfront_testkit::SIGQUIT);
    assert!(rf.wait_exit(Duration::from_secs(10)).is_some());
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, "/a?log=1\n/d?log=yes\n");
}

/// `internal`: a client's request for such a location gets 404 (as nginx), its siblings are
/// served.
#[test]
fn internal_locations_are_not_found_for_clients() {
    let p = port();
    let cfg = fill(
        "events {}
http {
    server {
        listen 127.0.0.1:{PORT};
        location /private/ { internal; return 200 \"secret\"; }
        location / { return 200 \"public\"; }
    }
}
",
        &[("PORT", p.to_string())],
    );
    let _rf = Ringfront::start(&cfg);
    assert_eq!(http::get(("127.0.0.1", p), "/private/x").status, 404);
    assert_eq!(http::get(("127.0.0.1", p), "/x").text(), "public");
}
