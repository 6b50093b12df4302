//! `error_page` against real nginx on the same configuration: internal redirects to a URI
//! (its arguments, variables, the method made GET, HEAD kept, the server's rewrite
//! directives run again, not for a named location), to a named location and to URLs;
//! `=CODE`, `=` alone and the error's own status on the page's answer (an erring
//! redirect's `Location` kept on it, proxied or built-in); errors of static files,
//! `return`, `deny`, a dead upstream, a folder's and a rewrite's redirects; a body too
//! large and a denied request with a body (answered, then closed); an `if` block's own
//! `error_page`; `recursive_error_pages` off and on, the redirection cycle;
//! `proxy_intercept_errors` (which statuses are intercepted, which backend answered, only
//! the first of several `WWW-Authenticate` kept, as nginx 1.22); and
//! `error_page 497` on a TLS port.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client, MaskPort};

/// A root with an error page file and a folder `dir`.
fn files(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-errpage-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("errors")).expect("test folder");
    std::fs::create_dir_all(dir.join("dir")).expect("test folder");
    std::fs::write(dir.join("errors/404.html"), b"<p>custom 404</p>\n").expect("page");
    dir
}

fn config(p: u16, backend: u16, dead: u16, root: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    default_type text/plain;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {ROOT};
        # One "+" for each run of the server's rewrite directives.
        set $runs "${runs}+";
        rewrite ^/srvrw/(.*)$ /page?from=$1 last;

        location / { }
        location /errors/ { }
        location = /page {
            return 200 "page uri=$uri args=$args m=$request_method\n";
        }
        location @fallback {
            return 200 "named uri=$uri args=$args m=$request_method\n";
        }

        location /files/ {
            error_page 404 /errors/404.html;
        }
        location /eq/ {
            error_page 404 = /page;
        }
        location /code/ {
            error_page 404 =410 /page;
            return 404;
        }
        location /args/ {
            error_page 404 /page?x=1;
            return 404;
        }
        location /varargs/ {
            error_page 404 /page?v=$arg_a;
            return 404;
        }
        location /named/ {
            error_page 403 @fallback;
            deny all;
        }
        location /url/ {
            error_page 404 http://example.com/missing;
            return 404;
        }
        location /url301/ {
            error_page 404 =301 http://example.com/moved;
            return 404;
        }
        location /url200/ {
            error_page 404 =200 http://example.com/;
            return 404;
        }
        location /ret302/ {
            error_page 302 /page;
            return 302 "first";
        }
        location /ret302missing/ {
            error_page 302 /nothere;
            return 302 "first";
        }
        location /ret302px/ {
            error_page 302 /px/page;
            return 302 "first";
        }
        location /rw/ {
            error_page 301 /page;
            rewrite ^ /elsewhere permanent;
        }
        location /tofolder/ {
            error_page 404 /dir;
            return 404;
        }
        location /dead/ {
            error_page 502 /page;
            proxy_pass http://127.0.0.1:{DEAD};
        }
        location /deadeq/ {
            error_page 502 = @fallback;
            proxy_pass http://127.0.0.1:{DEAD};
        }
        location /icpt/ {
            proxy_intercept_errors on;
            error_page 404 500 /page;
            error_page 401 /upstream;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location = /upstream {
            return 200 "upstream $upstream_status\n";
        }
        location /big/ {
            client_max_body_size 2;
            error_page 413 /page;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /denybody/ {
            deny all;
            error_page 403 /page;
        }
        location = /runs {
            return 200 "runs=$runs uri=$uri\n";
        }
        location @runs {
            return 200 "named runs=$runs uri=$uri\n";
        }
        location /torunsuri/ {
            error_page 404 /runs;
            return 404;
        }
        location /torunsnamed/ {
            error_page 404 @runs;
            return 404;
        }
        location /tosrv/ {
            error_page 404 /srvrw/abc;
            return 404;
        }
        location /ifep/ {
            if ($arg_x) {
                error_page 404 /page;
            }
            return 404;
        }
        location /tointernal/ {
            error_page 404 =200 /int/page;
            return 404;
        }
        location /int/ {
            internal;
            return 200 "internal uri=$uri request=$request_uri\n";
        }
        location /to204/ {
            error_page 405 /ret204;
            return 405;
        }
        location = /ret204 {
            return 204;
        }
        location /noicpt/ {
            error_page 404 /page;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /topx/ {
            error_page 404 /px/page;
            return 404;
        }
        location /px/ {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /rec/ {
            error_page 404 /missing/;
            return 404;
        }
        location /missing/ {
            error_page 404 /page;
            return 404;
        }
        location /recon/ {
            recursive_error_pages on;
            error_page 404 /missing/;
            return 404;
        }
        location /cycle/ {
            recursive_error_pages on;
            error_page 404 /cycle/again;
            return 404;
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DEAD", dead.to_string()),
            ("ROOT", root.display().to_string()),
        ],
    )
}

/// (method, path): GET unless another method is given.
const REQUESTS: &[(&str, &str)] = &[
    ("GET", "/files/nothere"),
    ("GET", "/eq/nothere?q=1"),
    ("GET", "/code/x?q=1"),
    ("POST", "/code/x"),
    ("HEAD", "/code/x"),
    ("GET", "/args/x?q=1"),
    ("GET", "/varargs/x?a=7"),
    ("GET", "/named/x?q=2"),
    ("POST", "/named/x?q=3"),
    ("GET", "/url/x"),
    ("GET", "/url301/x"),
    ("GET", "/url200/x"),
    ("GET", "/ret302/x"),
    ("GET", "/rw/x"),
    ("GET", "/ret302missing/x"),
    ("GET", "/ret302px/x"),
    ("GET", "/tofolder/x"),
    ("GET", "/dead/x"),
    ("GET", "/deadeq/x"),
    ("GET", "/icpt/x?code=404"),
    ("GET", "/icpt/x?code=500"),
    ("GET", "/icpt/x?code=403"),
    ("GET", "/icpt/x"),
    ("GET", "/icpt/auth"),
    ("GET", "/icpt/auth-multi"),
    ("GET", "/to204/x"),
    ("GET", "/tointernal/x?q=1"),
    ("GET", "/ifep/a?x=1"),
    ("GET", "/ifep/a"),
    ("GET", "/torunsuri/x"),
    ("GET", "/torunsnamed/x"),
    ("GET", "/tosrv/x"),
    ("GET", "/int/page"),
    ("HEAD", "/files/nothere"),
    ("POST", "/big/x"),
    ("POST", "/denybody/x"),
    ("GET", "/noicpt/x?code=404"),
    ("POST", "/topx/x"),
    ("GET", "/rec/x"),
    ("GET", "/recon/x"),
    ("GET", "/cycle/x"),
];

fn answers(p: u16, b: &Backend) -> Vec<String> {
    REQUESTS
        .iter()
        .map(|(method, path)| {
            let mut c = Client::connect(("127.0.0.1", p));
            let before = b.requests().len();
            let body: &[u8] = if *method == "POST" { b"data" } else { b"" };
            // ringfront closes after refusing a body it did not read (nginx reads and
            // drops it, then keeps the connection): ask both to close.
            let mut h = vec![("Host", "localhost")];
            if path.starts_with("/denybody/") || path.starts_with("/named/") {
                h.push(("Connection", "close"));
            }
            let r = c.request(method, path, &h, body);
            let reqs = b.requests();
            let upstream = match reqs.get(before..) {
                Some([one]) => format!("upstream {} {}", one.method, one.target),
                Some([]) => "-".to_string(),
                Some(more) => format!("{} upstream requests", more.len()),
                None => "?".to_string(),
            };
            let location = r.header("Location").unwrap_or("-");
            let location = location.replace(&format!(":{p}"), ":PORT");
            let conn = r.header("Connection").unwrap_or("-");
            // nginx 1.22 keeps only the first of several (1.23 keeps them all).
            let auth = r.header_all("WWW-Authenticate").join(",");
            let auth = if auth.is_empty() {
                "-".to_string()
            } else {
                auth
            };
            // Built-in pages are longer by "ringfront" in their footer.
            let builtin = r.text().contains("<hr><center>");
            let length = match builtin {
                true => "builtin",
                false => r.header("Content-Length").unwrap_or("-"),
            };
            let text = r
                .text()
                .replace("<center>ringfront</center>", "<center>nginx</center>");
            // Backends answer with their own port in the body.
            let text = text.mask_port_as(b.port(), "BACKEND");
            format!(
                "{} {location} {conn} {auth} {length} | {upstream} | {text}",
                r.status
            )
        })
        .collect()
}

#[test]
fn error_pages_match_nginx() {
    let b = Backend::start();
    let auth = ringfront_testkit::Canned::status(401, "no").header("WWW-Authenticate", "Basic x");
    b.set_route("/icpt/auth", auth);
    let multi = ringfront_testkit::Canned::status(401, "no")
        .header("WWW-Authenticate", "Basic x")
        .header("WWW-Authenticate", "Bearer y");
    b.set_route("/icpt/auth-multi", multi);
    let dead = common::port();
    let root = files("diff");
    let (n, r, np, rp) = common::nginx_and_ringfront(|p| config(p, b.port(), dead, &root));
    let nginx = answers(np, &b);
    let ours = answers(rp, &b);
    drop((n, r));
    common::assert_same("error_page", &nginx, &ours);
    // The oracle exercised the cases.
    let has = |want: &str| nginx.iter().any(|a| a.contains(want));
    for want in [
        "404 - keep-alive - 18 | - | <p>custom 404</p>",
        "410 - keep-alive - 27 | - | page uri=/page args= m=GET",
        "403 - close - 34 | - | named uri=/named/x args=q=2 m=GET",
        // A named location keeps the method.
        "403 - close - 35 | - | named uri=/named/x args=q=3 m=POST",
        "302 http://example.com/missing",
        "upstream GET /px/page",
        "401 - keep-alive Basic x 13 | upstream GET /icpt/auth | upstream 401",
        "401 - keep-alive Basic x 13 | upstream GET /icpt/auth-multi | upstream 401",
        "405 - keep-alive - 0 |",
        "| runs=++ uri=/runs",
        "| named runs=+ uri=/torunsnamed/x",
        "| page uri=/page args=from=abc m=GET",
        "200 - keep-alive - 49 | - | internal uri=/int/page request=/tointernal/x?q=1",
        "413 - close - 27 | - | page uri=/page args= m=GET",
    ] {
        assert!(has(want), "{want}: {nginx:?}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// The classic `error_page 497 https://$host$request_uri`: plain HTTP sent to a TLS port
/// gets a 302 to the same URL over https, as from nginx.
#[test]
fn plain_http_on_a_tls_port_is_redirected_as_by_nginx() {
    use ringfront_testkit::pki::{Key, Pki};
    let dir = ringfront_testkit::TempDir::new("rf-errpage-pki");
    let pki = Pki::new(dir.path(), "edge");
    let cert = pki.server("a", Key::EcdsaP256, &["a.test"]);
    let config = |p: u16| {
        fill(
            r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT} ssl;
        server_name a.test;
        ssl_certificate {CERT};
        ssl_certificate_key {KEY};
        error_page 497 https://$host:$server_port$request_uri;
        location /keep/ {
            error_page 497 =307 https://$host$uri;
            return 200 "tls\n";
        }
        location / { return 200 "tls\n"; }
    }
}
"#,
            &[
                ("PORT", p.to_string()),
                ("CERT", cert.cert.display().to_string()),
                ("KEY", cert.key.display().to_string()),
            ],
        )
    };
    let (n, r, np, rp) = common::nginx_and_ringfront(config);
    let answers = |p: u16| {
        ["/a/b?c=d", "/keep/x?y=1"]
            .iter()
            .map(|path| {
                let mut c = Client::connect(("127.0.0.1", p));
                let r = c.request("GET", path, &[("Host", "a.test")], b"");
                let location = r.header("Location").unwrap_or("-");
                let location = location.replace(&format!(":{p}"), ":PORT");
                let conn = r.header("Connection").unwrap_or("-");
                format!("{} {location} {conn}", r.status)
            })
            .collect::<Vec<_>>()
    };
    let nginx = answers(np);
    let ours = answers(rp);
    drop((n, r));
    assert_eq!(ours, nginx);
    assert_eq!(nginx[0], "302 https://a.test:PORT/a/b?c=d close");
}
