//! An upstream's `X-Accel-Redirect` against real nginx on the same configuration (each
//! server proxies to itself, as nginx's proxy_xar.t): the internal redirect to a URI (its
//! arguments split off, escapes decoded, unsafe values refused with 404) or a named
//! location; the method made GET (HEAD kept, a named location's kept); the fields nginx
//! keeps on the redirect (`Content-Type`, `Set-Cookie`, `Content-Disposition`,
//! `Cache-Control`, `Expires`, `Accept-Ranges`) sent with a `return`, a static file, an
//! error page and a second proxied response, others dropped; `$upstream_http_*` and
//! `$upstream_status` of the redirecting response in the redirected request and in the
//! access log; the 10-redirect limit; `proxy_ignore_headers X-Accel-Redirect`; and
//! `proxy_set_body` sent again after a redirect to another proxied location.

mod common;

use common::fill;
use ringfront_testkit::{Client, MaskPort};

fn files(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-xar-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("static")).expect("test folder");
    std::fs::write(dir.join("static/file.txt"), b"static file\n").expect("file");
    std::fs::write(dir.join("static/page.html"), b"<p>html</p>\n").expect("file");
    dir
}

fn config(p: u16, root: &std::path::Path, log: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
error_log {ERRLOG} error;
events { worker_connections 64; }
http {
    server_tokens off;
    default_type text/plain;
    types { text/html html; }
    log_format xar "$request_method $request_uri uri=$uri status=$status xar=$upstream_http_x_accel_redirect ups=$upstream_status";
    access_log {LOG} xar;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {ROOT};

        location /px/ {
            proxy_pass http://127.0.0.1:{PORT}/xar/;
        }
        location /ign/ {
            proxy_pass http://127.0.0.1:{PORT}/xar/;
            proxy_ignore_headers X-Accel-Redirect;
        }
        location /pxargs/ {
            proxy_pass http://127.0.0.1:{PORT}/xarargs/;
        }
        location /loop/ {
            proxy_pass http://127.0.0.1:{PORT}/xarloop/;
        }
        location /pxcookie/ {
            proxy_pass http://127.0.0.1:{PORT}/xar/;
            proxy_cookie_path /old/ /new/;
        }
        location /pxpage {
            proxy_pass http://127.0.0.1:{PORT}/echo;
            proxy_set_body "sent again $arg_b";
        }
        location /echo {
            access_log off;
            add_header X-Body "$request_method $request_body";
            proxy_pass http://127.0.0.1:{PORT}/back/;
        }

        location /xar/ {
            access_log off;
            add_header X-Accel-Redirect $arg_xar;
            add_header Content-Type text/blah;
            add_header Set-Cookie a=1;
            add_header Set-Cookie "b=2; path=/old/x";
            add_header Content-Disposition attachment;
            add_header Cache-Control no-cache;
            add_header Expires fake;
            add_header Accept-Ranges parrots;
            add_header Something other;
            add_header X-Accel-Buffering no;
            return 204;
        }
        location /xarargs/ {
            access_log off;
            add_header X-Accel-Redirect "/page?a=1&b=$arg_b";
            return 204;
        }
        location /pxset/ {
            proxy_pass http://127.0.0.1:{PORT}/xarset/;
        }
        location /xarset/ {
            access_log off;
            add_header X-Accel-Redirect "/pxpage?b=$arg_b";
            return 204;
        }
        location /xarloop/ {
            access_log off;
            add_header X-Accel-Redirect /loop/again;
            return 204;
        }

        location = /page {
            add_header X-Page yes;
            return 200 "page uri=$uri args=$args m=$request_method xar=$upstream_http_x_accel_redirect ups=$upstream_status body=$request_body\n";
        }
        location /static/ {
            error_page 404 /page;
        }
        location /static404/ {
            root {ROOT}/none;
        }
        location /back/ {
            access_log off;
            add_header Set-Cookie c=3;
            add_header X-Back yes;
            return 200 "second upstream\n";
        }
        location /toback {
            proxy_pass http://127.0.0.1:{PORT}/back/;
        }
        location @named {
            return 200 "named uri=$uri args=$args m=$request_method xar=$upstream_http_x_accel_redirect\n";
        }
        location / {
            return 200 "other uri=$uri args=$args m=$request_method\n";
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("ROOT", root.display().to_string()),
            ("LOG", log.display().to_string()),
            ("ERRLOG", log.with_extension("err").display().to_string()),
        ],
    )
}

/// (method, path, body).
const REQUESTS: &[(&str, &str, &str)] = &[
    ("GET", "/px/a?xar=/page", ""),
    ("POST", "/px/a?xar=/page", "data"),
    ("HEAD", "/px/a?xar=/page", ""),
    ("GET", "/px/a?xar=/page%3Fq", ""),
    ("GET", "/px/a?xar=/pa%67e", ""),
    ("GET", "/px/a?xar=/foo%20bar", ""),
    ("GET", "/pxargs/a?b=2", ""),
    ("GET", "/px/a?xar=..", ""),
    ("GET", "/px/a?xar=/foo/..", ""),
    ("GET", "/px/a?xar=/foo/.%2e", ""),
    ("GET", "/px/a?xar=/foo/../page", ""),
    ("GET", "/px/a?xar=@named", ""),
    ("POST", "/px/a?xar=@named", "data"),
    ("GET", "/px/a?xar=@nowhere", ""),
    ("GET", "/px/a?xar=/static/file.txt", ""),
    ("GET", "/px/a?xar=/static/page.html", ""),
    ("GET", "/px/a?xar=/static/missing", ""),
    ("GET", "/px/a?xar=/static404/x", ""),
    ("GET", "/px/a?xar=/toback", ""),
    ("GET", "/pxcookie/a?xar=/page", ""),
    ("POST", "/pxset/a?b=7", "client body"),
    ("GET", "/ign/a?xar=/page", ""),
    ("GET", "/loop/x", ""),
];

/// Status, the header fields but `Date` and `Server` (by name: ringfront's relayed heads
/// keep the upstream's order, nginx's put its own fields first; same-name fields in order)
/// and the body (a built-in page's, which names the server, as "builtin").
fn shown(r: &ringfront_testkit::Response) -> String {
    let builtin = r.text().contains("<hr><center>");
    let mut headers: Vec<(String, &str)> = r
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("date") && !n.eq_ignore_ascii_case("server"))
        .filter(|(n, _)| !(builtin && n.eq_ignore_ascii_case("content-length")))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.as_str()))
        .collect();
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    let headers: Vec<String> = headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    let body = match builtin {
        true => "builtin".to_string(),
        false => r.text().trim_end().to_string(),
    };
    format!("{} [{}] {body}", r.status, headers.join(" | "))
}

fn answers(p: u16) -> Vec<String> {
    REQUESTS
        .iter()
        .map(|(method, path, body)| {
            let mut c = Client::connect(("127.0.0.1", p));
            let r = c.request(method, path, &[("Connection", "close")], body.as_bytes());
            format!("{method} {path} -> {}", shown(&r))
        })
        .collect()
}

#[test]
fn accel_redirects_match_nginx() {
    let root = files("diff");
    let (nlog, rlog) = (root.join("nginx.log"), root.join("ringfront.log"));
    let (np, rp) = (common::port(), common::port());
    let n = ringfront_testkit::Nginx::start(&config(np, &root, &nlog), np);
    let r = ringfront_testkit::Ringfront::start(&config(rp, &root, &rlog));
    let nginx = answers(np);
    let ours = answers(rp);
    // One access-log line per client request (the self-proxied ones are off).
    let nginx_log = common::log_lines(&nlog, REQUESTS.len());
    let ours_log = common::log_lines(&rlog, REQUESTS.len());
    drop((n, r));
    common::assert_same("X-Accel-Redirect", &nginx, &ours);
    common::assert_same("X-Accel-Redirect access log", &nginx_log, &ours_log);
    // The unsafe values' error-log lines, ports aside.
    let unsafe_lines = |log: &std::path::Path, p: u16| -> Vec<String> {
        let text = std::fs::read_to_string(log.with_extension("err")).unwrap_or_default();
        text.lines()
            .filter_map(|l| l.split_once("unsafe URI"))
            .map(|(_, rest)| rest.mask_port(p))
            .collect()
    };
    let nginx_unsafe = unsafe_lines(&nlog, np);
    common::assert_same("unsafe URI lines", &nginx_unsafe, &unsafe_lines(&rlog, rp));
    assert_eq!(nginx_unsafe.len(), 4, "{nginx_unsafe:#?}");
    // The oracle exercised the cases.
    let has = |want: &str| nginx.iter().any(|a| a.contains(want));
    for want in [
        "page uri=/page args= m=GET xar=/page ups=204",
        "content-type: text/blah",
        "set-cookie: b=2; path=/new/x",
        "page uri=/page args=a=1&b=2",
        "other uri=/page?q",
        "other uri=/foo bar",
        "-> 404 [",
        "named uri=/px/a args=xar=@named m=POST xar=@named",
        "static file",
        "second upstream",
        "x-body: GET sent again 7",
        "something: other",
        "-> 500 [",
    ] {
        assert!(has(want), "{want}: {nginx:#?}");
    }
    assert!(!nginx[0].contains("something"), "{}", nginx[0]);
    let _ = std::fs::remove_dir_all(&root);
}

/// `X-Accel-Limit-Rate` with the redirect: the rate stays the request's in the redirected
/// location (whose `limit_rate 0` does not lift it), unless `proxy_ignore_headers` names
/// it. 30000 bytes at 10000 B/s take two seconds, in nginx and ringfront alike.
#[test]
fn accel_limit_rate_survives_the_redirect() {
    let root = files("rate");
    std::fs::write(root.join("static/big"), vec![b'x'; 30000]).expect("file");
    let config = |p: u16| {
        fill(
            r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        root {ROOT};
        location /limited/ { proxy_pass http://127.0.0.1:{PORT}/xarrate/; }
        location /ignored/ {
            proxy_pass http://127.0.0.1:{PORT}/xarrate/;
            proxy_ignore_headers X-Accel-Limit-Rate;
        }
        location /xarrate/ {
            add_header X-Accel-Redirect /static/big;
            add_header X-Accel-Limit-Rate 10000;
            return 204;
        }
        location /static/ { limit_rate 0; }
    }
}
"#,
            &[
                ("PORT", p.to_string()),
                ("ROOT", root.display().to_string()),
            ],
        )
    };
    let timed = |p: u16, path: &str| {
        let t = std::time::Instant::now();
        let r = ringfront_testkit::http::get(("127.0.0.1", p), path);
        assert_eq!((r.status, r.body.len()), (200, 30000), "{path}");
        t.elapsed()
    };
    let (np, rp) = (common::port(), common::port());
    let n = ringfront_testkit::Nginx::start(&config(np), np);
    let r = ringfront_testkit::Ringfront::start(&config(rp));
    for p in [np, rp] {
        let limited = timed(p, "/limited/a");
        assert!(limited.as_millis() >= 1500, "{p}: {limited:?}");
        let ignored = timed(p, "/ignored/a");
        assert!(ignored.as_millis() < 1000, "{p}: {ignored:?}");
    }
    drop((n, r));
    let _ = std::fs::remove_dir_all(&root);
}
