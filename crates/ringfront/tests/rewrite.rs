//! The rewrite module against real nginx on the same configuration: `set` and variables in
//! bodies and headers, `rewrite` with captures and each flag at server and location level,
//! arguments kept, replaced and dropped, redirects, `last` loops cut at 10 changes, `if`
//! with every kind of condition, `break`, `return` in order with them, the URI sent
//! upstream after `rewrite ... break` and `last`, and `internal` locations reached by a
//! rewrite.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

/// A folder with a file `file` and a folder `dir`, for the file tests.
fn files() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-rewrite-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("dir")).expect("test folder");
    std::fs::write(dir.join("file"), b"").expect("test file");
    dir
}

fn config(p: u16, backend: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    map $uri $mapped_cap {
        "~^/mc/(?<mname>[a-z]+)/(\d+)$" "$mname-$1-$2";
        ~*^/MC/                         "ci";
        default                         none;
    }
    map $arg_v $mapped {
        9       nine;
        default other;
    }
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
        location /ifp/ {
            proxy_pass http://127.0.0.1:{BACKEND}/base/;
            if ($arg_t) {
                set $x 1;
            }
        }
        location /sa/ {
            set $args "n=1";
            proxy_pass http://127.0.0.1:{BACKEND}/base/;
        }
        location /sb/ {
            set $args "n=1";
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /cors/ {
            proxy_pass http://127.0.0.1:{BACKEND}/base/;
            add_header X-Tag loc;
            if ($request_method = OPTIONS) {
                add_header X-Tag cors;
                return 204;
            }
            if ($arg_h) {
                add_header X-Tag "h-$arg_h";
            }
        }
        location /two/ {
            set $t 1;
            if ($t) {
                add_header X-Tag first;
            }
            if ($t) {
                add_header X-Tag second;
            }
            return 204;
        }
        location /ifcrash/ {
            set $true 1;
            if ($true) {
                proxy_pass http://127.0.0.1:{BACKEND};
            }
            if ($true) {
                set $x 2;
            }
        }
        location /ifproxy/ {
            if ($arg_b) {
                proxy_pass http://127.0.0.1:{BACKEND};
            }
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
            add_header X-Tag $tag-$mapped;
            return 200 "tag\n";
        }
        location /mc/ {
            return 200 "mc $mapped_cap\n";
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
        location /ftest/ {
            if (-f {DIR}/file) {
                set $f "f";
            }
            if (-d {DIR}/$arg_d) {
                set $d "d";
            }
            if (!-e {DIR}/none) {
                set $e "!e";
            }
            if (-x {DIR}/dir) {
                set $x "x";
            }
            if (-f {DIR}/dir) {
                set $x "wrong";
            }
            return 200 "files $f$d$e$x\n";
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
        server_name "~^(?<sub>[a-z]+)\.(r)egex\.test$";
        location / {
            return 200 "sub=$sub one=$1 two=$2\n";
        }
        location ~ ^/l/(.*)$ {
            return 200 "sub=$sub one=$1 two=$2\n";
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
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DIR", files().display().to_string()),
        ],
    )
}

/// (Host, `[METHOD ]target`, extra header fields).
type Request = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

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
    ("localhost", "/mc/abc/12", &[]),
    ("localhost", "/mc/x", &[]),
    ("localhost", "/args/?a=b", &[]),
    ("localhost", "/break/", &[]),
    ("localhost", "/order/", &[]),
    ("localhost", "/secret/x", &[]),
    ("localhost", "/open/y", &[]),
    ("localhost", "/ftest/?d=dir", &[]),
    ("localhost", "/ifp/a?t=1", &[]),
    ("localhost", "/ifp/b", &[]),
    ("localhost", "/sa/x?k=1", &[]),
    ("localhost", "/sb/x?k=1", &[]),
    ("localhost", "OPTIONS /cors/x", &[]),
    ("localhost", "/cors/x?h=1", &[]),
    ("localhost", "/cors/y", &[]),
    ("localhost", "/two/", &[]),
    ("localhost", "/ifproxy/x?b=1", &[]),
    ("localhost", "/ifproxy/x", &[]),
    ("localhost", "/ifcrash/", &[]),
    ("localhost", "/ftest/?d=file", &[]),
    ("other", "/a/b?c=d", &[]),
    ("ret", "/x?y=1", &[]),
    ("abc.regex.test", "/x", &[]),
    ("abc.regex.test", "/l/zz", &[]),
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
            // "METHOD /path" for another method than GET.
            let (method, path) = path.split_once(' ').unwrap_or(("GET", path));
            let r = c.request(method, path, &h, b"");
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
    let has = |want: &str| n.iter().any(|a| a.contains(want));
    for want in [
        "new uri=/new/abc args=k=1",
        "upstream /q/one?k=1",
        "500 - - close",
        "files fd!ex\n",
        "mc abc-abc-12",
    ] {
        assert!(has(want), "{want}: {n:?}");
    }
}

/// `rewrite_log on`: nginx's notice lines for each match, miss and result, with the
/// request's context.
#[test]
fn rewrite_log_lines_read_as_nginx() {
    let p = common::port();
    let cfg = fill(
        r#"events {}
error_log stderr notice;
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location /rl {
            rewrite_log on;
            rewrite ^/nomatch /x;
            rewrite ^/rl/(.*)$ /new/$1 last;
        }
        location /new/ {
            return 200 "n";
        }
    }
}
"#,
        &[("PORT", p.to_string())],
    );
    let rf = ringfront_testkit::Ringfront::start(&cfg);
    let mut c = Client::connect(("127.0.0.1", p));
    assert_eq!(c.request("GET", "/rl/x?a=1", &[], b"").text(), "n");
    let ctx = format!(
        ", client: 127.0.0.1, server: , request: \"GET /rl/x?a=1 HTTP/1.1\", host: \"127.0.0.1:{p}\""
    );
    for line in [
        "\"^/nomatch\" does not match \"/rl/x\"".to_string(),
        "\"^/rl/(.*)$\" matches \"/rl/x\"".to_string(),
        "rewritten data: \"/new/x\", args: \"a=1\"".to_string(),
    ] {
        let want = format!("{line}{ctx}");
        assert!(
            rf.wait_for_stderr(&want, std::time::Duration::from_secs(5)),
            "{want}"
        );
        let lines = rf.stderr_lines();
        let got = lines.iter().find(|l| l.contains(&want));
        assert!(got.is_some_and(|l| l.contains("[notice] ")), "{got:?}");
    }
}

/// The access log after rewrites, against nginx: `$uri` and `$args` as rewritten,
/// `$request_uri` as sent, a `set` variable, and a variable never set (`-`).
#[test]
fn access_log_after_rewrites_matches_nginx() {
    let config = |p: u16| {
        fill(
            r#"worker_processes 1;
events { worker_connections 64; }
http {
    log_format rw '$uri|$request_uri|$args|$v|$never|$cap|$status';
    access_log {LOG} rw;
    server {
        listen 127.0.0.1:{PORT};
        location /a/ {
            rewrite ^/a/(.*)$ /b/$1?n=1 last;
        }
        location ~ ^/b/(?<cap>.+)$ {
            set $v "v-$1";
            return 200 "ok\n";
        }
        location /late/ {
            set $never "x";
            return 204;
        }
    }
}
"#,
            &[
                ("PORT", p.to_string()),
                ("LOG", common::access_log_path(p).display().to_string()),
            ],
        )
    };
    let (n, r, np, rp) = common::nginx_and_ringfront(config);
    for p in [np, rp] {
        let mut c = Client::connect(("127.0.0.1", p));
        for path in ["/a/x?k=1", "/b/y", "/c"] {
            c.request("GET", path, &[], b"");
        }
    }
    drop(n);
    r.signal(ringfront_testkit::SIGQUIT);
    assert!(r.wait_exit(std::time::Duration::from_secs(10)).is_some());
    let read = |p: u16| std::fs::read_to_string(common::access_log_path(p)).unwrap_or_default();
    let (nginx, ours) = (read(np), read(rp));
    for p in [np, rp] {
        let _ = std::fs::remove_file(common::access_log_path(p));
    }
    assert_eq!(ours, nginx);
    // An unset `set` variable logs as empty, an unmatched named capture as `-`.
    assert!(
        nginx.starts_with("/b/x|/a/x?k=1|n=1&k=1|v-x||x|200\n"),
        "{nginx}"
    );
    assert!(nginx.ends_with("/c|/c|-|||-|404\n"), "{nginx}");
}
