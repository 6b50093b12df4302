//! `add_header` and `server_tokens`: contexts, nginx's array inheritance (a level with any
//! `add_header` replaces the outer list whole), values with variables, and nginx's messages
//! (each checked against nginx 1.22 `-t`).

mod common;

use common::{http, parse, FILE};
use ringfront_config::{
    AddHeader, Config, LocationSettings, ServerTokens, Template, TemplatePart, Variable,
};

fn settings(cfg: &Config, server: usize, location: usize) -> &LocationSettings {
    &cfg.http.servers[server].locations[location].settings
}

fn names(s: &LocationSettings) -> Vec<&str> {
    s.add_headers.iter().map(|h| h.name.as_str()).collect()
}

fn e(body: &str) -> String {
    match parse(&format!("events {{}}\nhttp {{\n{body}\n}}\n")) {
        Ok(_) => panic!("should fail:\n{body}"),
        Err(err) => err.to_string().replace(FILE, "F"),
    }
}

#[test]
fn add_header_is_inherited_only_by_levels_without_one() {
    let cfg = http(
        "add_header X-Http h;
         server {
             location /a { }
             location /b { add_header X-B b; add_header X-B2 b2 always; }
             location /c { location /c/d { } }
         }
         server {
             add_header X-S s;
             location /e { }
             location /f { add_header X-F f; }
         }",
    );
    assert_eq!(names(settings(&cfg, 0, 0)), ["X-Http"]);
    assert_eq!(names(settings(&cfg, 0, 1)), ["X-B", "X-B2"]);
    assert_eq!(
        names(&cfg.http.servers[0].locations[2].locations[0].settings),
        ["X-Http"]
    );
    assert_eq!(names(settings(&cfg, 1, 0)), ["X-S"]);
    assert_eq!(names(settings(&cfg, 1, 1)), ["X-F"]);
    let b = &settings(&cfg, 0, 1).add_headers;
    assert!(!b[0].always && b[1].always);
}

#[test]
fn add_header_values_and_flags() {
    let cfg = http(
        "server { location / {
             add_header X-Host \"$host:$status\";
             add_header X-Empty \"\";
             add_header etag \"v1\";
             add_header Last-Modified x always;
             add_header X-Twice 1;
             add_header X-Twice 2;
         } }",
    );
    let h = &settings(&cfg, 0, 0).add_headers;
    assert_eq!(
        h[0],
        AddHeader {
            name: "X-Host".into(),
            value: Template {
                parts: vec![
                    TemplatePart::Var(Variable::Host),
                    TemplatePart::Literal(":".into()),
                    TemplatePart::Var(Variable::Status),
                ]
            },
            always: false,
            replaces: false,
        }
    );
    assert!(h[1].value.parts.is_empty());
    assert!(h[2].replaces && h[3].replaces && h[3].always);
    assert_eq!(names(settings(&cfg, 0, 0))[4..], ["X-Twice", "X-Twice"]);
}

#[test]
fn server_tokens_values_and_inheritance() {
    let cfg = http(
        "server_tokens off;
         server {
             location /a { }
             location /b { server_tokens ON; }
             location /c { server_tokens build; }
         }
         server { server_tokens on; location / { } }",
    );
    assert_eq!(settings(&cfg, 0, 0).server_tokens, ServerTokens::Off);
    assert_eq!(settings(&cfg, 0, 1).server_tokens, ServerTokens::On);
    assert_eq!(settings(&cfg, 0, 2).server_tokens, ServerTokens::Build);
    assert!(settings(&cfg, 0, 2).server_tokens.version());
    assert_eq!(settings(&cfg, 1, 0).server_tokens, ServerTokens::On);
    let d = http("server { location / { } }");
    assert_eq!(settings(&d, 0, 0).server_tokens, ServerTokens::On);
    assert!(settings(&d, 0, 0).add_headers.is_empty());
}

#[test]
fn errors_read_like_nginx() {
    assert_eq!(
        e("server { add_header X a b; }"),
        "invalid parameter \"b\" in F:3"
    );
    assert_eq!(
        e("server { add_header X a Always; }"),
        "invalid parameter \"Always\" in F:3"
    );
    assert_eq!(
        e("server { add_header X; }"),
        "invalid number of arguments in \"add_header\" directive in F:3"
    );
    assert_eq!(
        e("server { add_header X a always x; }"),
        "invalid number of arguments in \"add_header\" directive in F:3"
    );
    assert!(e("server { add_header X $nope; }").starts_with("unknown \"nope\" variable"));
    assert_eq!(
        e("upstream u { server 127.0.0.1; add_header X 1; }"),
        "\"add_header\" directive is not allowed here in F:3"
    );
    assert_eq!(
        e("server { server_tokens maybe; }"),
        "invalid value \"maybe\" in F:3"
    );
    assert_eq!(
        e("server { server_tokens on; server_tokens off; }"),
        "\"server_tokens\" directive is duplicate in F:3"
    );
    assert!(parse("events {}\nadd_header X 1;\n")
        .unwrap_err()
        .to_string()
        .starts_with("\"add_header\" directive is not allowed here"));
}

#[test]
fn a_server_level_return_answers_with_the_servers_headers() {
    let cfg = http(
        "server {
             add_header X-S s;
             server_tokens off;
             return 200 x;
             location / { add_header X-L l; server_tokens on; }
         }",
    );
    // The server's `return` runs before any location is chosen, with the server's own
    // settings (the proxy answers with them); the location keeps its own.
    let server = &cfg.http.servers[0].settings;
    assert_eq!(names(server), ["X-S"]);
    assert_eq!(server.server_tokens, ServerTokens::Off);
    assert_eq!(server.first_return().map(|r| r.code), Some(200));
    let s = settings(&cfg, 0, 0);
    assert_eq!(names(s), ["X-L"]);
    assert_eq!(s.server_tokens, ServerTokens::On);
}
