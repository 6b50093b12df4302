//! The rewrite module against real nginx on the same configuration: `set` and variables in
//! bodies and headers, `rewrite` with captures and each flag at server and location level,
//! arguments kept, replaced and dropped, redirects, `last` loops cut at 10 changes, `if`
//! with every kind of condition, `break`, `return` in order with them, the URI sent
//! upstream after `rewrite ... break` and `last`, and `internal` locations reached by a
//! rewrite.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn config(p: u16, backend: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        set $srv "s";
        rewrite ^/old/(.*)$ /new/$1 last;
        rewrite ^/perm/(.*)$ /target/$1 permanent;
        rewrite ^/temp/(.*)$ http://example.com/$1;
        rewrite ^/redir/(.*)$ /r/$1 redirect;
        rewrite ^/redirq/(.*)$ /r/$1?z=1 redirect;
        rewrite ^/drop/(.*)$ /new/$1? last;
        rewrite ^/withargs/(.*)$ /new/x?a=$1 last;
        if ($http_x_block) {
            return 403;
        }
        if ($arg_go = away) {
            return 302 /gone;
        }
        location /new/ {
            set $who "new";
            return 200 "new uri=$uri args=$args is=$is_args req=$request_uri who=$who srv=$srv\n";
        }
        location /loop/ {
            rewrite ^/loop/(.*)$ /loop/x$1;
        }
        location /loop2 {
            rewrite ^ /loop2 last;
        }
        location /count/ {
            rewrite "^/count/(x{0,8})$" /count/$1x last;
            return 200 "count $uri\n";
        }
        location ~ ^/cap/(?<first>[a-z]+)/(\d+)$ {
            return 200 "cap $1 $2 first=$first\n";
        }
        location /p/ {
            rewrite ^/p/(.*)$ /q/$1 break;
            proxy_pass http://127.0.0.1:{BACKEND}/ignored/;
        }
        location /pp/ {
            proxy_pass http://127.0.0.1:{BACKEND}/base/;
        }
        location /plain/ {
            rewrite ^/plain/(.*)$ /other/$1?k=v break;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /tolast/ {
            rewrite ^/tolast/(.*)$ /pp/$1 last;
        }
        location /flagless/ {
            rewrite ^/flagless/(.*)$ /pp/$1;
            set $unused "1";
        }
        location /if/ {
            set $a "";
            if ($arg_x) {
                set $a "x-set";
            }
            if ($arg_y != no) {
                set $a "${a}+y";
            }
            if ($http_user_agent ~* "^curl/(\d+)") {
                return 200 "curl $1 a=$a\n";
            }
            if ($uri !~ "^/if/keep") {
                return 200 "not keep a=$a\n";
            }
            return 200 "keep a=$a\n";
        }
        location /hdr/ {
            set $tag "t-$arg_v";
            add_header X-Tag $tag;
            return 200 "tag\n";
        }
        location /unset/ {
            return 200 "[$never]\n";
        }
        location /late/ {
            set $never "late";
            return 200 "late\n";
        }
        location /args/ {
            set $args "q=1";
            return 200 "args=$args is=$is_args\n";
        }
        location /break/ {
            set $v "1";
            break;
            return 200 "not reached\n";
        }
        location /order/ {
            return 200 "first\n";
            rewrite ^ /new/never last;
        }
        location /secret/ {
            internal;
            return 200 "secret $uri\n";
        }
        location /open/ {
            rewrite ^/open/(.*)$ /secret/$1 last;
        }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name other;
        rewrite ^/(.*)$ /moved/$1 break;
        return 200 "not reached\n";
        location /moved/ {
            return 200 "moved $uri\n";
        }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name ret;
        return 301 https://example.org$request_uri;
        location / {
            return 200 "never\n";
        }
    }
}
"#,
        &[("PORT", p.to_string()), ("BACKEND", backend.to_string())],
    )
}

/// (Host, target, extra header fields).
type Request = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

const REQUESTS: &[Request] = &[
    ("localhost", "/old/abc?k=1", &[]),
    ("localhost", "/perm/p?k=1", &[]),
    ("localhost", "/temp/t?k=1", &[]),
    ("localhost", "/redir/r", &[]),
    ("localhost", "/redirq/r?k=1", &[]),
    ("localhost", "/drop/d?k=1", &[]),
    ("localhost", "/withargs/w?k=1", &[]),
    ("localhost", "/withargs/w", &[]),
    ("localhost", "/new/", &[("X-Block", "1")]),
    ("localhost", "/new/?go=away", &[]),
    ("localhost", "/loop/a", &[]),
    ("localhost", "/loop2", &[]),
    ("localhost", "/count/", &[]),
    ("localhost", "/count/xx", &[]),
    ("localhost", "/cap/abc/42", &[]),
    ("localhost", "/p/one?k=1", &[]),
    ("localhost", "/pp/two?k=1", &[]),
    ("localhost", "/plain/three?k=1", &[]),
    ("localhost", "/tolast/four?k=1", &[]),
    ("localhost", "/flagless/five", &[]),
    ("localhost", "/if/keep?x=1", &[]),
    ("localhost", "/if/keep?y=no", &[]),
    ("localhost", "/if/other?x=0&y=no", &[]),
    ("localhost", "/if/keep", &[("User-Agent", "CURL/8.1")]),
    ("localhost", "/hdr/?v=9", &[]),
    ("localhost", "/unset/", &[]),
    ("localhost", "/args/?a=b", &[]),
    ("localhost", "/break/", &[]),
    ("localhost", "/order/", &[]),
    ("localhost", "/secret/x", &[]),
    ("localhost", "/open/y", &[]),
    ("other", "/a/b?c=d", &[]),
    ("ret", "/x?y=1", &[]),
];

/// Status, Location (its port made neutral), X-Tag, body — and for proxied requests the
/// target the backend received.
fn answers(p: u16, b: &Backend) -> Vec<String> {
    REQUESTS
        .iter()
        .map(|(host, path, headers)| {
            // nginx closes the connection after a 500.
            let mut c = Client::connect(("127.0.0.1", p));
            let mut h = vec![("Host", *host)];
            h.extend_from_slice(headers);
            let before = b.requests().len();
            let r = c.request("GET", path, &h, b"");
            let reqs = b.requests();
            let upstream = match reqs.get(before..) {
                Some([one]) => format!("upstream {}", one.target),
                // ringfront's pages name ringfront where nginx's name nginx.
                _ => r
                    .text()
                    .replace("<center>ringfront</center>", "<center>nginx</center>"),
            };
            let location = r.header("Location").unwrap_or("-");
            let location = location.replace(&format!(":{p}"), ":PORT");
            let tag = r.header("X-Tag").unwrap_or("-");
            let conn = r.header("Connection").unwrap_or("-");
            format!("{} {location} {tag} {conn} {upstream}", r.status)
        })
        .collect()
}

#[test]
fn rewrite_matches_nginx() {
    let b = Backend::start();
    let bp = b.port();
    let (_n, _r, np, rp) = common::nginx_and_ringfront(|p| config(p, bp));
    let n = answers(np, &b);
    let r = answers(rp, &b);
    for (i, (a, x)) in n.iter().zip(&r).enumerate() {
        let mark = if a == x { " " } else { "!" };
        println!("{mark} {:?}\n  nginx: {a:?}\n     rf: {x:?}", REQUESTS[i]);
    }
    assert_eq!(r, n);
    // The oracle exercised the cases.
    assert!(n[0].contains("new uri=/new/abc args=k=1"), "{n:?}");
    assert!(n[15].contains("upstream /q/one?k=1"), "{n:?}");
    assert!(n[10].starts_with("500 "), "{n:?}");
}
