//! Balancing methods, `zone`, `all_failed`, `max_conns`, host names resolved to every address,
//! and `proxy_next_upstream` with all its flags, as they reach the model.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::http;
use ringfront_config::{
    parse_str, AllFailed, Balancer, Config, MemoryHost, NextUpstream, OsHost, Template,
    TemplatePart, Upstream, Variable,
};

/// `http { BODY; server { location / { proxy_pass http://u; } } }`, upstream `u`.
fn group(body: &str) -> Upstream {
    let cfg = http(&format!(
        "upstream u {{\n{body}\n}}\nserver {{ location / {{ proxy_pass http://u; }} }}"
    ));
    cfg.upstream("u").unwrap().clone()
}

fn with(method: &str) -> Balancer {
    group(&format!("{method}\nserver 127.0.0.1;")).balancer
}

#[test]
fn methods() {
    assert_eq!(with(""), Balancer::RoundRobin);
    assert_eq!(with("ip_hash;"), Balancer::IpHash);
    assert_eq!(with("least_conn;"), Balancer::LeastConn);
    assert_eq!(
        with("hash $request_uri;"),
        Balancer::Hash {
            key: Template {
                parts: vec![TemplatePart::Var(Variable::RequestUri)]
            },
            consistent: false
        }
    );
    assert_eq!(
        with("hash $remote_addr$http_x_user consistent;"),
        Balancer::Hash {
            key: Template {
                parts: vec![
                    TemplatePart::Var(Variable::RemoteAddr),
                    TemplatePart::Var(Variable::Http("x_user".into())),
                ]
            },
            consistent: true
        }
    );
    assert_eq!(
        with("hash \"\";"),
        Balancer::Hash {
            key: Template::default(),
            consistent: false
        },
        "an empty key is valid nginx"
    );
    assert_eq!(
        with("hash user-$cookie_sid;"),
        Balancer::Hash {
            key: Template {
                parts: vec![
                    TemplatePart::Literal("user-".into()),
                    TemplatePart::Var(Variable::Cookie("sid".into())),
                ]
            },
            consistent: false
        }
    );
    let random = |two, least_conn| Balancer::Random { two, least_conn };
    assert_eq!(with("random;"), random(false, false));
    assert_eq!(with("random two;"), random(true, false));
    assert_eq!(with("random two least_conn;"), random(true, true));
    let least_time = |last_byte, inflight| Balancer::LeastTime {
        last_byte,
        inflight,
    };
    assert_eq!(with("least_time header;"), least_time(false, false));
    assert_eq!(with("least_time header inflight;"), least_time(false, true));
    assert_eq!(with("least_time last_byte;"), least_time(true, false));
    assert_eq!(
        with("least_time last_byte inflight;"),
        least_time(true, true)
    );
    assert_eq!(
        with("fair;"),
        least_time(false, false),
        "fair = least_time header"
    );
    // Anywhere in the block, before or after the servers.
    assert_eq!(
        group("server 127.0.0.1;\nleast_conn;").balancer,
        Balancer::LeastConn
    );
}

#[test]
fn the_last_method_wins() {
    // nginx warns "load balancing method redefined" and keeps the last one.
    assert_eq!(with("ip_hash;\nleast_conn;"), Balancer::LeastConn);
    assert_eq!(with("least_conn;\nip_hash;"), Balancer::IpHash);
    assert_eq!(with("ip_hash;\nip_hash;"), Balancer::IpHash);
    assert_eq!(
        with("hash $uri;\nrandom two;"),
        Balancer::Random {
            two: true,
            least_conn: false
        }
    );
}

#[test]
fn backup_with_methods() {
    for method in ["", "least_conn;", "least_time header;", "fair;"] {
        let u = group(&format!(
            "{method}\nserver 127.0.0.1 backup;\nserver 127.0.0.2;"
        ));
        assert!(u.servers[0].backup, "{method}");
    }
    // nginx 1.22 checks `backup` against the method in force when it reads the server line:
    // a method written after the backup server is accepted, backup kept.
    for method in ["ip_hash;", "hash $uri;", "hash $uri consistent;", "random;"] {
        let u = group(&format!(
            "server 127.0.0.1 backup;\nserver 127.0.0.2;\n{method}"
        ));
        assert!(u.servers[0].backup, "{method}");
        assert_ne!(u.balancer, Balancer::RoundRobin);
    }
    // A method that refuses backup, replaced by one that allows it before the server line.
    let u = group("ip_hash;\nleast_conn;\nserver 127.0.0.1 backup;\nserver 127.0.0.2;");
    assert_eq!(u.balancer, Balancer::LeastConn);
    assert!(u.servers[0].backup);
    // A down server counts as a primary one.
    let u = group("server 127.0.0.1 backup;\nserver 127.0.0.2 down;");
    assert!(u.servers[1].down);
}

#[test]
fn server_parameters_with_every_method() {
    for method in [
        "",
        "ip_hash;",
        "hash $uri;",
        "random two least_conn;",
        "least_conn;",
    ] {
        let u = group(&format!(
            "{method}\nserver 127.0.0.1 weight=2 max_fails=2 fail_timeout=3 down max_conns=3;"
        ));
        let s = &u.servers[0];
        assert_eq!(
            (s.weight, s.max_fails, s.fail_timeout, s.down, s.max_conns),
            (2, 2, Duration::from_secs(3), true, 3),
            "{method}"
        );
    }
}

#[test]
fn drain_with_every_method_and_the_last_of_down_and_drain_wins() {
    // nginx 1.29.6 keeps both in `peer->down`: the last word written is the server's state.
    for method in ["", "ip_hash;", "hash $uri;", "random;", "least_conn;"] {
        let u = group(&format!(
            "{method}\nserver 127.0.0.1 drain;\nserver 127.0.0.2 down drain;\n\
             server 127.0.0.3 drain down;"
        ));
        let s = &u.servers;
        let flags: Vec<(bool, bool)> = s.iter().map(|s| (s.down, s.drain)).collect();
        assert_eq!(
            flags,
            [(false, true), (false, true), (true, false)],
            "{method}"
        );
    }
}

#[test]
fn max_conns() {
    let u = group(
        "server 127.0.0.1 max_conns=0;
        server 127.0.0.2 max_conns=100;
        server 127.0.0.3;
        server 127.0.0.4 max_conns=4294967296;
        server 127.0.0.5 max_conns=9223372036854775807;
        server 127.0.0.6 max_conns=1 max_conns=2;",
    );
    let got: Vec<u32> = u.servers.iter().map(|s| s.max_conns).collect();
    assert_eq!(got, [0, 100, 0, u32::MAX, u32::MAX, 2]);
}

#[test]
fn zone_and_all_failed() {
    let u = group("zone backend 64k;\nserver 127.0.0.1;");
    assert_eq!(u.zone.as_deref(), Some("backend"));
    assert_eq!(u.all_failed, AllFailed::Reject);
    let u = group("zone a 64k;\nzone b 1m;\nall_failed revive;\nserver 127.0.0.1;");
    assert_eq!(u.zone.as_deref(), Some("b"), "the last zone line counts");
    assert_eq!(u.all_failed, AllFailed::Revive);
    assert_eq!(
        group("all_failed reject;\nserver 127.0.0.1;").all_failed,
        AllFailed::Reject
    );
    // A zone without a size, sized by another upstream (before or after), and a zone
    // shared by two upstreams with equal sizes written differently.
    let cfg = http(
        "upstream a { zone z; server 127.0.0.1; }
        upstream b { zone z 32k; server 127.0.0.1; }
        upstream c { zone y 64K; server 127.0.0.1; }
        upstream d { zone y 65536; server 127.0.0.1; }
        upstream e { zone Y 1m; server 127.0.0.1; }",
    );
    let zones: Vec<Option<&str>> = cfg
        .http
        .upstreams
        .iter()
        .map(|u| u.zone.as_deref())
        .collect();
    assert_eq!(
        zones,
        [Some("z"), Some("z"), Some("y"), Some("y"), Some("Y")]
    );
}

/// `localhost` with an IPv6 and an IPv4 address, in that order.
fn two_localhost() -> MemoryHost {
    let ips = ["::1".parse().unwrap(), "127.0.0.1".parse().unwrap()];
    MemoryHost::new().name("localhost", &ips)
}

#[test]
fn a_host_name_is_every_address() {
    let cfg = parse_str(
        "events {}
        http {
            upstream u { server localhost:9001 weight=3 max_conns=7; }
            server { location / { proxy_pass http://u; } location /i { proxy_pass http://localhost:9002; } }
        }",
        Path::new(common::FILE),
        &two_localhost(),
    )
    .unwrap();
    let s = &cfg.upstream("u").unwrap().servers[0];
    assert_eq!(s.text, "localhost:9001");
    let addrs: Vec<String> = s.addrs.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        addrs,
        ["127.0.0.1:9001", "[::1]:9001"],
        "IPv4 first, as nginx"
    );
    assert_eq!(
        (s.weight, s.max_conns),
        (3, 7),
        "one set of parameters for all"
    );
    let implicit = &cfg.upstream("localhost:9002").unwrap().servers[0];
    assert_eq!(implicit.addrs.len(), 2);
}

#[test]
fn localhost_with_the_system_resolver() {
    let cfg: Config = parse_str(
        "events {}\nhttp { upstream u { server localhost:9003; } }",
        Path::new(common::FILE),
        &OsHost,
    )
    .unwrap();
    let addrs = &cfg.upstream("u").unwrap().servers[0].addrs;
    let v4: SocketAddr = "127.0.0.1:9003".parse().unwrap();
    assert!(addrs.contains(&v4), "{addrs:?}");
    assert!(
        addrs
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 9003),
        "{addrs:?}"
    );
    assert_eq!(addrs[0], v4, "IPv4 first: {addrs:?}");
}

#[test]
fn next_upstream_every_flag_and_inheritance() {
    let cfg = http(
        "proxy_next_upstream error timeout invalid_header http_500 http_502 http_503 http_504
                            http_403 http_404 http_429 non_idempotent;
        proxy_next_upstream_tries 5;
        proxy_next_upstream_timeout 30s;
        server {
            proxy_next_upstream_tries 2;
            location /inherit {}
            location /own {
                proxy_next_upstream HTTP_502 Error error;
                proxy_next_upstream updating;
                proxy_next_upstream_timeout 1500ms;
            }
            location /off { proxy_next_upstream off error; }
            location /off2 { proxy_next_upstream error; proxy_next_upstream off; }
        }
        server {}",
    );
    let s0 = &cfg.http.servers[0];
    let all = NextUpstream {
        error: true,
        timeout: true,
        invalid_header: true,
        http_500: true,
        http_502: true,
        http_503: true,
        http_504: true,
        http_403: true,
        http_404: true,
        http_429: true,
        non_idempotent: true,
        off: false,
    };
    let inherit = &s0.locations[0].settings;
    assert_eq!(inherit.proxy_next_upstream, all);
    assert_eq!(
        (
            inherit.proxy_next_upstream_tries,
            inherit.proxy_next_upstream_timeout
        ),
        (2, Duration::from_secs(30)),
        "tries from the server, timeout from http"
    );
    let own = &s0.locations[1].settings;
    assert_eq!(
        own.proxy_next_upstream,
        NextUpstream {
            error: true,
            timeout: false,
            http_502: true,
            ..NextUpstream {
                error: false,
                timeout: false,
                ..NextUpstream::default()
            }
        },
        "a level that writes the directive replaces the outer flags; case-insensitive"
    );
    assert_eq!(
        (
            own.proxy_next_upstream_tries,
            own.proxy_next_upstream_timeout
        ),
        (2, Duration::from_millis(1500))
    );
    let off = NextUpstream {
        error: false,
        timeout: false,
        off: true,
        ..NextUpstream::default()
    };
    assert_eq!(s0.locations[2].settings.proxy_next_upstream, off);
    assert_eq!(s0.locations[3].settings.proxy_next_upstream, off);
    let s1 = &cfg.http.servers[1].settings;
    assert_eq!(s1.proxy_next_upstream, all);
    assert_eq!(
        (s1.proxy_next_upstream_tries, s1.proxy_next_upstream_timeout),
        (5, Duration::from_secs(30))
    );
}
