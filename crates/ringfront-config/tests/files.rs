//! The static module's directives: `root`/`alias` sharing one slot (nginx's messages),
//! `index` lines adding up, `types` inherited whole, `default_type`, `expires` forms (each
//! message checked against nginx 1.22 `-t`).

mod common;

use common::{http, parse, FILE};
use ringfront_config::{Config, Expires, LocationSettings};

fn settings(cfg: &Config, server: usize, location: usize) -> &LocationSettings {
    &cfg.http.servers[server].locations[location].settings
}

fn index(s: &LocationSettings) -> Vec<String> {
    let lit = |t: &ringfront_config::Template| match t.parts.as_slice() {
        [ringfront_config::TemplatePart::Literal(l)] => l.clone(),
        _ => "(variables)".to_string(),
    };
    s.files.index.iter().map(lit).collect()
}

fn e(body: &str) -> String {
    match parse(&format!("events {{}}\nhttp {{\n{body}\n}}\n")) {
        Ok(_) => panic!("should fail:\n{body}"),
        Err(err) => err.to_string().replace(FILE, "F"),
    }
}

#[test]
fn files_settings_merge_as_nginx() {
    let cfg = http(
        "types { text/x-a a A; }
         default_type x/y;
         expires 1h;
         server {
             location /a { alias /data/; index one.html; index two.html; }
             location /b { types { } expires modified -30s; location /b/c { } }
             location /d { root /r; expires off; }
         }",
    );
    let a = settings(&cfg, 0, 0);
    assert_eq!(a.files.alias, Some(Some(2)));
    assert_eq!(a.root, std::path::PathBuf::from("/data/"));
    assert_eq!(index(a), ["one.html", "two.html"]);
    assert_eq!(a.files.content_type("/x.A"), "text/x-a");
    assert_eq!(a.files.content_type("/x.html"), "x/y");
    assert_eq!(a.files.expires, Expires::Access(3600));
    let b = settings(&cfg, 0, 1);
    assert_eq!(b.files.content_type("/x.a"), "x/y");
    assert_eq!(b.files.expires, Expires::Modified(-30));
    let c = &cfg.http.servers[0].locations[1].locations[0].settings;
    assert_eq!(c.files.expires, Expires::Modified(-30));
    let cfg2 = http(
        "if_modified_since before; log_not_found off;
         server { location /v { expires modified $arg_e; } location /d { expires @1h; } }",
    );
    let v = settings(&cfg2, 0, 0);
    assert!(matches!(
        v.files.expires,
        Expires::Var { modified: true, .. }
    ));
    assert_eq!(
        v.files.if_modified_since,
        ringfront_config::IfModifiedSince::Before
    );
    assert!(!v.files.log_not_found);
    assert_eq!(settings(&cfg2, 0, 1).files.expires, Expires::Daily(3600));
    let d = settings(&cfg, 0, 2);
    assert_eq!(d.files.alias, None);
    assert_eq!(d.files.expires, Expires::Off);
    assert_eq!(index(d), ["index.html"]);
}

#[test]
fn nginx_messages() {
    assert_eq!(
        e("server { location /a { root /a; alias /b; } }"),
        "\"alias\" directive is duplicate, \"root\" directive was specified earlier in F:3"
    );
    assert_eq!(
        e("server { alias /b; }"),
        "\"alias\" directive is not allowed here in F:3"
    );
    assert_eq!(
        e("expires soon;"),
        "\"expires\" directive invalid value in F:3"
    );
    assert_eq!(
        e("expires later 1h;"),
        "\"expires\" directive invalid value in F:3"
    );
    assert_eq!(
        e("server { location /a { location @x { } } }"),
        "named location \"@x\" can be on the server level only in F:3"
    );
    assert_eq!(
        e("server { location @x { location /y { } } }"),
        "location \"/y\" cannot be inside the named location \"@x\" in F:3"
    );
    assert_eq!(
        e("server { location @x { proxy_pass http://u/x; } }"),
        "\"proxy_pass\" cannot have URI part in location given by regular expression, or \
         inside named location, or inside \"if\" statement, or inside \"limit_except\" block in F:3"
    );
    assert_eq!(
        e("expires @25h;"),
        "\"expires\" directive daily time value must be less than 24 hours in F:3"
    );
    assert_eq!(
        e("if_modified_since sometimes;"),
        "invalid value \"sometimes\" in F:3"
    );
    assert_eq!(
        e("expires 1h; expires 2h;"),
        "\"expires\" directive is duplicate in F:3"
    );
}
