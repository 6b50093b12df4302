//! Differential: variables against real nginx 1.22 — `$request_body`, `$content_length`,
//! `$content_type`, `$arg_` (and `$arg_NAME` needing `NAME=`), `$upstream_*` (the lists,
//! `$upstream_http_*`, `$upstream_cookie_*`, the byte counts) in `add_header` of proxied
//! responses and in the access log, `$sent_http_*` (joined `Cache-Control`),
//! `$request_length`, `$connections_*` and `$connection_time`. The same configuration runs
//! on both; per request the status, the `X-*` fields and the body must agree, then the
//! access logs line for line.

mod common;

use common::fill;
use ringfront_testkit::{After, Client, MaskPort, RawBackend, Response};

const CONFIG: &str = r#"worker_processes 1;
events { worker_connections 64; }
http {
    log_format v '$uri|$status|$request_length|$request_body|'
                 '$content_length|$content_type|$upstream_status|$upstream_response_length|'
                 '$upstream_bytes_received|$upstream_bytes_sent|$upstream_http_x_up|'
                 '$upstream_cookie_sid|$sent_http_cache_control|$sent_http_content_type|'
                 '$sent_http_x_up|$arg_a|$binary_remote_addr|$upstream_cache_status';
    access_log {LOG} v;
    # ringfront's default is 1.1 (documented); the byte counts compare on nginx's.
    proxy_http_version 1.0;
    upstream up { server 127.0.0.1:{UP}; }
    upstream two { server 127.0.0.1:{DEAD}; server 127.0.0.1:{UP}; }
    upstream dead { server 127.0.0.1:{DEAD}; }
    map $uri $kept { /m1 first; default other; }
    map $uri $fresh { volatile; /m1 first; default other; }
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        location /body {
            add_header X-Body "$request_body";
            add_header X-CL "$content_length";
            add_header X-CT "$content_type";
            add_header X-File "$request_body_file";
            proxy_pass http://up;
        }
        location /file {
            client_body_in_file_only clean;
            add_header X-Body "$request_body";
            add_header X-CL "$content_length";
            proxy_pass http://up;
        }
        location /arg {
            return 200 "$arg_l:$arg_:$arg_x:$arg_y";
        }
        location /up {
            add_header X-IP $upstream_addr;
            add_header X-St $upstream_status;
            add_header X-UH $upstream_http_x_up;
            add_header X-UC $upstream_cookie_sid;
            add_header X-UC2 $upstream_cookie_other;
            add_header X-SU $sent_http_x_up;
            proxy_pass http://up;
        }
        location /two {
            add_header X-IP $upstream_addr;
            add_header X-St $upstream_status;
            proxy_pass http://two;
        }
        location /dead {
            add_header X-IP $upstream_addr always;
            add_header X-St $upstream_status always;
            proxy_pass http://dead;
        }
        # A map's first value is kept for the request (internal redirects too), unless
        # `volatile`.
        location /m1 {
            set $a "$kept $fresh";
            rewrite ^ /m2 last;
        }
        location /m2 {
            return 200 "$a|$kept $fresh\n";
        }
        location /cc {
            add_header Cache-Control max-age=3600;
            add_header Cache-Control private;
            add_header X-Sent-CC $sent_http_cache_control;
            add_header X-Sent-None $sent_http_x_none;
            return 200 "cc\n";
        }
        location /conn {
            return 200 "$connections_active $connections_reading $connections_writing $connections_waiting\n";
        }
        location /lit {
            add_header X-PH $proxy_host;
            add_header X-PP $proxy_port;
            proxy_pass http://127.0.0.1:{UP};
        }
        location /grp {
            add_header X-PH $proxy_host;
            add_header X-PP $proxy_port;
            proxy_pass http://up;
        }
        location /hdr {
            return 200 "$http_cookie|$cookie_b|$cookie_A|$cookie_c|$http_x_forwarded_for|$proxy_add_x_forwarded_for\n";
        }
        location /id {
            add_header X-Id $request_id;
            return 200 "$request_id $hostname\n";
        }
        location /time {
            add_header X-Time "$connection_requests:$connection_time";
            return 204;
        }
    }
}
"#;

const UPSTREAM: &str = "HTTP/1.1 200 OK\r\nX-Up: up-value\r\nSet-Cookie: sid = s1; Path=/\r\n\
    Set-Cookie: other=o2\r\nCache-Control: no-cache\r\nContent-Type: text/x-up\r\n\
    Content-Length: 5\r\n\r\nhello";

/// (method, path, extra fields, body)
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [u8],
);

const CASES: &[Case] = &[
    ("GET", "/body", &[], b""),
    (
        "POST",
        "/body",
        &[("Content-Type", "text/x-mine")],
        b"0123456789",
    ),
    ("POST", "/file", &[], b"0123456789"),
    (
        "POST",
        "/body",
        &[("Transfer-Encoding", "chunked")],
        b"4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n",
    ),
    ("GET", "/arg?l=42&x&y=", &[], b""),
    ("GET", "/up?a=1", &[], b""),
    ("GET", "/two", &[], b""),
    ("GET", "/dead", &[], b""),
    ("GET", "/cc", &[], b""),
    ("GET", "/m1", &[], b""),
    ("GET", "/conn", &[], b""),
    ("GET", "/lit", &[], b""),
    ("GET", "/grp", &[], b""),
    (
        "GET",
        "/hdr",
        &[
            ("Cookie", "a=1; B = 2 ;x"),
            ("X-Forwarded-For", "10.0.0.1"),
            ("Cookie", "c=3,d=4"),
            ("X-Forwarded-For", "10.0.0.2"),
        ],
        b"",
    ),
];

/// What is compared of one response: the status, the `X-*` fields (sorted) and the body.
fn seen(r: &Response, port: u16, dead: u16, up: u16) -> (u16, Vec<(String, String)>, String) {
    let norm = |s: &str| {
        s.replace("nginx/1.22.1", "TOKEN")
            .replace(concat!("ringfront/", env!("CARGO_PKG_VERSION")), "TOKEN")
            .mask_port(port)
            .mask_port_as(dead, "DEAD")
            .mask_port_as(up, "UP")
    };
    let mut fields: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(n, _)| n.to_ascii_lowercase().starts_with("x-"))
        .map(|(n, v)| (n.to_ascii_lowercase(), norm(v)))
        .collect();
    fields.sort();
    (r.status, fields, norm(&String::from_utf8_lossy(&r.body)))
}

#[test]
fn variables_match_nginx() {
    let up = RawBackend::start(UPSTREAM.as_bytes(), After::Keep);
    let dead = ringfront_testkit::free_port();
    let config = |p: u16| {
        fill(
            CONFIG,
            &[
                ("PORT", p.to_string()),
                ("UP", up.port().to_string()),
                ("DEAD", dead.to_string()),
                ("LOG", common::access_log_path(p).display().to_string()),
            ],
        )
    };
    let (n, r, np, rp) = common::nginx_and_ringfront(config);
    let mut answers = Vec::new();
    let mut hosts = Vec::new();
    for p in [np, rp] {
        let mut c = Client::connect(("127.0.0.1", p));
        let got: Vec<_> = CASES
            .iter()
            .map(|(m, path, fields, body)| {
                seen(&c.request(m, path, fields, body), p, dead, up.port())
            })
            .collect();
        // `$request_id`: one value per request, in both places; `$hostname` as nginx's.
        let r = c.request("GET", "/id", &[], b"");
        let body = String::from_utf8_lossy(&r.body).into_owned();
        let (id, host) = body.trim_end().split_once(' ').unwrap_or_default();
        assert_eq!(r.header("X-Id"), Some(id), "{body}");
        assert!(
            id.len() == 32
                && id
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{id}"
        );
        hosts.push(host.to_string());
        // `$connection_time` moves: its shape is checked, then it is left out.
        let t = c.request("GET", "/time", &[], b"");
        let time = t.header("X-Time").unwrap_or_default().to_string();
        let (reqs, secs) = time.split_once(':').unwrap_or_default();
        assert_eq!(reqs, (CASES.len() + 2).to_string(), "{time}");
        let (whole, ms) = secs.split_once('.').unwrap_or_default();
        assert!(
            whole.parse::<u64>().is_ok() && ms.len() == 3 && ms.parse::<u32>().is_ok(),
            "{time}"
        );
        answers.push(got);
    }
    assert_eq!(hosts[0], hosts[1]);
    for (i, (a, b)) in answers[0].iter().zip(&answers[1]).enumerate() {
        assert_eq!(a, b, "{:?}", CASES[i]);
    }
    // The cases say what they should: spot checks on nginx's answers.
    let nginx = &answers[0];
    assert!(
        !nginx[2].1.iter().any(|(n, _)| n == "x-body"),
        "{:?}",
        nginx[2]
    );
    assert!(
        nginx[1].1.contains(&("x-body".into(), "0123456789".into())),
        "{:?}",
        nginx[1]
    );
    // A chunked body: `$content_length` is its length once read.
    assert!(
        nginx[3].1.contains(&("x-cl".into(), "10".into())),
        "{:?}",
        nginx[3]
    );
    assert_eq!(nginx[4].2, "42:::");
    // `$sent_http_*` in `add_header`: the fields before it (the upstream's, earlier ones).
    assert!(
        nginx[5].1.contains(&("x-su".into(), "up-value".into())),
        "{:?}",
        nginx[5]
    );
    assert!(
        nginx[8]
            .1
            .contains(&("x-sent-cc".into(), "max-age=3600, private".into())),
        "{:?}",
        nginx[8]
    );
    assert!(
        nginx[5].1.contains(&("x-uc".into(), "s1".into())),
        "{:?}",
        nginx[5]
    );
    assert!(
        nginx[6].1.contains(&("x-st".into(), "502, 200".into())),
        "{:?}",
        nginx[6]
    );
    assert!(
        nginx[7]
            .1
            .contains(&("x-ip".into(), "127.0.0.1:DEAD".into())),
        "{:?}",
        nginx[7]
    );
    assert_eq!(nginx[9].2, "first first|first other\n");
    assert_eq!(nginx[10].2, "1 0 1 0\n");
    assert!(
        nginx[11].1.contains(&("x-pp".into(), "UP".into())),
        "{:?}",
        nginx[11]
    );
    assert!(
        nginx[12].1.contains(&("x-pp".into(), "80".into())),
        "{:?}",
        nginx[12]
    );
    assert_eq!(
        nginx[13].2,
        "a=1; B = 2 ;x; c=3,d=4|2 |1|3,d=4|10.0.0.1, 10.0.0.2|10.0.0.1, 10.0.0.2, 127.0.0.1\n"
    );

    drop(n);
    r.signal(ringfront_testkit::SIGQUIT);
    assert!(r.wait_exit(std::time::Duration::from_secs(10)).is_some());
    let read = |p: u16| std::fs::read_to_string(common::access_log_path(p)).unwrap_or_default();
    let (nginx, ours) = (read(np), read(rp));
    for p in [np, rp] {
        let _ = std::fs::remove_file(common::access_log_path(p));
    }
    let norm = |s: &str| s.mask_port_as(dead, "DEAD");
    let (nginx, ours) = (norm(&nginx), norm(&ours));
    for (a, b) in nginx.lines().zip(ours.lines()) {
        assert_eq!(b, a);
    }
    assert_eq!(ours.lines().count(), nginx.lines().count(), "{ours}");
    // The body counted in `$request_length`; per-try lists; joined `Cache-Control`.
    assert!(
        nginx.contains("/body|200|103|0123456789|10|text/x-mine|"),
        "{nginx}"
    );
    assert!(
        nginx.contains("/dead|502|45|-|-|-|502|0|0|0|-|-|-|text/html|"),
        "{nginx}"
    );
    assert!(nginx.contains("|502, 200|0, 5|0, 161|0, 51|"), "{nginx}");
    assert!(nginx.contains("|max-age=3600, private|"), "{nginx}");
}
