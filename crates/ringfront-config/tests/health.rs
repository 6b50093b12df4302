//! Health checking (issue 4): `slow_start=`, `passive_health`, nginx Plus `match` /
//! `health_check` / `api`, Tengine `check` / `check_http_send` / `check_http_expect_alive` /
//! `check_keepalive_requests` / `check_status`: the model each gives, and every error with
//! its message and line.

mod common;

use std::time::Duration;

use common::{http, parse, FILE};
use ringfront_config::{
    ActiveCheck, Config, Expect, HeaderOp, HttpProbe, Match, MatchTest, Origin, PassiveHealth,
    Probe, StatusFormat, Upstream,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The error for `http { BODY }` (the body starts on line 3), the file name shortened to `F`.
fn h(body: &str) -> String {
    match parse(&format!("events {{}}\nhttp {{\n{body}\n}}\n")) {
        Ok(_) => panic!("should fail:\n{body}"),
        Err(err) => err.to_string().replace(FILE, "F"),
    }
}

/// Upstream `u` with BODY, used by `location /`.
fn group(body: &str) -> Upstream {
    let cfg = http(&format!(
        "upstream u {{\n{body}\n}}\nserver {{ location / {{ proxy_pass http://u; }} }}"
    ));
    cfg.upstream("u").unwrap().clone()
}

/// `upstream u { server 127.0.0.1; }` and `location / { proxy_pass http://u; LOC }`, with
/// EXTRA at http level after the server.
fn located(loc: &str, extra: &str) -> Config {
    http(&format!(
        "upstream u {{ server 127.0.0.1; }}\nserver {{\n location / {{\n  proxy_pass http://u;\n  {loc}\n }}\n}}\n{extra}"
    ))
}

fn at(line: usize) -> Origin {
    Origin {
        file: FILE.into(),
        line,
    }
}

// ------------------------------------------------------------------------------ slow_start

#[test]
fn slow_start_values() {
    let u = group(
        "server 127.0.0.1 slow_start=30s;\nserver 127.0.0.2 slow_start=500ms;\nserver 127.0.0.3;",
    );
    assert_eq!(u.servers[0].slow_start, secs(30));
    assert_eq!(u.servers[1].slow_start, ms(500));
    assert_eq!(u.servers[2].slow_start, Duration::ZERO, "default: off");
    let u = group("least_conn;\nserver 127.0.0.1 slow_start=1m30s;");
    assert_eq!(u.servers[0].slow_start, secs(90));
    let u = group("server 127.0.0.1 slow_start=10s;\nleast_time header;");
    assert_eq!(u.servers[0].slow_start, secs(10));
    for bad in [
        "slow_start",
        "slow_start=",
        "slow_start=x",
        "slow_start=1y",
        "slow_start=-1",
    ] {
        assert_eq!(
            h(&format!("upstream u {{\n server 127.0.0.1 {bad};\n}}")),
            format!("invalid parameter \"{bad}\" in F:4")
        );
    }
}

#[test]
fn slow_start_refused_with_hash_methods_in_either_order() {
    for method in ["hash $remote_addr;", "ip_hash;", "random;", "random two;"] {
        // The method first: the server line is refused.
        assert_eq!(
            h(&format!(
                "upstream u {{\n {method}\n server 127.0.0.1 weight=2 slow_start=30s;\n}}"
            )),
            "balancing method does not support parameter \"slow_start=30s\" in F:5",
            "{method}"
        );
        // The method after: the method line is refused.
        assert_eq!(
            h(&format!(
                "upstream u {{\n server 127.0.0.1;\n server 127.0.0.2 slow_start=5s;\n {method}\n}}"
            )),
            "balancing method does not support parameter \"slow_start=5s\" in F:6",
            "{method}"
        );
    }
}

// -------------------------------------------------------------------------- passive_health

#[test]
fn passive_health() {
    assert_eq!(
        group("server 127.0.0.1;").passive_health,
        PassiveHealth::Nginx
    );
    assert_eq!(
        group("server 127.0.0.1;\npassive_health nginx;").passive_health,
        PassiveHealth::Nginx
    );
    assert_eq!(
        group("passive_health confirm;\nserver 127.0.0.1;").passive_health,
        PassiveHealth::Confirm
    );
    let cfg = http("server { location / { proxy_pass http://127.0.0.1:9; } }");
    assert_eq!(
        cfg.upstream("127.0.0.1:9").unwrap().passive_health,
        PassiveHealth::Nginx
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1;\n passive_health confirm;\n passive_health nginx;\n}"),
        "\"passive_health\" directive is duplicate in F:6"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1;\n passive_health x;\n}"),
        "invalid value \"x\" in \"passive_health\" directive, it must be \"nginx\" or \"confirm\" in F:5"
    );
    assert_eq!(
        h("passive_health confirm;"),
        "\"passive_health\" directive is not allowed here in F:3"
    );
}

// ------------------------------------------------------------------------------------ match

fn match_of(tests: &str) -> Match {
    let cfg = located("health_check match=m;", &format!("match m {{\n{tests}\n}}"));
    match &cfg.upstream("u").unwrap().checks[0].probe {
        Probe::Http {
            expect: Expect::Match(m),
            ..
        } => m.clone(),
        other => panic!("no match: {other:?}"),
    }
}

#[test]
fn match_tests() {
    let status = |negate, ranges: &[(u16, u16)]| MatchTest::Status {
        negate,
        ranges: ranges.to_vec(),
    };
    let header = |name: &str, op| MatchTest::Header {
        name: name.into(),
        op,
    };
    let m = match_of(
        "status 200;\n status ! 500;\n status 200 204;\n status 200-399;\n status ! 400-599;\n \
         status 301-303 307;\n\
         header Content-Type = text/html;\n header Content-Type != text/html;\n \
         header Connection ~ close;\n header Connection !~ close;\n header Host;\n \
         header ! X-Accel-Redirect;\n\
         body ~ \"Welcome to nginx!\";\n body !~ \"Welcome\";",
    );
    assert_eq!(m.name, "m");
    assert_eq!(
        m.tests,
        vec![
            status(false, &[(200, 200)]),
            status(true, &[(500, 500)]),
            status(false, &[(200, 200), (204, 204)]),
            status(false, &[(200, 399)]),
            status(true, &[(400, 599)]),
            status(false, &[(301, 303), (307, 307)]),
            header("Content-Type", HeaderOp::Equals("text/html".into())),
            header("Content-Type", HeaderOp::NotEquals("text/html".into())),
            header("Connection", HeaderOp::Matches("close".into())),
            header("Connection", HeaderOp::NotMatches("close".into())),
            header("Host", HeaderOp::Present),
            header("X-Accel-Redirect", HeaderOp::Absent),
            MatchTest::Body {
                negate: false,
                regex: "Welcome to nginx!".into()
            },
            MatchTest::Body {
                negate: true,
                regex: "Welcome".into()
            },
        ]
    );
    assert!(match_of("").tests.is_empty(), "an empty match is valid");
}

#[test]
fn match_errors() {
    // `match m {` is on line 3, its first test on line 4.
    let m = |tests: &str| h(&format!("match m {{\n{tests}\n}}"));
    for bad in ["99", "600", "2xx", "-1", "200-", "-200", "399-200"] {
        assert_eq!(
            m(&format!("status {bad};")),
            format!("invalid status \"{bad}\" in F:4"),
            "{bad}"
        );
    }
    assert_eq!(m("status 200 ! 500;"), "invalid status \"!\" in F:4");
    assert_eq!(
        m("status;"),
        "invalid number of arguments in \"status\" directive in F:4"
    );
    assert_eq!(
        m("status !;"),
        "invalid number of arguments in \"status\" directive in F:4"
    );
    assert_eq!(
        m("header;"),
        "invalid number of arguments in \"header\" directive in F:4"
    );
    assert_eq!(
        m("header !;"),
        "invalid number of arguments in \"header\" directive in F:4"
    );
    assert_eq!(
        m("header A = b c;"),
        "invalid number of arguments in \"header\" directive in F:4"
    );
    assert_eq!(m("header A b;"), "invalid parameter \"b\" in F:4");
    assert_eq!(m("header A == b;"), "invalid parameter \"==\" in F:4");
    assert_eq!(m("header ! !;"), "invalid parameter \"!\" in F:4");
    assert_eq!(
        m("header A ~ \"(\";"),
        "invalid regular expression \"(\": unclosed group in F:4"
    );
    assert_eq!(
        m("body ~ \"[\";"),
        "invalid regular expression \"[\": unclosed character class in F:4"
    );
    assert_eq!(m("body = x;"), "invalid parameter \"=\" in F:4");
    assert_eq!(
        m("body ~;"),
        "invalid number of arguments in \"body\" directive in F:4"
    );
    assert_eq!(
        m("status 200;\nrequire $x;"),
        "\"require\" is not supported yet in F:5"
    );
    assert_eq!(m("code 200;"), "unknown directive \"code\" in F:4");
    assert_eq!(
        m("status 200 { }"),
        "directive \"status\" is not terminated by \";\" in F:4"
    );
    assert_eq!(
        h("match m { status 200; }\nmatch m { status 204; }"),
        "duplicate match \"m\" in F:4"
    );
    assert_eq!(
        h("match m;"),
        "directive \"match\" has no opening \"{\" in F:3"
    );
    assert_eq!(
        h("server {\n match m { }\n}"),
        "\"match\" directive is not allowed here in F:4"
    );
}

// ----------------------------------------------------------------------------- health_check

fn checks(cfg: &Config, group: &str) -> Vec<ActiveCheck> {
    cfg.upstream(group).unwrap().checks.clone()
}

#[test]
fn health_check_defaults() {
    let cfg = located("health_check;", "");
    let c = &checks(&cfg, "u")[0];
    assert_eq!(
        *c,
        ActiveCheck {
            interval: secs(5),
            jitter: Duration::ZERO,
            fails: 1,
            passes: 1,
            connect_timeout: secs(60),
            read_timeout: secs(60),
            port: None,
            probe: Probe::Http {
                request: HttpProbe::Uri("/".into()),
                expect: Expect::Default,
            },
            mandatory: false,
            persistent: false,
            tls: None,
            origin: at(7),
        }
    );
    // The location itself has no health-check settings of its own in the model.
    assert!(group("server 127.0.0.1;").checks.is_empty());
}

#[test]
fn health_check_parameters() {
    let cfg = located(
        "proxy_connect_timeout 2s;\n proxy_read_timeout 700ms;\n \
         health_check interval=10s jitter=500ms fails=3 passes=2 uri=/health?x=1 port=8081 \
         mandatory persistent match=ok;",
        "match ok { status 200-299; }",
    );
    let c = &checks(&cfg, "u")[0];
    assert_eq!(
        (c.interval, c.jitter, c.fails, c.passes, c.port),
        (secs(10), ms(500), 3, 2, Some(8081))
    );
    assert_eq!((c.connect_timeout, c.read_timeout), (secs(2), ms(700)));
    assert!(c.mandatory && c.persistent);
    let Probe::Http { request, expect } = &c.probe else {
        panic!("http probe");
    };
    assert_eq!(*request, HttpProbe::Uri("/health?x=1".into()));
    let Expect::Match(m) = expect else {
        panic!("match");
    };
    assert_eq!(m.name, "ok");
    assert_eq!(m.origin, at(12), "the match block is defined after its use");
    let cfg = located("health_check mandatory;", "");
    let c = &checks(&cfg, "u")[0];
    assert!(c.mandatory && !c.persistent);
}

#[test]
fn health_check_timeouts_are_inherited_settings() {
    let cfg = http(
        "proxy_connect_timeout 3s;\nupstream u { server 127.0.0.1; }\n\
         server {\n proxy_read_timeout 4s;\n location / { proxy_pass http://u; health_check; }\n}",
    );
    let c = &checks(&cfg, "u")[0];
    assert_eq!((c.connect_timeout, c.read_timeout), (secs(3), secs(4)));
}

#[test]
fn several_health_checks_and_implicit_groups() {
    let cfg = http(
        "upstream u { server 127.0.0.1; }\nserver {\n\
         location / { proxy_pass http://u; health_check; health_check uri=/b; }\n\
         location /x { proxy_pass http://u/x/; health_check uri=/c; }\n\
         location /i { proxy_pass http://backend.test:8080; health_check interval=1s; }\n\
         location /j { proxy_pass http://BACKEND.test:8080; health_check interval=2s; }\n\
         location /n { proxy_pass http://127.0.0.1:9; }\n}",
    );
    let uris: Vec<_> = checks(&cfg, "u")
        .iter()
        .map(|c| match &c.probe {
            Probe::Http {
                request: HttpProbe::Uri(u),
                ..
            } => u.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(uris, ["/", "/b", "/c"]);
    let implicit = checks(&cfg, "backend.test:8080");
    assert_eq!(
        implicit.iter().map(|c| c.interval).collect::<Vec<_>>(),
        [secs(1), secs(2)],
        "both proxy_pass lines name the same implicit group"
    );
    assert_eq!(implicit[0].origin, at(7));
    assert!(checks(&cfg, "127.0.0.1:9").is_empty());
}

#[test]
fn tengine_and_nginx_plus_checks_add_up() {
    let cfg = http(
        "upstream u {\n server 127.0.0.1;\n check interval=1000;\n}\n\
         server { location / { proxy_pass http://u; health_check; } }",
    );
    let c = checks(&cfg, "u");
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].probe, Probe::Tcp);
    assert!(matches!(c[1].probe, Probe::Http { .. }));
}

#[test]
fn health_check_errors() {
    // `location / {` is on line 4, the health_check line on line 5.
    let hc = |line: &str| {
        h(&format!(
            "upstream u {{ server 127.0.0.1; }}\nserver {{ location / {{\n proxy_pass http://u;\n {line}\n}} }}"
        ))
    };
    let e = |line: &str| hc(line).replace(" in F:6", "");
    for bad in [
        "interval",
        "interval=",
        "interval=0",
        "interval=x",
        "interval=1y",
        "jitter=x",
        "fails=0",
        "fails=x",
        "fails=4294967296",
        "passes=0",
        "passes=-1",
        "uri",
        "uri=",
        "port=0",
        "port=65536",
        "port=x",
        "match",
        "match=",
        "mandatory=1",
        "persistent=on",
        "type=http",
        "type=tcp",
        "foo",
        "foo=bar",
    ] {
        assert_eq!(
            e(&format!("health_check {bad};")),
            format!("invalid parameter \"{bad}\""),
            "{bad}"
        );
    }
    assert_eq!(
        e("health_check \"uri=/a b\";"),
        "invalid parameter \"uri=/a b\""
    );
    assert_eq!(
        e("health_check \"uri=/a\\r\\nHost:x\";"),
        "invalid parameter \"uri=/a\r\nHost:x\""
    );
    assert_eq!(
        e("health_check persistent;"),
        "\"persistent\" parameter requires \"mandatory\""
    );
    assert_eq!(
        e("health_check type=grpc;"),
        "\"type=grpc\" parameter is not supported yet"
    );
    for p in ["grpc_service=a.B", "grpc_status=12", "keepalive_time=60s"] {
        let key = p.split('=').next().unwrap();
        assert_eq!(
            e(&format!("health_check {p};")),
            format!("\"{key}\" parameter is not supported yet")
        );
    }
    assert_eq!(
        hc("health_check match=nope;"),
        "match \"nope\" not found in F:6"
    );
    assert_eq!(
        h("upstream u { server 127.0.0.1; }\nserver {\n location / {\n  health_check;\n }\n}"),
        "\"health_check\" requires \"proxy_pass\" in the same location in F:6"
    );
    assert_eq!(
        h("upstream u { server 127.0.0.1; }\nserver {\n location / {\n  proxy_pass http://u;\n  location /a {\n   health_check;\n  }\n }\n}"),
        "\"health_check\" requires \"proxy_pass\" in the same location in F:8",
        "proxy_pass is not inherited by a nested location"
    );
    assert_eq!(
        h("server {\n health_check;\n}"),
        "\"health_check\" directive is not allowed here in F:4"
    );
}

// ------------------------------------------------------------------------- Tengine `check`

fn tengine(check: &str) -> ActiveCheck {
    let u = group(&format!("server 127.0.0.1;\n{check}"));
    assert_eq!(u.checks.len(), 1);
    u.checks[0].clone()
}

#[test]
fn tengine_check_defaults() {
    let c = tengine("check interval=3000;");
    assert_eq!(
        c,
        ActiveCheck {
            interval: ms(3000),
            jitter: Duration::ZERO,
            fails: 5,
            passes: 2,
            connect_timeout: ms(1000),
            read_timeout: ms(1000),
            port: None,
            probe: Probe::Tcp,
            mandatory: true,
            persistent: false,
            tls: None,
            origin: at(5),
        }
    );
    let c = tengine("check rise=1;");
    assert_eq!(c.interval, ms(30_000));
    let c = tengine("check type=http;");
    assert_eq!(
        c.probe,
        Probe::Http {
            request: HttpProbe::Raw(b"GET / HTTP/1.0\r\n\r\n".to_vec()),
            expect: Expect::Classes(0b1100),
        }
    );
}

#[test]
fn tengine_check_parameters() {
    let c = tengine(
        "check interval=3000 rise=3 fall=4 timeout=1500 type=http default_down=false port=8080;\n\
         check_http_send \"HEAD /health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\";\n\
         check_http_expect_alive http_2xx HTTP_4XX http_5xx http_2xx;\n\
         check_keepalive_requests 1;",
    );
    assert_eq!(
        (
            c.interval,
            c.passes,
            c.fails,
            c.connect_timeout,
            c.read_timeout
        ),
        (ms(3000), 3, 4, ms(1500), ms(1500))
    );
    assert_eq!(
        (c.mandatory, c.persistent, c.port),
        (false, false, Some(8080))
    );
    assert_eq!(
        c.probe,
        Probe::Http {
            request: HttpProbe::Raw(b"HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
            expect: Expect::Classes((1 << 2) | (1 << 4) | (1 << 5)),
        }
    );
    // Times with a unit, and the directives in any order within the block.
    let c = tengine(
        "check_http_expect_alive http_3xx;\ncheck interval=2s timeout=250ms type=http default_down=TRUE;",
    );
    assert_eq!((c.interval, c.connect_timeout), (secs(2), ms(250)));
    assert!(c.mandatory);
    assert_eq!(
        c.probe,
        Probe::Http {
            request: HttpProbe::Raw(b"GET / HTTP/1.0\r\n\r\n".to_vec()),
            expect: Expect::Classes(1 << 3),
        }
    );
    assert_eq!(
        tengine("check type=tcp default_down=false;").probe,
        Probe::Tcp
    );
}

#[test]
fn tengine_check_errors() {
    // `server` is on line 4, the first line of BODY on line 5.
    let u = |body: &str| h(&format!("upstream u {{\n server 127.0.0.1;\n{body}\n}}"));
    for bad in [
        "interval=0",
        "interval=x",
        "interval=",
        "timeout=0",
        "rise=0",
        "fall=x",
        "port=0",
        "port=70000",
        "type=udp",
        "type=",
        "interval",
        "http",
        "foo=1",
    ] {
        assert_eq!(
            u(&format!("check {bad};")),
            format!("invalid parameter \"{bad}\" in F:5"),
            "{bad}"
        );
    }
    assert_eq!(
        u("check default_down=maybe;"),
        "invalid value \"default_down=maybe\", it must be \"true\" or \"false\" in F:5"
    );
    for t in ["ssl_hello", "mysql", "ajp", "fastcgi"] {
        assert_eq!(
            u(&format!("check type={t};")),
            format!("\"type={t}\" is not supported yet in F:5")
        );
    }
    assert_eq!(
        u("check unique=true;"),
        "\"unique\" parameter is not supported yet in F:5"
    );
    assert_eq!(
        u("check;"),
        "invalid number of arguments in \"check\" directive in F:5"
    );
    assert_eq!(
        u("check interval=1000;\ncheck interval=2000;"),
        "\"check\" directive is duplicate in F:6"
    );
    assert_eq!(
        u("check_http_send \"GET / HTTP/1.0\\r\\n\\r\\n\";"),
        "\"check_http_send\" requires \"check ... type=http\" in the same upstream in F:5"
    );
    assert_eq!(
        u("check interval=1000;\ncheck_http_expect_alive http_2xx;\ncheck_http_send x;"),
        "\"check_http_expect_alive\" requires \"check ... type=http\" in the same upstream in F:6"
    );
    assert_eq!(
        u("check type=tcp;\ncheck_http_send x;"),
        "\"check_http_send\" requires \"check ... type=http\" in the same upstream in F:6"
    );
    assert_eq!(
        u("check type=http;\ncheck_http_send \"\";"),
        "\"check_http_send\" directive invalid value in F:6"
    );
    assert_eq!(
        u("check type=http;\ncheck_http_send a;\ncheck_http_send b;"),
        "\"check_http_send\" directive is duplicate in F:7"
    );
    assert_eq!(
        u("check type=http;\ncheck_http_expect_alive http_2xx http_6xx;"),
        "invalid value \"http_6xx\" in F:6"
    );
    assert_eq!(
        u("check type=http;\ncheck_http_expect_alive http_2xx;\ncheck_http_expect_alive http_3xx;"),
        "\"check_http_expect_alive\" directive is duplicate in F:7"
    );
    assert_eq!(
        u("check_keepalive_requests 100;"),
        "\"check_keepalive_requests\" other than 1 is not supported yet in F:5"
    );
    assert_eq!(
        u("check_keepalive_requests x;"),
        "\"check_keepalive_requests\" directive invalid number in F:5"
    );
    assert_eq!(
        u("check_keepalive_requests 1;\ncheck_keepalive_requests 1;"),
        "\"check_keepalive_requests\" directive is duplicate in F:6"
    );
    assert_eq!(
        h("check interval=1000;"),
        "\"check\" directive is not allowed here in F:3"
    );
    assert_eq!(
        h("server {\n location / {\n  check interval=1000;\n }\n}"),
        "\"check\" directive is not allowed here in F:5"
    );
}

// ------------------------------------------------------------------------ check_status, api

fn page(loc: &str) -> Config {
    http(&format!(
        "server {{\n location /status {{\n  {loc}\n  location /status/inner {{ }}\n }}\n location / {{ }}\n}}"
    ))
}

#[test]
fn check_status_and_api() {
    for (written, format) in [
        ("check_status;", StatusFormat::Html),
        ("check_status html;", StatusFormat::Html),
        ("check_status csv;", StatusFormat::Csv),
        ("check_status json;", StatusFormat::Json),
        ("check_status prometheus;", StatusFormat::Prometheus),
    ] {
        let cfg = page(written);
        let status = &cfg.http.servers[0].locations[0];
        assert_eq!(status.settings.check_status, Some(format), "{written}");
        assert!(!status.settings.api);
        assert_eq!(
            status.locations[0].settings.check_status, None,
            "not inherited by a nested location"
        );
        assert_eq!(cfg.http.servers[0].locations[1].settings.check_status, None);
        assert_eq!(cfg.http.servers[0].settings.check_status, None);
    }
    for (written, write) in [
        ("api;", false),
        ("api write=off;", false),
        ("api write=on;", true),
    ] {
        let cfg = page(written);
        let loc = &cfg.http.servers[0].locations[0];
        assert!(loc.settings.api, "{written}");
        assert_eq!(loc.settings.api_write, write, "{written}");
        assert!(!loc.locations[0].settings.api_write, "not inherited");
        assert_eq!(loc.settings.check_status, None);
        assert!(!loc.locations[0].settings.api, "not inherited");
        assert!(!cfg.http.servers[0].locations[1].settings.api);
    }
}

#[test]
fn check_status_and_api_errors() {
    // The directive is on line 5.
    let e = |loc: &str| {
        h(&format!(
            "upstream u {{ server 127.0.0.1; }}\nserver {{ location /s {{\n {loc}\n}} }}"
        ))
    };
    assert_eq!(
        e("check_status xml;"),
        "invalid check format \"xml\" in F:5"
    );
    assert_eq!(
        e("check_status HTML;"),
        "invalid check format \"HTML\" in F:5"
    );
    assert_eq!(
        e("check_status;\ncheck_status json;"),
        "\"check_status\" directive is duplicate in F:6"
    );
    assert_eq!(
        e("check_status html json;"),
        "invalid number of arguments in \"check_status\" directive in F:5"
    );
    assert_eq!(
        e("api write=yes;"),
        "invalid parameter \"write=yes\" in F:5"
    );
    assert_eq!(e("api on;"), "invalid parameter \"on\" in F:5");
    assert_eq!(e("api;\napi;"), "\"api\" directive is duplicate in F:6");
    assert_eq!(
        e("check_status;\nproxy_pass http://u;"),
        "\"check_status\" and \"proxy_pass\" cannot be in the same location: only one of them can answer its requests in F:5"
    );
    assert_eq!(
        e("return 200;\ncheck_status;"),
        "\"check_status\" and \"return\" cannot be in the same location: only one of them can answer its requests in F:6"
    );
    assert_eq!(
        e("api;\nproxy_pass http://u;"),
        "\"api\" and \"proxy_pass\" cannot be in the same location: only one of them can answer its requests in F:5"
    );
    assert_eq!(
        e("api;\nreturn 404;"),
        "\"api\" and \"return\" cannot be in the same location: only one of them can answer its requests in F:5"
    );
    assert_eq!(
        e("check_status;\napi;"),
        "\"api\" and \"check_status\" cannot be in the same location: only one of them can answer its requests in F:6"
    );
    // stub_status: nginx's `on` argument or none.
    assert_eq!(e("stub_status off;"), "invalid parameter \"off\" in F:5");
    assert_eq!(
        e("stub_status;\nstub_status;"),
        "\"stub_status\" directive is duplicate in F:6"
    );
    assert_eq!(
        e("stub_status;\nproxy_pass http://u;"),
        "\"stub_status\" and \"proxy_pass\" cannot be in the same location: only one of them can answer its requests in F:5"
    );
    assert_eq!(
        e("stub_status;\ncheck_status;"),
        "\"stub_status\" and \"check_status\" cannot be in the same location: only one of them can answer its requests in F:5"
    );
    assert_eq!(
        h("server {\n check_status;\n}"),
        "\"check_status\" directive is not allowed here in F:4"
    );
    assert_eq!(h("api;"), "\"api\" directive is not allowed here in F:3");
}

#[test]
fn check_status_beside_a_proxied_nested_location() {
    let cfg = http(
        "upstream u { server 127.0.0.1; }\nserver {\n location /s {\n  check_status json;\n  \
         location /s/p { proxy_pass http://u; health_check; }\n }\n}",
    );
    let s = &cfg.http.servers[0].locations[0];
    assert_eq!(s.settings.check_status, Some(StatusFormat::Json));
    assert!(s.locations[0].settings.proxy_pass.is_some());
    assert_eq!(cfg.upstream("u").unwrap().checks.len(), 1);
}
