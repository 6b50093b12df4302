//! The typed model: defaults, inheritance http -> server -> location, upstreams (explicit,
//! referenced before definition, implicit), listens and main-level settings.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use common::{http, parse};
use ringfront_config::{
    AccessLog, AllFailed, Balancer, Config, CpuAffinity, ErrorLog, ErrorPage, Location,
    LocationMatch, LocationSettings, LogLevel, NextUpstream, ProxyPass, ProxyTarget, Return,
    Template, TemplatePart, Variable, WorkerProcesses,
};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn loc<'a>(cfg: &'a Config, server: usize, path: &[usize]) -> &'a Location {
    let mut l = &cfg.http.servers[server].locations[path[0]];
    for &i in &path[1..] {
        l = &l.locations[i];
    }
    l
}

fn lit(s: &str) -> Template {
    Template {
        parts: vec![TemplatePart::Literal(s.into())],
    }
}

#[test]
fn nginx_defaults() {
    let cfg = http("server {\n location / {}\n}");
    let s = &loc(&cfg, 0, &[0]).settings;
    let d = LocationSettings::default();
    assert_eq!(s.proxy_pass, None);
    assert!(s.proxy_set_header.is_empty());
    assert_eq!(s.proxy_http_version, "1.0");
    assert_eq!(s.max_headers, 1000);
    assert_eq!(
        (
            s.proxy_connect_timeout,
            s.proxy_read_timeout,
            s.proxy_send_timeout
        ),
        (secs(60), secs(60), secs(60))
    );
    assert_eq!(s.proxy_next_upstream, NextUpstream::default());
    assert!(
        s.proxy_next_upstream.error
            && s.proxy_next_upstream.timeout
            && !s.proxy_next_upstream.http_502
    );
    assert_eq!(
        (s.proxy_next_upstream_tries, s.proxy_next_upstream_timeout),
        (0, Duration::ZERO)
    );
    assert_eq!(s.first_return(), None);
    assert!(s.error_pages.is_empty());
    assert_eq!(s.root, PathBuf::from("/t/conf/html"));
    assert!(s.access_log.is_empty(), "no access log unless written");
    assert_eq!(
        (s.keepalive_timeout, s.keepalive_requests),
        (secs(75), 1000)
    );
    assert_eq!(s.client_max_body_size, 1 << 20);
    assert_eq!(
        (
            s.client_header_timeout,
            s.client_body_timeout,
            s.send_timeout
        ),
        (secs(60), secs(60), secs(60))
    );
    assert_eq!(s.large_client_header_buffers, (4, 8192));
    assert_eq!(d.large_client_header_buffers, s.large_client_header_buffers);

    let m = &cfg.main;
    assert_eq!(m.worker_processes, WorkerProcesses::Count(1));
    assert_eq!(m.worker_cpu_affinity, CpuAffinity::Off);
    assert!(m.daemon && m.master_process);
    assert_eq!(m.pid, None);
    assert_eq!(
        m.error_log,
        vec![ErrorLog {
            path: None,
            level: LogLevel::Error
        }]
    );
    assert_eq!(m.worker_connections, 512);
    assert_eq!(cfg.http.log_formats[0].name, "combined");
    assert_eq!(cfg.path, PathBuf::from(common::FILE));
}

#[test]
fn inheritance_http_server_location_nested() {
    let cfg = http(
        "server {
            proxy_read_timeout 9s;
            location /a {
                proxy_connect_timeout 3s;
                location /a/b {
                    proxy_send_timeout 4s;
                }
            }
        }
        proxy_read_timeout 5s;   # after the server block: still inherited, as in nginx
        proxy_connect_timeout 1s;
        client_max_body_size 10m;",
    );
    let a = &loc(&cfg, 0, &[0]).settings;
    assert_eq!(
        (
            a.proxy_read_timeout,
            a.proxy_connect_timeout,
            a.proxy_send_timeout
        ),
        (secs(9), secs(3), secs(60))
    );
    assert_eq!(a.client_max_body_size, 10 << 20);
    let b = &loc(&cfg, 0, &[0, 0]).settings;
    assert_eq!(
        (
            b.proxy_read_timeout,
            b.proxy_connect_timeout,
            b.proxy_send_timeout
        ),
        (secs(9), secs(3), secs(4))
    );
    let server = &cfg.http.servers[0].settings;
    assert_eq!(
        (server.proxy_read_timeout, server.proxy_connect_timeout),
        (secs(9), secs(1))
    );
}

#[test]
fn lists_are_replaced_whole() {
    let cfg = http(
        "proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        error_page 502 503 /50x.html;
        access_log /var/log/a.log;
        server {
            location /keep {}
            location /own {
                proxy_set_header X-Only yes;
                error_page 404 =200 /empty;
                access_log off;
            }
        }",
    );
    let keep = &loc(&cfg, 0, &[0]).settings;
    assert_eq!(
        keep.proxy_set_header,
        vec![
            (
                "Host".to_string(),
                Template {
                    parts: vec![TemplatePart::Var(Variable::Host)]
                }
            ),
            (
                "X-Real-IP".to_string(),
                Template {
                    parts: vec![TemplatePart::Var(Variable::RemoteAddr)]
                }
            ),
        ]
    );
    assert_eq!(
        keep.error_pages,
        vec![ErrorPage {
            codes: vec![502, 503],
            overwrite: None,
            target: lit("/50x.html"),
            args: None,
        }]
    );
    assert_eq!(
        keep.access_log,
        vec![AccessLog::File {
            path: "/var/log/a.log".into(),
            format: "combined".into(),
            condition: None,
        }]
    );
    let own = &loc(&cfg, 0, &[1]).settings;
    assert_eq!(
        own.proxy_set_header,
        vec![("X-Only".to_string(), lit("yes"))]
    );
    assert_eq!(
        own.error_pages,
        vec![ErrorPage {
            codes: vec![404],
            overwrite: Some(200),
            target: lit("/empty"),
            args: None,
        }]
    );
    assert_eq!(own.access_log, vec![AccessLog::Off]);
}

#[test]
fn return_and_proxy_pass_are_not_inherited_but_server_return_wins() {
    let cfg = http(
        "server {
            location /a {
                proxy_pass http://127.0.0.1:9001/x/;
                return 404;
                location /a/b {}
            }
            location = /health { return 200 \"ok\\n\"; }
            location /r { return https://example.com$request_uri; }
        }
        server {
            listen 81;
            return 301 https://$host$request_uri;
            location / { return 404; }
        }",
    );
    let a = &loc(&cfg, 0, &[0]).settings;
    assert_eq!(
        a.first_return().cloned(),
        Some(Return {
            code: 404,
            text: None
        })
    );
    assert_eq!(
        a.proxy_pass,
        Some(ProxyPass {
            target: ProxyTarget::Upstream("127.0.0.1:9001".into()),
            uri: Some("/x/".into()),
            tls: false
        })
    );
    let b = &loc(&cfg, 0, &[0, 0]).settings;
    assert_eq!(
        (b.first_return().cloned(), b.proxy_pass.clone()),
        (None, None)
    );
    assert_eq!(
        loc(&cfg, 0, &[1]).matcher,
        LocationMatch::Exact("/health".into())
    );
    assert_eq!(
        loc(&cfg, 0, &[1]).settings.first_return().cloned(),
        Some(Return {
            code: 200,
            text: Some(lit("ok\n"))
        })
    );
    let r = loc(&cfg, 0, &[2]).settings.first_return().cloned().unwrap();
    assert_eq!(r.code, 302);
    let redirect = Return {
        code: 301,
        text: Some(Template {
            parts: vec![
                TemplatePart::Literal("https://".into()),
                TemplatePart::Var(Variable::Host),
                TemplatePart::Var(Variable::RequestUri),
            ],
        }),
    };
    assert_eq!(
        cfg.http.servers[1].settings.first_return().cloned(),
        Some(redirect.clone())
    );
    // The server's `return` runs before a location is chosen (the proxy answers with it);
    // the location keeps its own.
    assert_eq!(
        loc(&cfg, 1, &[0]).settings.first_return().map(|r| r.code),
        Some(404)
    );
}

#[test]
fn upstreams_explicit_later_and_implicit() {
    let cfg = http(
        "server {
            location /early { proxy_pass http://Backend; }
            location /implicit { proxy_pass http://127.0.0.1:9009; }
            location /again { proxy_pass http://127.0.0.1:9009/again/; }
            location /named { proxy_pass http://backend.test; }
            location /multi { proxy_pass http://multi.test:8080; }
        }
        upstream backend {
            server 127.0.0.1:9001 weight=4 max_fails=3 fail_timeout=30s;
            server localhost:9002 backup;
            server 127.0.0.1 down;
            keepalive 8;
            keepalive_timeout 5s;
            keepalive_requests 50;
            keepalive_time 10s;
        }",
    );
    let target = |i: usize| {
        loc(&cfg, 0, &[i])
            .settings
            .proxy_pass
            .clone()
            .unwrap()
            .target
    };
    assert_eq!(target(0), ProxyTarget::Upstream("backend".into()));
    assert_eq!(target(1), ProxyTarget::Upstream("127.0.0.1:9009".into()));
    assert_eq!(target(2), ProxyTarget::Upstream("127.0.0.1:9009".into()));
    assert_eq!(target(3), ProxyTarget::Upstream("backend.test".into()));
    assert_eq!(
        cfg.http.upstreams.len(),
        4,
        "explicit + three implicit (shared by address)"
    );

    let b = cfg.upstream("backend").unwrap();
    assert!(!b.implicit);
    assert_eq!(
        (&b.balancer, &b.zone, b.all_failed),
        (&Balancer::RoundRobin, &None, AllFailed::Reject),
        "defaults"
    );
    assert!(b.servers.iter().all(|s| s.max_conns == 0));
    assert_eq!(
        (b.keepalive, b.keepalive_timeout, b.keepalive_requests),
        (8, secs(5), 50)
    );
    assert_eq!(b.keepalive_time, secs(10));
    let implicit = cfg.upstream("127.0.0.1:9009").unwrap();
    assert_eq!(implicit.keepalive_time, secs(3600), "nginx's default: 1h");
    let s = &b.servers;
    assert_eq!(
        (s[0].weight, s[0].max_fails, s[0].fail_timeout),
        (4, 3, secs(30))
    );
    assert_eq!(
        s[1].addrs,
        vec!["127.0.0.1:9002".parse::<SocketAddr>().unwrap()]
    );
    assert_eq!(s[1].text, "localhost:9002");
    assert!(s[1].backup && !s[1].down);
    assert_eq!(
        s[2].addrs,
        vec!["127.0.0.1:80".parse::<SocketAddr>().unwrap()]
    );
    assert!(s[2].down);
    assert_eq!(
        (s[2].weight, s[2].max_fails, s[2].fail_timeout),
        (1, 1, secs(10))
    );

    let i = cfg.upstream("127.0.0.1:9009").unwrap();
    assert!(i.implicit);
    assert_eq!(
        (&i.balancer, &i.zone, i.all_failed, i.servers[0].max_conns),
        (&Balancer::RoundRobin, &None, AllFailed::Reject, 0)
    );
    assert_eq!(
        (i.keepalive, i.keepalive_timeout, i.keepalive_requests),
        (0, secs(60), 1000)
    );
    assert_eq!(i.servers.len(), 1);
    assert_eq!(
        (
            i.servers[0].weight,
            i.servers[0].max_fails,
            i.servers[0].fail_timeout
        ),
        (1, 1, secs(10))
    );
    assert_eq!(i.origin.line, 5);
    let named = cfg.upstream("backend.test").unwrap();
    assert_eq!(
        named.servers[0].addrs,
        vec!["127.0.0.1:80".parse::<SocketAddr>().unwrap()]
    );
    let multi = cfg.upstream("multi.test:8080").unwrap();
    assert_eq!(multi.servers[0].addrs.len(), 2);
}

#[test]
fn servers_listens_names_locations() {
    let cfg = http(
        "server {
            server_name Example.COM www.example.com;
            listen 8080;
            listen 127.0.0.1:8081 default_server reuseport backlog=1024;
            listen [::1]:8082;
            location / {}
            location = /exact {}
            location ^~ /static/ {}
            location ~ \\.php$ {}
            location ~* \\.(png|jpg)$ {}
            location =/attached {}
        }
        server {}",
    );
    let s = &cfg.http.servers[0];
    assert_eq!(s.server_names, ["example.com", "www.example.com"]);
    let addrs: Vec<String> = s.listens.iter().map(|l| l.addr.to_string()).collect();
    assert_eq!(addrs, ["0.0.0.0:8080", "127.0.0.1:8081", "[::1]:8082"]);
    assert!(!s.listens[0].default_server && s.listens[0].backlog == 511);
    assert!(s.listens[1].default_server && s.listens[1].reuseport && s.listens[1].backlog == 1024);
    let m: Vec<&LocationMatch> = s.locations.iter().map(|l| &l.matcher).collect();
    assert_eq!(
        m,
        [
            &LocationMatch::Prefix("/".into()),
            &LocationMatch::Exact("/exact".into()),
            &LocationMatch::PrefixNoRegex("/static/".into()),
            &LocationMatch::Regex {
                pattern: "\\.php$".into(),
                case_insensitive: false
            },
            &LocationMatch::Regex {
                pattern: "\\.(png|jpg)$".into(),
                case_insensitive: true
            },
            &LocationMatch::Exact("/attached".into()),
        ]
    );
    let bare = &cfg.http.servers[1];
    assert_eq!(bare.listens[0].addr.to_string(), "0.0.0.0:80");
    assert!(bare.server_names.is_empty());
}

/// `listen unix:PATH`: the path kept, the address its key; `allow`/`deny unix:` rules kept
/// apart from address rules.
#[test]
fn unix_listens_and_access_rules() {
    use ringfront_config::unix_addr::{listen_key, UNIX_CLIENT};
    let cfg = http(
        "server {
            listen unix:/tmp/a.sock default_server backlog=7;
            location / { allow unix:; deny all; }
            location /v6 { deny ::/0; }
        }",
    );
    let s = &cfg.http.servers[0];
    let l = &s.listens[0];
    assert_eq!(l.unix.as_deref(), Some(std::path::Path::new("/tmp/a.sock")));
    assert_eq!(l.addr, listen_key(std::path::Path::new("/tmp/a.sock")));
    assert_eq!(l.name(), "unix:/tmp/a.sock");
    assert!(l.default_server && l.backlog == 7);
    let rules = |i: usize| s.locations[i].settings.access_rules.clone();
    let unix = UNIX_CLIENT.ip();
    let inet: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let [allow_unix, deny_all] = &rules(0)[..] else {
        panic!("two rules")
    };
    assert!(allow_unix.matches(unix) && !allow_unix.matches(inet));
    assert!(deny_all.matches(unix) && deny_all.matches(inet));
    let v6 = &rules(1)[0];
    assert!(!v6.matches(unix) && v6.matches("::1".parse().unwrap()));
}

#[test]
fn proxy_settings_and_units() {
    let cfg = http(
        "proxy_next_upstream error;
        proxy_next_upstream http_502 http_504 non_idempotent;
        proxy_next_upstream_tries 3;
        proxy_next_upstream_timeout 1m30s;
        proxy_http_version 1.0;
        keepalive_timeout 65 60;
        large_client_header_buffers 8 16k;
        server {
            location /off { proxy_next_upstream off; }
            location /plain { proxy_read_timeout 500ms; }
        }",
    );
    let s = &loc(&cfg, 0, &[1]).settings;
    let n = s.proxy_next_upstream;
    assert!(n.error && n.http_502 && n.http_504 && n.non_idempotent && !n.timeout && !n.off);
    assert_eq!(
        (s.proxy_next_upstream_tries, s.proxy_next_upstream_timeout),
        (3, secs(90))
    );
    assert_eq!(s.proxy_http_version, "1.0");
    assert_eq!(s.keepalive_timeout, secs(65));
    assert_eq!(s.large_client_header_buffers, (8, 16 << 10));
    assert_eq!(s.proxy_read_timeout, Duration::from_millis(500));
    let off = loc(&cfg, 0, &[0]).settings.proxy_next_upstream;
    assert_eq!(
        off,
        NextUpstream {
            off: true,
            error: false,
            timeout: false,
            ..NextUpstream::default()
        }
    );
}

#[test]
fn main_level_and_logs() {
    let cfg = parse(
        "worker_processes auto;
        worker_cpu_affinity 0001 0010 1000;
        daemon off;
        master_process off;
        pid run/ringfront.pid;
        error_log logs/error.log warn;
        error_log stderr;
        user nobody;
        worker_rlimit_nofile 65535;
        events { worker_connections 4096; use epoll; multi_accept on; }
        http {
            log_format main escape=json '$remote_addr '
                                        '\"$request\" $status';
            access_log /dev/stdout main;
            access_log logs/b.log;
            error_log logs/http-error.log;
            include mime.types;
            types { text/html html; }
            sendfile on;
            gzip off;
        }",
    )
    .unwrap();
    let m = &cfg.main;
    assert_eq!(m.worker_processes, WorkerProcesses::Auto);
    assert_eq!(m.worker_cpu_affinity, CpuAffinity::Masks(vec![1, 2, 8]));
    assert!(!m.daemon && !m.master_process);
    assert_eq!(m.pid, Some(PathBuf::from("/t/conf/run/ringfront.pid")));
    assert_eq!(
        m.error_log,
        vec![
            ErrorLog {
                path: Some("/t/conf/logs/error.log".into()),
                level: LogLevel::Warn
            },
            ErrorLog {
                path: None,
                level: LogLevel::Error
            },
        ]
    );
    assert_eq!(m.worker_connections, 4096);
    let formats = &cfg.http.log_formats;
    assert_eq!(
        formats.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        ["combined", "main"]
    );
    assert_eq!(
        formats[1].format.parts,
        vec![
            TemplatePart::Var(Variable::RemoteAddr),
            TemplatePart::Literal(" \"".into()),
            TemplatePart::Var(Variable::Request),
            TemplatePart::Literal("\" ".into()),
            TemplatePart::Var(Variable::Status),
        ]
    );
    let cfg2 = parse("events {}\nhttp { log_format main '$host'; access_log /dev/stdout main; access_log logs/b.log; server {} }")
        .unwrap();
    assert_eq!(
        cfg2.http.servers[0].settings.access_log,
        vec![
            AccessLog::File {
                path: "/dev/stdout".into(),
                format: "main".into(),
                condition: None,
            },
            AccessLog::File {
                path: "/t/conf/logs/b.log".into(),
                format: "combined".into(),
                condition: None,
            },
        ]
    );
    let auto = parse("worker_cpu_affinity auto;\nevents {}").unwrap();
    assert_eq!(auto.main.worker_cpu_affinity, CpuAffinity::Auto);
}

#[test]
fn root_is_relative_to_config_folder() {
    let cfg = http("server {\n location /a { root html2; }\n location /b { root /srv/www; }\n}");
    assert_eq!(
        loc(&cfg, 0, &[0]).settings.root,
        PathBuf::from("/t/conf/html2")
    );
    assert_eq!(loc(&cfg, 0, &[1]).settings.root, PathBuf::from("/srv/www"));
}

#[test]
fn no_http_block_is_an_empty_http() {
    let cfg = parse("events {}").unwrap();
    assert!(cfg.http.servers.is_empty() && cfg.http.upstreams.is_empty());
    assert_eq!(cfg.http.log_formats.len(), 1);
}

/// `proxy_pass` with variables is kept whole for the proxy to evaluate; nginx checks its
/// scheme and URI part only then, so a regex location may give it one.
#[test]
fn proxy_pass_with_variables() {
    let cfg = http(
        "server {
            location ~ ^/re { proxy_pass http://$arg_b/x; }
            location /s { proxy_pass https://$host; }
        }",
    );
    let pass = |i: usize| loc(&cfg, 0, &[i]).settings.proxy_pass.clone().unwrap();
    let ProxyTarget::Variables(t) = pass(0).target else {
        panic!("not a template: {:?}", pass(0));
    };
    assert_eq!(t.parts.len(), 3);
    assert_eq!((pass(0).uri, pass(0).tls), (None, false));
    assert!(pass(1).tls, "https:// written before the variable");
    assert!(cfg.http.upstreams.is_empty(), "no implicit group");
}

#[test]
fn error_page_forms_and_error_rules() {
    let cfg = http(
        "absolute_redirect off;
        server {
            location / {
                error_page 404 = /x?a=1;
                error_page 403 @named;
                error_page 500 =302 /e?$args;
                recursive_error_pages on;
                proxy_intercept_errors on;
                port_in_redirect off;
            }
        }",
    );
    let s = &loc(&cfg, 0, &[0]).settings;
    let pages: Vec<_> = s
        .error_pages
        .iter()
        .map(|p| (p.codes.clone(), p.overwrite, p.args.clone()))
        .collect();
    assert_eq!(
        pages,
        vec![
            (vec![404], Some(0), Some("a=1".to_string())),
            (vec![403], None, None),
            // A URI with variables splits at its `?` when evaluated.
            (vec![500], Some(302), None),
        ]
    );
    assert_eq!(s.error_pages[0].target, lit("/x"));
    assert_eq!(s.error_pages[1].target, lit("@named"));
    assert_eq!(s.error_pages[2].target.parts.len(), 2);
    let e = s.errors;
    assert!(e.recursive_error_pages && e.proxy_intercept_errors);
    assert!(!e.absolute_redirect && !e.port_in_redirect && !e.server_name_in_redirect);
    let d = ringfront_config::ErrorRules::default();
    assert!(d.absolute_redirect && d.port_in_redirect && !d.recursive_error_pages);
}
