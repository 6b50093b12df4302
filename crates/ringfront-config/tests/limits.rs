//! `limit_req_zone`, `limit_req`, `limit_conn_zone`, `limit_conn` and their settings as the
//! model holds them (zones, milli-request units, inheritance as nginx: a level with any
//! `limit_req` replaces the list) and nginx 1.22's load errors (each message checked
//! against `nginx -t`).

mod common;

use common::{http, parse};
use ringfront_config::{LogLevel, ZoneKind};

#[test]
fn zones_limits_and_inheritance() {
    let cfg = http(
        "limit_req_zone $binary_remote_addr zone=one:1m rate=30r/m;\n\
         limit_req_zone $uri zone=two:64k rate=5r/s;\n\
         limit_conn_zone $binary_remote_addr zone=addr:1m;\n\
         limit_req zone=one burst=5;\n\
         limit_req_status 429;\n\
         server {\n\
          location / {}\n\
          location /b { limit_req zone=two nodelay; limit_req zone=late delay=2; \
                        limit_req_log_level warn; limit_conn addr 3; limit_req_dry_run on; }\n\
         }\n\
         limit_req_zone $host zone=late:32k rate=10;",
    );
    let zones = &cfg.http.limit_zones;
    assert_eq!(zones[0].name, "one");
    assert_eq!(zones[0].kind, ZoneKind::Req { rate: 500 });
    assert_eq!(zones[0].size, 1 << 20);
    assert_eq!(zones[0].key_text, "$binary_remote_addr");
    assert_eq!(zones[1].kind, ZoneKind::Req { rate: 5000 });
    assert_eq!(zones[2].kind, ZoneKind::Conn);
    let root = &cfg.http.servers[0].locations[0].settings.limits;
    assert_eq!(root.req.len(), 1);
    assert_eq!(
        (root.req[0].zone, root.req[0].burst, root.req[0].delay),
        (0, 5000, 0)
    );
    assert_eq!(root.req_status, 429);
    assert_eq!(root.req_log_level, LogLevel::Error);
    assert_eq!(root.req_delay_level(), LogLevel::Warn);
    assert!(root.conn.is_empty());
    assert_eq!(root.conn_status, 503);
    let b = &cfg.http.servers[0].locations[1].settings.limits;
    assert_eq!(b.req.len(), 2, "the location's list replaces the http one");
    assert_eq!(b.req[0].zone, 1);
    assert_eq!(b.req[0].delay, (i64::MAX as u64 / 1000) * 1000);
    // `late` is named before its zone line: it keeps its place and gets the line's rate.
    assert_eq!(zones[b.req[1].zone].name, "late");
    assert_eq!(zones[b.req[1].zone].kind, ZoneKind::Req { rate: 10_000 });
    assert_eq!(b.req[1].delay, 2000);
    assert_eq!(b.req_status, 429, "inherited");
    assert_eq!(b.req_delay_level(), LogLevel::Notice);
    assert!(b.req_dry_run);
    assert_eq!((b.conn[0].zone, b.conn[0].conn), (2, 3));
}

fn error(conf: &str) -> String {
    parse(&format!("events {{}}\nhttp {{\n{conf}\n}}\n"))
        .unwrap_err()
        .to_string()
}

#[test]
fn nginx_load_errors() {
    let at = " in /t/conf/x.conf:3";
    let zone = "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s; ";
    let cases: &[(&str, &str)] = &[
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s sync;",
            "invalid number of arguments in \"limit_req_zone\" directive",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=0r/s;",
            "invalid rate \"rate=0r/s\"",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=fast;",
            "invalid rate \"rate=fast\"",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:10k rate=1r/s;",
            "zone \"zone=one:10k\" is too small",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one rate=1r/s;",
            "invalid zone size \"zone=one\"",
        ),
        (
            "limit_req_zone $binary_remote_addr rate=1r/s x=1;",
            "invalid parameter \"x=1\"",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s; \
             limit_req_zone $uri zone=one:1m rate=1r/s;",
            "limit_req_zone \"one\" is already bound to key \"$binary_remote_addr\"",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s; \
             limit_req_zone $uri zone=one:2m rate=1r/s;",
            "the size 2097152 of shared memory zone \"one\" conflicts with already declared \
             size 1048576",
        ),
        (
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s; \
             limit_conn_zone $uri zone=one:1m;",
            "the shared memory zone \"one\" is already declared for a different use",
        ),
        (
            "limit_req zone=one burst=0;",
            "invalid burst value \"burst=0\"",
        ),
        (
            "limit_req zone=one delay=x;",
            "invalid delay value \"delay=x\"",
        ),
        (
            "limit_req zone=one; limit_req zone=one;",
            "\"limit_req\" directive is duplicate",
        ),
        (
            "limit_req burst=1;",
            "\"limit_req\" must have \"zone\" parameter",
        ),
        ("limit_req zone=one fast;", "invalid parameter \"fast\""),
        ("limit_conn c 0;", "invalid number of connections \"0\""),
        ("limit_conn c 65536;", "connection limit must be less 65536"),
        (
            "limit_conn_zone $binary_remote_addr zone=c:1m; limit_req zone=c;",
            "the shared memory zone \"c\" is already declared for a different use",
        ),
        ("limit_req_status 600;", "value must be between 400 and 599"),
        ("limit_req_log_level debug;", "invalid value \"debug\""),
        (
            "limit_req_zone $binary_remote_addr zone=:1m rate=2r/s;",
            "\"limit_req_zone\" must have \"zone\" parameter",
        ),
        (
            "limit_req_zone $binary_remote_addr rate=1r/s rate=2r/s;",
            "\"limit_req_zone\" must have \"zone\" parameter",
        ),
    ];
    for (conf, want) in cases {
        let conf = match conf.starts_with("limit_req ") {
            true => format!("{zone}{conf}"),
            false => conf.to_string(),
        };
        assert_eq!(error(&conf), format!("{want}{at}"), "{conf}");
    }
    assert_eq!(
        error("limit_req_zone $binary_remote_addr zone=one:1m rate=1r/s; limit_req zone=two;"),
        "zero size shared memory zone \"two\""
    );
    assert_eq!(
        error("limit_conn_zone $binary_remote_addr zone=c:1m; limit_conn c 1; limit_conn c 2;"),
        format!("\"limit_conn\" directive is duplicate{at}")
    );
}
