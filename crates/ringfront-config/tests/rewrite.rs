//! The rewrite module's directives as read into the model (`set`, `rewrite`, `return`,
//! `break`, `if`, `rewrite_log`), and their errors in nginx's words (checked against nginx
//! 1.22 with the same lines).

mod common;

use common::{parse, FILE};
use ringfront_config::{Condition, Config, RewriteFlag, RewriteOp, TemplatePart, Variable};

fn http(body: &str) -> Config {
    parse(&format!("events {{}}\nhttp {{\n{body}\n}}\n")).expect("parses")
}

/// The error for `server { BODY }` (the body starts on line 4).
fn in_server(body: &str) -> String {
    match parse(&format!(
        "events {{}}\nhttp {{\nserver {{\n{body}\n}}\n}}\n"
    )) {
        Ok(_) => panic!("should fail: {body}"),
        Err(e) => e.to_string().replace(FILE, "F"),
    }
}

#[test]
fn directives_in_order_with_variables_known_everywhere() {
    let cfg = http(
        "server {
            set $early $later;
            rewrite ^/a/(.*)$ /b/$1?x=1 last;
            location ~ ^/(?<named>[a-z]+) {
                if ($named = abc) { return 403; }
                set $later \"v-$named\";
                break;
            }
        }",
    );
    // In the order they are first defined (a `set`, a named capture).
    assert_eq!(cfg.http.variables, ["early", "named", "later"]);
    assert_eq!(cfg.http.variable_set, [true, false, true]);
    let server = &cfg.http.servers[0].settings.rewrite;
    assert!(matches!(server[0], RewriteOp::Set { var: 0, .. }));
    let RewriteOp::Rewrite(r) = &server[1] else {
        panic!("{server:?}")
    };
    assert_eq!(r.flag, RewriteFlag::Last);
    assert!(r.add_args && r.has_args && r.redirect.is_none());
    assert_eq!(
        r.replacement.parts[1],
        TemplatePart::Var(Variable::Capture(1))
    );
    let loc = &cfg.http.servers[0].locations[0].settings.rewrite;
    let RewriteOp::If(i) = &loc[0] else {
        panic!("{loc:?}")
    };
    assert!(matches!(
        &i.condition,
        Condition::Equals {
            var: Variable::User(1),
            negate: false,
            ..
        }
    ));
    assert!(matches!(i.body[..], [RewriteOp::Return(_)]));
    assert!(matches!(loc[1], RewriteOp::Set { var: 2, .. }));
    assert_eq!(loc[2], RewriteOp::Break);
}

#[test]
fn flags_redirects_and_arguments() {
    let cfg = http(
        "server {
            rewrite ^ http://x/ ;
            rewrite ^ /p permanent;
            rewrite ^ /r? redirect;
            rewrite ^ $scheme://h/$uri break;
            rewrite_log on;
            location / { if ( $http_x !~* \"^a(b)\" ) { set $args q; } }
        }",
    );
    let s = &cfg.http.servers[0].settings;
    assert!(s.rewrite_log);
    let rules: Vec<_> = s
        .rewrite
        .iter()
        .filter_map(|op| match op {
            RewriteOp::Rewrite(r) => Some((r.redirect, r.flag, r.add_args)),
            _ => None,
        })
        .collect();
    assert_eq!(
        rules,
        [
            (Some(302), RewriteFlag::Redirect, true),
            (Some(301), RewriteFlag::Permanent, true),
            (Some(302), RewriteFlag::Redirect, false),
            (Some(302), RewriteFlag::Break, true),
        ]
    );
    let loc = &cfg.http.servers[0].locations[0].settings;
    assert!(loc.rewrite_log, "inherited");
    let RewriteOp::If(i) = &loc.rewrite[0] else {
        panic!()
    };
    assert!(matches!(
        &i.condition,
        Condition::Matches {
            case_insensitive: true,
            negate: true,
            ..
        }
    ));
    assert!(matches!(i.body[..], [RewriteOp::SetArgs(_)]));
}

#[test]
fn errors_read_like_nginx() {
    let cases = [
        ("set foo 1;", "invalid variable name \"foo\" in F:4"),
        ("set $ 1;", "invalid variable name \"$\" in F:4"),
        ("set $host x;", "the duplicate \"host\" variable in F:4"),
        ("rewrite ^ \"\";", "empty replacement in F:4"),
        ("rewrite ^ /x bogus;", "invalid parameter \"bogus\" in F:4"),
        ("if (a) { }", "invalid condition \"a\" in F:4"),
        ("if ($host == x) { }", "unexpected \"==\" in condition in F:4"),
        ("if ($host x) { }", "invalid condition \"$host\" in F:4"),
        ("if $host { }", "invalid condition \"$host\" in F:4"),
        ("if ($host { }", "invalid condition \"$host\" in F:4"),
        ("if ($nosuch) { }", "unknown \"nosuch\" variable in F:4"),
        (
            "if ($host) { proxy_set_header A b; }",
            "\"proxy_set_header\" directive is not allowed here in F:4",
        ),
        (
            "if ($host) { if ($host) { } }",
            "\"if\" directive is not allowed here in F:4",
        ),
        (
            "break 1;",
            "invalid number of arguments in \"break\" directive in F:4",
        ),
        (
            "rewrite_log maybe;",
            "invalid value \"maybe\" in \"rewrite_log\" directive, it must be \"on\" or \"off\" in F:4",
        ),
        (
            "location / { if ($host) { expires 1h; } }",
            "\"expires\" directive inside \"if\" is not supported yet in F:4",
        ),
        (
            "location / { if ($host) { proxy_pass http://127.0.0.1:1/x; } }",
            "\"proxy_pass\" cannot have URI part in location given by regular expression, or \
             inside named location, or inside \"if\" statement, or inside \"limit_except\" \
             block in F:4",
        ),
        (
            "location / { if ($host) { add_header A; } }",
            "invalid number of arguments in \"add_header\" directive in F:4",
        ),
        (
            "if ($host) { add_header A b; }",
            "\"add_header\" directive is not allowed here in F:4",
        ),
        ("if (-q /x) { }", "invalid condition \"-q\" in F:4"),
        ("if (-f) { }", "invalid condition \"-f\" in F:4"),
        ("if (!-f /a /b) { }", "invalid condition \"!-f\" in F:4"),
    ];
    for (body, want) in cases {
        assert_eq!(in_server(body), want, "{body}");
    }
}

#[test]
fn a_location_if_with_configuration_directives_has_settings_of_its_own() {
    let cfg = http(
        "server {
            location /a {
                proxy_pass http://127.0.0.1:9001/x/;
                add_header X-L l;
                if ($arg_a) { add_header X-I i; return 204; }
                if ($arg_b) { proxy_pass http://127.0.0.1:9002; }
                if ($arg_c) { set $v 1; }
            }
        }",
    );
    let s = &cfg.http.servers[0].locations[0].settings;
    let configs: Vec<Option<usize>> = s
        .rewrite
        .iter()
        .map(|op| match op {
            RewriteOp::If(i) => i.config,
            _ => None,
        })
        .collect();
    assert_eq!(configs, [Some(0), Some(1), None]);
    assert_eq!(s.if_settings.len(), 2);
    let names = |s: &ringfront_config::LocationSettings| -> Vec<String> {
        s.add_headers.iter().map(|a| a.name.clone()).collect()
    };
    assert_eq!(names(&s.if_settings[0]), ["X-I"]);
    assert_eq!(
        names(&s.if_settings[1]),
        ["X-L"],
        "inherited from the location"
    );
    let pass = |s: &ringfront_config::LocationSettings| s.proxy_pass.clone().map(|p| p.uri);
    assert_eq!(
        pass(&s.if_settings[0]),
        Some(Some("/x/".into())),
        "the location's"
    );
    assert_eq!(pass(&s.if_settings[1]), Some(None), "its own");
}
