//! `limit_rate`, `limit_rate_after`, `proxy_limit_rate` and `set $limit_rate` as the model
//! holds them: defaults, inheritance, variables, nginx's load errors.

mod common;

use common::{http, parse};
use ringfront_config::{RewriteOp, SizeValue};

#[test]
fn defaults_inheritance_and_variables() {
    let cfg = http(
        "limit_rate 12k;\nproxy_limit_rate 20000;\nserver {\n location / {}\n \
         location /v { limit_rate $arg_l; limit_rate_after 1m; proxy_limit_rate 0; }\n}",
    );
    let s = &cfg.http.servers[0].locations[0].settings;
    assert_eq!(s.limit_rate, SizeValue::Fixed(12 << 10));
    assert_eq!(s.limit_rate_after, SizeValue::Fixed(0));
    assert_eq!(s.proxy_limit_rate, 20000);
    let v = &cfg.http.servers[0].locations[1].settings;
    assert!(matches!(v.limit_rate, SizeValue::Vars(_)));
    assert_eq!(v.limit_rate_after, SizeValue::Fixed(1 << 20));
    assert_eq!(v.proxy_limit_rate, 0);
}

#[test]
fn nginx_load_errors() {
    let e = |conf: &str| parse(conf).unwrap_err().to_string();
    let msg = e("events {}\nhttp {\nlimit_rate fast;\n}");
    assert_eq!(
        msg,
        "\"limit_rate\" directive invalid value in /t/conf/x.conf:3"
    );
    let msg = e("events {}\nhttp {\nlimit_rate 1k;\nlimit_rate 2k;\n}");
    assert!(
        msg.starts_with("\"limit_rate\" directive is duplicate in "),
        "{msg}"
    );
    let msg = e("events {}\nhttp {\nproxy_limit_rate $x;\n}");
    assert_eq!(
        msg,
        "\"proxy_limit_rate\" directive invalid value in /t/conf/x.conf:3"
    );
}

#[test]
fn set_limit_rate_and_limit_rate_in_if() {
    let cfg = http(
        "server {\n location / {\n set $limit_rate 40k;\n \
         if ($arg_slow) { limit_rate 1k; }\n }\n}",
    );
    let s = &cfg.http.servers[0].locations[0].settings;
    assert!(s
        .rewrite
        .iter()
        .any(|op| matches!(op, RewriteOp::SetLimitRate(_))));
    assert_eq!(s.if_settings[0].limit_rate, SizeValue::Fixed(1 << 10));
    assert_eq!(s.limit_rate, SizeValue::Fixed(0));
}
