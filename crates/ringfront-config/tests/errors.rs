//! Every error message form, worded as nginx words it and placed `in FILE:LINE`.

mod common;

use common::{parse, FILE};

/// The error for `text`, with the test file name shortened to `F`.
fn e(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("should fail:\n{text}"),
        Err(err) => err.to_string().replace(FILE, "F"),
    }
}

/// The error for `http { BODY }` (the body starts on line 3).
fn h(body: &str) -> String {
    e(&format!("events {{}}\nhttp {{\n{body}\n}}\n"))
}

#[test]
fn syntax() {
    assert_eq!(e("events {}\n}\n"), "unexpected \"}\" in F:2");
    assert_eq!(
        e("events {}\nhttp {\n  server"),
        "unexpected end of file, expecting \";\" or \"}\" in F:3"
    );
    assert_eq!(
        e("events {\n"),
        "unexpected end of file, expecting \"}\" in F:2"
    );
    assert_eq!(e("events {}\n;"), "unexpected \";\" in F:2");
    assert_eq!(
        e("events {}\nworker_processes \"1\"x;"),
        "unexpected \"x\" in F:2"
    );
}

#[test]
fn table() {
    assert_eq!(e("events {}\nfoo bar;"), "unknown directive \"foo\" in F:2");
    assert_eq!(
        h("server {\n proxy_pass http://a;\n}"),
        "\"proxy_pass\" directive is not allowed here in F:4"
    );
    assert_eq!(
        h("listen 80;"),
        "\"listen\" directive is not allowed here in F:3"
    );
    assert_eq!(
        h("server {\n listen;\n}"),
        "invalid number of arguments in \"listen\" directive in F:4"
    );
    assert_eq!(
        e("events {}\nhttp;"),
        "directive \"http\" has no opening \"{\" in F:2"
    );
    assert_eq!(
        h("server_tokens off { }"),
        "directive \"server_tokens\" is not terminated by \";\" in F:3"
    );
    assert_eq!(
        e("worker_processes 1;\nworker_processes 2;\nevents {}"),
        "\"worker_processes\" directive is duplicate in F:2"
    );
    assert_eq!(
        e("events {}\nevents {}"),
        "\"events\" directive is duplicate in F:2"
    );
    assert_eq!(
        e("events {}\nhttp {}\nhttp {}"),
        "\"http\" directive is duplicate in F:3"
    );
    assert_eq!(
        h("proxy_read_timeout 1s;\nproxy_read_timeout 2s;"),
        "\"proxy_read_timeout\" directive is duplicate in F:4"
    );
}

#[test]
fn no_events_section_has_no_place() {
    assert_eq!(e("http {}"), "no \"events\" section in configuration");
    let err = parse("").unwrap_err();
    assert_eq!((err.file, err.line), (None, None));
}

#[test]
fn values() {
    assert_eq!(
        e("daemon yes;\nevents {}"),
        "invalid value \"yes\" in \"daemon\" directive, it must be \"on\" or \"off\" in F:1"
    );
    assert_eq!(
        e("worker_processes x;\nevents {}"),
        "\"worker_processes\" directive invalid value in F:1"
    );
    assert_eq!(
        e("events {\n worker_connections x;\n}"),
        "invalid number \"x\" in F:2"
    );
    assert_eq!(
        h("proxy_read_timeout 1x;"),
        "\"proxy_read_timeout\" directive invalid value in F:3"
    );
    assert_eq!(
        h("proxy_connect_timeout 1y;"),
        "\"proxy_connect_timeout\" directive invalid value in F:3"
    );
    assert_eq!(
        h("client_max_body_size 1t;"),
        "\"client_max_body_size\" directive invalid value in F:3"
    );
    assert_eq!(
        h("keepalive_requests -1;"),
        "\"keepalive_requests\" directive invalid number in F:3"
    );
    assert_eq!(
        h("max_headers x;"),
        "\"max_headers\" directive invalid number in F:3"
    );
    assert_eq!(h("proxy_http_version 2.0;"), "invalid value \"2.0\" in F:3");
    assert_eq!(
        h("proxy_next_upstream error http_418;"),
        "invalid value \"http_418\" in F:3"
    );
    assert_eq!(
        h("proxy_next_upstream Http_418;"),
        "invalid value \"Http_418\" in F:3"
    );
    assert_eq!(
        h("proxy_next_upstream;"),
        "invalid number of arguments in \"proxy_next_upstream\" directive in F:3"
    );
    assert_eq!(
        h("proxy_next_upstream_tries x;"),
        "\"proxy_next_upstream_tries\" directive invalid number in F:3"
    );
    assert_eq!(
        h("proxy_next_upstream_tries -1;"),
        "\"proxy_next_upstream_tries\" directive invalid number in F:3"
    );
    assert_eq!(
        h("proxy_next_upstream_tries 1 2;"),
        "invalid number of arguments in \"proxy_next_upstream_tries\" directive in F:3"
    );
    assert_eq!(
        h("proxy_next_upstream_timeout 1y;"),
        "\"proxy_next_upstream_timeout\" directive invalid value in F:3"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_next_upstream_tries 4;\n  proxy_next_upstream_tries 5;\n }\n}"),
        "\"proxy_next_upstream_tries\" directive is duplicate in F:6"
    );
    assert_eq!(
        h("large_client_header_buffers 0 8k;"),
        "\"large_client_header_buffers\" directive invalid value in F:3"
    );
    assert_eq!(
        e("worker_cpu_affinity 0102;\nevents {}"),
        "invalid character \"2\" in \"worker_cpu_affinity\" in F:1"
    );
    assert_eq!(
        e("error_log stderr loud;\nevents {}"),
        "invalid log level \"loud\" in F:1"
    );
    assert_eq!(
        h("sendfile maybe;"),
        "invalid value \"maybe\" in \"sendfile\" directive, it must be \"on\" or \"off\" in F:3"
    );
}

#[test]
fn upstream_servers() {
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 weight=x;\n}"),
        "invalid parameter \"weight=x\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 weight=0;\n}"),
        "invalid parameter \"weight=0\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 fail_timeout=5ms;\n}"),
        "invalid parameter \"fail_timeout=5ms\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 heavy;\n}"),
        "invalid parameter \"heavy\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server bad.invalid:80;\n}"),
        "host not found in upstream \"bad.invalid:80\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1:99999;\n}"),
        "invalid port in upstream \"127.0.0.1:99999\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 drain=1;\n}"),
        "invalid parameter \"drain=1\" in F:4"
    );
    // `resolve` (nginx 1.27.3): a zone and a resolver are required.
    assert_eq!(
        h("upstream u {\n server a.test resolve;\n}"),
        "resolving names at run time requires upstream \"u\" in F:3 to be in shared memory"
    );
    assert_eq!(
        h("upstream u {\n zone z 64k;\n server a.test resolve;\n}"),
        "no resolver defined to resolve names at run time in upstream \"u\" in F:3"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 service=http;\n}"),
        "service upstream \"127.0.0.1\" requires \"resolve\" parameter in F:4"
    );
    for bad in [
        "max_conns",
        "max_conns=",
        "max_conns=x",
        "max_conns=-1",
        "max_conns=+5",
    ] {
        assert_eq!(
            h(&format!("upstream u {{\n server 127.0.0.1 {bad};\n}}")),
            format!("invalid parameter \"{bad}\" in F:4")
        );
    }
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 max_conns=9223372036854775808;\n}"),
        "invalid parameter \"max_conns=9223372036854775808\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n}"),
        "no servers are inside upstream in F:4"
    );
    assert_eq!(
        h("upstream u { server 127.0.0.1; }\nupstream U { server 127.0.0.1; }"),
        "duplicate upstream \"U\" in F:4"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1 backup;\n server 127.0.0.2 backup;\n}"),
        "no servers in upstream \"u\" in F:3",
        "only backups: placed at the upstream line"
    );
    assert_eq!(
        h("upstream u {\n server 127.0.0.1;\n keepalive x;\n}"),
        "invalid value \"x\" in \"keepalive\" directive in F:5"
    );
}

/// `upstream u {` is line 3, so its first inner line is line 4.
fn u(body: &str) -> String {
    h(&format!("upstream u {{\n{body}\n}}"))
}

#[test]
fn balancing_methods() {
    for name in [
        "ip_hash",
        "least_conn",
        "hash",
        "random",
        "least_time",
        "fair",
        "zone",
    ] {
        assert_eq!(
            h(&format!("{name} x;")),
            format!("\"{name}\" directive is not allowed here in F:3")
        );
    }
    assert_eq!(
        h("all_failed revive;"),
        "\"all_failed\" directive is not allowed here in F:3"
    );
    for (body, name) in [
        ("ip_hash x;", "ip_hash"),
        ("least_conn x;", "least_conn"),
        ("hash;", "hash"),
        ("hash $remote_addr consistent x;", "hash"),
        ("random two least_conn x;", "random"),
        ("least_time;", "least_time"),
        ("least_time header inflight x;", "least_time"),
        ("fair no_rr;", "fair"),
        ("all_failed;", "all_failed"),
        ("all_failed reject revive;", "all_failed"),
    ] {
        assert_eq!(
            u(&format!("{body}\nserver 127.0.0.1;")),
            format!("invalid number of arguments in \"{name}\" directive in F:4"),
            "{body}"
        );
    }
    for (body, param) in [
        ("hash $remote_addr foo;", "foo"),
        ("hash $remote_addr Consistent;", "Consistent"),
        ("random foo;", "foo"),
        ("random least_conn;", "least_conn"),
        ("random two foo;", "foo"),
        ("least_time body;", "body"),
        ("least_time header foo;", "foo"),
        ("least_time inflight;", "inflight"),
    ] {
        assert_eq!(
            u(&format!("{body}\nserver 127.0.0.1;")),
            format!("invalid parameter \"{param}\" in F:4"),
            "{body}"
        );
    }
    // nginx checks `consistent` at once but unknown variables only at the end; ringfront
    // checks variables where they are written (with a place).
    assert_eq!(
        u("hash $foo;\nserver 127.0.0.1;"),
        "unknown \"foo\" variable in F:4"
    );
    assert_eq!(
        u("hash $foo bar;\nserver 127.0.0.1;"),
        "invalid parameter \"bar\" in F:4"
    );
    assert_eq!(
        u("all_failed retry;\nserver 127.0.0.1;"),
        "invalid value \"retry\" in \"all_failed\" directive, it must be \"reject\" or \"revive\" in F:4"
    );
    assert_eq!(
        u("all_failed reject;\nall_failed revive;\nserver 127.0.0.1;"),
        "\"all_failed\" directive is duplicate in F:5"
    );
}

#[test]
fn backup_needs_a_method_that_allows_it() {
    let message = "balancing method does not support parameter \"backup\" in F:5";
    for method in [
        "ip_hash;",
        "hash $remote_addr;",
        "hash $uri consistent;",
        "random;",
        "random two;",
    ] {
        assert_eq!(
            u(&format!(
                "{method}\nserver 127.0.0.1 backup;\nserver 127.0.0.2;"
            )),
            message,
            "{method}"
        );
    }
    // The method in force when the server line is read counts (nginx keeps the last one).
    assert_eq!(
        u("least_conn;\nip_hash;\nserver 127.0.0.1 backup;\nserver 127.0.0.2;"),
        "balancing method does not support parameter \"backup\" in F:6"
    );
    // The parameters are read in order: an earlier bad one is reported first.
    assert_eq!(
        u("ip_hash;\nserver 127.0.0.1 weight=0 backup;"),
        "invalid parameter \"weight=0\" in F:5"
    );
}

#[test]
fn zones() {
    assert_eq!(
        u("zone;\nserver 127.0.0.1;"),
        "invalid number of arguments in \"zone\" directive in F:4"
    );
    assert_eq!(
        u("zone a 64k b;\nserver 127.0.0.1;"),
        "invalid number of arguments in \"zone\" directive in F:4"
    );
    assert_eq!(
        u("zone \"\" 64k;\nserver 127.0.0.1;"),
        "invalid zone name \"\" in F:4"
    );
    assert_eq!(
        u("zone z foo;\nserver 127.0.0.1;"),
        "invalid zone size \"foo\" in F:4"
    );
    assert_eq!(
        u("zone z 0;\nserver 127.0.0.1;"),
        "zone \"z\" is too small in F:4"
    );
    assert_eq!(
        u("zone z 31k;\nserver 127.0.0.1;"),
        "zone \"z\" is too small in F:4"
    );
    assert_eq!(
        h("upstream u {\n zone z 64k;\n server 127.0.0.1;\n}\nupstream v {\n zone z 128k;\n server 127.0.0.1;\n}"),
        "the size 131072 of shared memory zone \"z\" conflicts with already declared size 65536 in F:8"
    );
    // A zone no line gives a size to: found when the configuration is complete, no place.
    assert_eq!(
        u("zone z;\nserver 127.0.0.1;"),
        "zero size shared memory zone \"z\""
    );
    assert_eq!(
        h("upstream u {\n zone z;\n server 127.0.0.1;\n}\nupstream v {\n zone y 64k;\n zone y;\n server 127.0.0.1;\n}"),
        "zero size shared memory zone \"z\""
    );
    // ...and after the missing events block, as nginx checks them.
    assert_eq!(
        e("http {\nupstream u {\n zone z;\n server 127.0.0.1;\n}\n}"),
        "no \"events\" section in configuration"
    );
}

#[test]
fn proxy_pass() {
    assert_eq!(
        h("server {\n location / {\n  proxy_pass http://bad.invalid;\n }\n}"),
        "host not found in upstream \"bad.invalid\" in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_pass https://bad.invalid;\n }\n}"),
        "host not found in upstream \"bad.invalid\" in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_pass ftp://a;\n }\n}"),
        "invalid URL prefix in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_pass http://a:0;\n }\n}"),
        "invalid port in upstream \"a:0\" in F:5"
    );
    assert_eq!(
        h("upstream u {\n server unix:;\n}"),
        "no path in the unix domain socket in upstream \"unix:\" in F:4"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_pass https://unix:/tmp/s;\n }\n}"),
        "\"proxy_pass https://unix:\" is not supported by ringfront in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_bind 127.0.0.1 transparent x;\n }\n}"),
        "invalid number of arguments in \"proxy_bind\" directive in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_bind 127.0.0.1 x;\n }\n}"),
        "invalid parameter \"x\" in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_bind localhost;\n }\n}"),
        "invalid address \"localhost\" in F:5"
    );
    assert_eq!(
        h("server {\n proxy_bind off;\n proxy_bind off;\n}"),
        "\"proxy_bind\" directive is duplicate in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_pass http://$host;\n  health_check;\n }\n}"),
        "\"health_check\" with variables in \"proxy_pass\" is not supported by ringfront in F:6"
    );
    assert_eq!(
        h("upstream u { server 127.0.0.1; }\nserver {\n location / {\n  proxy_pass http://u:8080;\n }\n}"),
        "upstream \"u\" may not have port 8080 in F:6"
    );
    assert_eq!(
        h("server {\n location ~ ^/a {\n  proxy_pass http://127.0.0.1/x;\n }\n}"),
        "\"proxy_pass\" cannot have URI part in location given by regular expression, or inside named location, \
         or inside \"if\" statement, or inside \"limit_except\" block in F:5"
    );
    assert_eq!(
        h("server {\n location / {\n  proxy_pass http://127.0.0.1;\n  proxy_pass http://127.0.0.1;\n }\n}"),
        "\"proxy_pass\" directive is duplicate in F:6"
    );
}

#[test]
fn listen() {
    assert_eq!(
        h("server {\n listen bad:80;\n}"),
        "host not found in \"bad:80\" of the \"listen\" directive in F:4"
    );
    assert_eq!(
        h("server {\n listen 127.0.0.1:99999;\n}"),
        "invalid port in \"127.0.0.1:99999\" of the \"listen\" directive in F:4"
    );
    assert_eq!(
        h("server {\n listen [::]:80 ipv6only=of;\n}"),
        "invalid ipv6only flags \"of\" in F:4"
    );
    assert_eq!(
        h("server {\n listen 80 fastopen=x;\n}"),
        "invalid fastopen \"fastopen=x\" in F:4"
    );
    assert_eq!(
        h("server {\n listen 127.0.0.1:82-81;\n}"),
        "invalid port range in \"127.0.0.1:82-81\" of the \"listen\" directive in F:4"
    );
    assert_eq!(
        h("server {\n listen 127.0.0.1:81-0;\n}"),
        "invalid port in \"127.0.0.1:81-0\" of the \"listen\" directive in F:4"
    );
    assert_eq!(
        h("server {\n listen unix:;\n}"),
        "no path in the unix domain socket in \"unix:\" of the \"listen\" directive in F:4"
    );
    let long = format!("unix:/{}", "a".repeat(107));
    assert_eq!(
        h(&format!("server {{\n listen {long};\n}}")),
        format!("too long path in the unix domain socket in \"{long}\" of the \"listen\" directive in F:4")
    );
    assert_eq!(
        h("server {\n listen unix:/tmp/s ssl;\n}"),
        "\"ssl\" parameter of the \"listen\" directive is not supported yet on unix: in F:4"
    );
    assert_eq!(
        h("server {\n listen unix:/tmp/s;\n ssl on;\n}"),
        "\"ssl\" parameter of the \"listen\" directive is not supported yet on unix: in F:4"
    );
    assert_eq!(
        h("server {\n listen unix:/tmp/s;\n listen unix:/tmp/s;\n}"),
        "a duplicate listen unix:/tmp/s in F:5"
    );
    assert_eq!(
        h("server {\n listen 0;\n}"),
        "invalid port in \"0\" of the \"listen\" directive in F:4"
    );
    assert_eq!(
        h("server {\n listen 80 fast;\n}"),
        "invalid parameter \"fast\" in F:4"
    );
    assert_eq!(
        h("server {\n listen 80 backlog=x;\n}"),
        "invalid backlog \"backlog=x\" in F:4"
    );
    assert_eq!(
        h("server {\n listen 443 ssl;\n}"),
        "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive in F:3"
    );
    assert_eq!(
        h("server {\n listen 443 ssl;\n ssl_certificate a.pem;\n}"),
        "no \"ssl_certificate_key\" is defined for certificate \"a.pem\" in F:5"
    );
    assert_eq!(
        h("server {\n listen 80 default_server;\n}\nserver {\n listen 80 default_server;\n}"),
        "a duplicate default server for 0.0.0.0:80 in F:7"
    );
    assert_eq!(
        h("server {\n listen 80;\n listen 80;\n}"),
        "a duplicate listen 0.0.0.0:80 in F:5"
    );
    assert_eq!(
        h("server {\n listen 80 backlog=10;\n}\nserver {\n listen 80 reuseport;\n}"),
        "duplicate listen options for 0.0.0.0:80 in F:7"
    );
}

#[test]
fn variables_and_logs() {
    assert_eq!(
        h("proxy_set_header X-A $foo;"),
        "unknown \"foo\" variable in F:3"
    );
    assert_eq!(
        h("proxy_set_header X-A \"${host\";"),
        "the closing bracket in \"host\" variable is missing in F:3"
    );
    assert_eq!(
        h("log_format main '$nope';"),
        "unknown \"nope\" variable in F:3"
    );
    assert_eq!(
        h("log_format combined '$host';"),
        "duplicate \"log_format\" name \"combined\" in F:3"
    );
    assert_eq!(
        h("log_format j escape=xml '$host';"),
        "unknown log format escaping \"xml\" in F:3"
    );
    assert_eq!(
        h("access_log /tmp/a.log main;"),
        "unknown log format \"main\" in F:3"
    );
    // nginx needs the format defined before it is used.
    assert_eq!(
        h("access_log /tmp/a.log main;\nlog_format main '$host';"),
        "unknown log format \"main\" in F:3"
    );
    assert_eq!(
        h("access_log off main;"),
        "invalid parameter \"main\" in F:3"
    );
    assert_eq!(
        h("access_log /tmp/a.log combined if=$nosuchvar;"),
        "unknown \"nosuchvar\" variable in F:3"
    );
}

#[test]
fn locations_return_error_page() {
    let in_server = |body: &str| h(&format!("server {{\n{body}\n}}"));
    assert_eq!(
        in_server("location / {}\nlocation / {}"),
        "duplicate location \"/\" in F:5"
    );
    assert_eq!(
        in_server("location /a {}\nlocation ^~ /a {}"),
        "duplicate location \"/a\" in F:5"
    );
    assert_eq!(
        in_server("location /a {\n location /b {}\n}"),
        "location \"/b\" is outside location \"/a\" in F:5"
    );
    assert_eq!(
        in_server("location = /a {\n location /a/b {}\n}"),
        "location \"/a/b\" cannot be inside the exact location \"/a\" in F:5"
    );
    assert_eq!(
        in_server("location ~~ /a {}"),
        "invalid location modifier \"~~\" in F:4"
    );
    assert!(in_server("location ~ ( {}").starts_with("invalid regular expression \"(\": "));
    assert_eq!(
        in_server("location /a { location @named {} }"),
        "named location \"@named\" can be on the server level only in F:4"
    );
    assert_eq!(
        in_server("return abc;"),
        "invalid return code \"abc\" in F:4"
    );
    assert_eq!(
        in_server("return 1000;"),
        "invalid return code \"1000\" in F:4"
    );
    assert_eq!(
        in_server("error_page 200 /x;"),
        "value \"200\" must be between 300 and 599 in F:4"
    );
    assert_eq!(
        in_server("error_page 5xx /x;"),
        "invalid value \"5xx\" in F:4"
    );
    assert_eq!(
        in_server("error_page 404 =x /x;"),
        "invalid value \"=x\" in F:4"
    );
    assert_eq!(
        in_server("error_page 499 /x;"),
        "invalid value \"499\" in F:4"
    );
    assert_eq!(in_server("error_page = /x;"), "invalid value \"=\" in F:4");
    assert_eq!(
        in_server("recursive_error_pages maybe;"),
        "invalid value \"maybe\" in \"recursive_error_pages\" directive, it must be \"on\" or \"off\" in F:4"
    );
    assert_eq!(
        h("return 200;"),
        "\"return\" directive is not allowed here in F:3"
    );
    assert_eq!(
        in_server("if ($host) { proxy_pass http://a; }"),
        "\"proxy_pass\" directive is not allowed here in F:4"
    );
    assert_eq!(
        h("gzip_static on;"),
        "\"gzip_static\" with \"on\" is not supported yet in F:3"
    );
    assert_eq!(
        h("proxy_redirect default;"),
        "\"proxy_redirect default\" should be placed after the \"proxy_pass\" directive in F:3"
    );
    assert_eq!(
        h("proxy_redirect off; proxy_redirect off;"),
        "\"proxy_redirect\" directive is duplicate in F:3"
    );
    assert_eq!(
        h("proxy_ignore_headers Expires Nope;"),
        "invalid value \"Nope\" in F:3"
    );
    assert_eq!(
        h("proxy_cookie_flags on;"),
        "invalid parameter \"on\" in F:3"
    );
}

#[test]
fn include_of_missing_plain_file() {
    let err = parse("events {}\ninclude missing.conf;").unwrap_err();
    assert_eq!(
        err.to_string(),
        "open() \"/t/conf/missing.conf\" failed (2: No such file or directory) in /t/conf/x.conf:2"
    );
}

#[test]
fn missing_main_file() {
    let err = ringfront_config::load(std::path::Path::new("/nonexistent-ringfront/nginx.conf"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "open() \"/nonexistent-ringfront/nginx.conf\" failed (2: No such file or directory)"
    );
    assert_eq!(err.file, None);
}

#[test]
fn allow_and_deny_rules() {
    let cfg = |rule: &str| {
        format!(
            "events {{}}\nhttp {{ server {{ listen 127.0.0.1:1; location / {{ {rule} }} }} }}\n"
        )
    };
    let parse = |text: &str| {
        ringfront_config::parse_str(text, std::path::Path::new("/t/x.conf"), &common::dns())
    };
    for bad in [
        "allow foo;",
        "deny 10.0.0.0/33;",
        "allow ::1/129;",
        "deny 10.0.0.1/;",
    ] {
        let e = parse(&cfg(bad)).unwrap_err().to_string();
        assert!(e.starts_with("invalid parameter \""), "{bad}: {e}");
        assert!(e.ends_with("x.conf:2"), "{bad}: {e}");
    }
    let c = parse(&cfg("allow 10.1.0.0/16; allow unix:; deny all;")).unwrap();
    let rules = &c.http.servers[0].locations[0].settings.access_rules;
    assert_eq!(rules.len(), 3);
    assert!(rules[0].allow && rules[1].allow && !rules[2].allow);
    assert!(rules[0].matches("10.1.200.3".parse().unwrap()));
    assert!(!rules[0].matches("10.2.0.1".parse().unwrap()));
    assert!(rules[0].matches("::ffff:10.1.0.9".parse().unwrap()));
    // `unix:` matches unix-domain clients only.
    assert!(rules[1].unix && !rules[1].matches("10.2.0.1".parse().unwrap()));
    assert!(rules[2].matches("2001:db8::1".parse().unwrap()));
}

#[test]
fn listen_socket_options() {
    use ringfront_config::{KeepAlive, SocketOptions};
    use std::time::Duration;
    let l = |params: &str| {
        common::parse(&format!(
            "events {{}}\nhttp {{ server {{ listen 127.0.0.1:8080 {params}; }} }}"
        ))
        .map(|c| c.http.servers[0].listens[0].options)
    };
    assert_eq!(
        l("rcvbuf=64k sndbuf=1m so_keepalive=on").unwrap(),
        SocketOptions {
            rcvbuf: Some(65536),
            sndbuf: Some(1 << 20),
            keepalive: Some(KeepAlive::On),
            ipv6only: None,
            fastopen: None,
        }
    );
    let o = l("fastopen=256 ipv6only=off").unwrap();
    assert_eq!((o.fastopen, o.ipv6only), (Some(256), Some(false)));
    assert_eq!(
        l("so_keepalive=30m::10").unwrap().keepalive,
        Some(KeepAlive::Tuned {
            idle: Some(Duration::from_secs(1800)),
            interval: None,
            count: Some(10),
        })
    );
    assert_eq!(
        l("so_keepalive=off").unwrap().keepalive,
        Some(KeepAlive::Off)
    );
    let e = |params: &str| l(params).unwrap_err().to_string();
    assert_eq!(e("rcvbuf=x"), "invalid rcvbuf \"x\" in /t/conf/x.conf:2");
    assert_eq!(
        e("so_keepalive=1:2"),
        "invalid so_keepalive value: \"1:2\" in /t/conf/x.conf:2"
    );
    assert_eq!(
        e("so_keepalive=::"),
        "invalid so_keepalive value: \"::\" in /t/conf/x.conf:2"
    );
}

#[test]
fn map_blocks() {
    let p = |http: &str| common::parse(&format!("events {{}}\nhttp {{\n{http}\n}}"));
    let cfg = p("server { listen 127.0.0.1:1; location / { return 200 $m; } }\nmap $host $m { default x; a b; ~^c d; }").unwrap();
    assert_eq!(cfg.http.maps.len(), 1, "used before it is defined");
    assert_eq!(cfg.http.maps[0].entries.len(), 2);
    let e = |http: &str| p(http).unwrap_err().to_string();
    assert_eq!(
        e("map $host m { }"),
        "invalid variable name \"m\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("map $host $m { }\nmap $uri $M { }"),
        "the duplicate \"m\" variable in /t/conf/x.conf:4"
    );
    assert_eq!(
        e("map $host $m { default a; default b; }"),
        "duplicate default map parameter in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("map $host $m { a b c; }"),
        "invalid number of the map parameters in /t/conf/x.conf:3"
    );
    assert!(e("map $host $m { ~( b; }").starts_with("invalid regular expression"));
    assert_eq!(
        e("map $nosuch $m { }"),
        "unknown \"nosuch\" variable in /t/conf/x.conf:3"
    );
}

#[test]
fn split_clients_blocks() {
    let p = |http: &str| common::parse(&format!("events {{}}\nhttp {{\n{http}\n}}"));
    let cfg = p("split_clients $remote_addr $v { 0.5% a; 2% b; * c; }").unwrap();
    let parts: Vec<u32> = cfg.http.splits[0].parts.iter().map(|(b, _)| *b).collect();
    // nginx's bounds: running totals of percent * 0xffffffff / 10000.
    assert_eq!(parts, vec![21_474_836, 21_474_836 + 85_899_345, 0]);
    let e = |http: &str| p(http).unwrap_err().to_string();
    assert_eq!(
        e("split_clients $remote_addr $v { 60% a; 50% b; }"),
        "percent total is greater than 100% in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("split_clients $remote_addr $v { 0.125% a; }"),
        "invalid percent value \"0.125%\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("map $host $v { }\nsplit_clients $remote_addr $v { }"),
        "the duplicate \"v\" variable in /t/conf/x.conf:4"
    );
}

#[test]
fn geo_blocks() {
    let p = |http: &str| common::parse(&format!("events {{}}\nhttp {{\n{http}\n}}"));
    let cfg = p("geo $g { default d; 10.0.0.0/8 a; 10.0.0.0/8 b; }").unwrap();
    assert_eq!(
        cfg.http.geos[0].nets.len(),
        1,
        "the later value replaces the earlier"
    );
    assert_eq!(cfg.http.geos[0].nets[0].1, "b");
    let e = |http: &str| p(http).unwrap_err().to_string();
    assert_eq!(
        e("geo $g { 10.0.0.0/33 a; }"),
        "invalid network \"10.0.0.0/33\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("geo $g { ranges; 1.0.0.9-1.0.0.1 a; }"),
        "invalid range \"1.0.0.9-1.0.0.1\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("geo $g { proxy 10.0.0.0/40; }"),
        "invalid network \"10.0.0.0/40\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("geo $g { ranges; 1.0.0.0-1.0.0.9 a; 1.0.0.5-1.0.0.20 b; }"),
        "range \"1.0.0.5-1.0.0.20\" overlaps \"1.0.0.0-1.0.0.9\" in /t/conf/x.conf:3"
    );
    assert_eq!(
        e("geo $g { 10.0.0.0/8 a; ranges; }"),
        "the \"ranges\" directive must be the first directive inside \"geo\" block in /t/conf/x.conf:3"
    );
    let cfg = p("geo $g { proxy 10.0.0.0/8; proxy_recursive; }").unwrap();
    assert!(cfg.http.geos[0].proxy_recursive && cfg.http.geos[0].proxies.len() == 1);
    assert_eq!(
        e("geo $g { }\nmap $host $g { }"),
        "the duplicate \"g\" variable in /t/conf/x.conf:4"
    );
}

#[test]
fn limit_except_as_nginx_reads_it() {
    let loc = |body: &str| h(&format!("server {{\n location / {{\n  {body}\n }}\n}}"));
    assert_eq!(
        loc("limit_except FOO { deny all; }"),
        "invalid method \"FOO\" in F:5"
    );
    assert_eq!(
        loc("limit_except GET {\n root /x;\n }"),
        "\"root\" directive is not allowed here in F:6"
    );
    assert_eq!(
        loc("limit_except GET { }\n  limit_except POST { }"),
        "\"limit_except\" directive is duplicate in F:6"
    );
    assert_eq!(
        loc("limit_except GET { proxy_pass http://a/x; }"),
        "\"proxy_pass\" cannot have URI part in location given by regular expression, or inside named location, or inside \"if\" statement, or inside \"limit_except\" block in F:5"
    );
    assert_eq!(
        h("server {\n limit_except GET { }\n}"),
        "\"limit_except\" directive is not allowed here in F:4"
    );
}

#[test]
fn keepalive_browsers_and_header() {
    assert_eq!(
        h("keepalive_disable msie6 opera;"),
        "invalid value \"opera\" in F:3"
    );
    assert_eq!(
        h("keepalive_timeout 10 x;"),
        "\"keepalive_timeout\" directive invalid value in F:3"
    );
}
