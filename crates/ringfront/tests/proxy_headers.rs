//! Differential: the proxy module's response-header directives — `proxy_hide_header`,
//! `proxy_pass_header` (the upstream's `Server` and `Date` in place of ours),
//! `proxy_ignore_headers`, `proxy_redirect` (implied and explicit `default`, `off`, prefix
//! and regex rules with variables and captures, `Location` and `Refresh`, inheritance into
//! nested locations) and `proxy_cookie_domain` / `_path` / `_flags` on several `Set-Cookie`s.
//! Real nginx 1.22 and ringfront run the same configuration against the same raw upstream;
//! per request the status, the header fields (names lower-cased, sorted; `Date` aside, the
//! product token and the listen port normalised) and the body must agree.

mod common;

use ringfront_testkit::MaskPort;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{fill, port};
use ringfront_testkit::{After, Nginx, RawBackend, Ringfront};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    upstream up { server 127.0.0.1:{UP}; }
    upstream accel { server 127.0.0.1:{ACCEL}; }
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        proxy_hide_header X-Secret;
        location /impl/ { proxy_pass http://up/x/; }
        location /expl/ { proxy_pass http://up/x/; proxy_redirect wrong wrong; proxy_redirect default; }
        location /bare { proxy_pass http://up; }
        location /ifpass { if ($arg_x) { proxy_pass http://up; } }
        location /off/ {
            proxy_pass http://up/x/;
            proxy_redirect off;
            location /off/on/ {
                proxy_pass http://up;
                proxy_redirect http://up/x/ /from-on/;
                location /off/on/in/ { proxy_pass http://up; }
            }
        }
        location /rules/ {
            set $v var;
            proxy_pass http://up/x/;
            proxy_redirect ~^http://UP/(x)/(p.*)$ /nomatch/;
            proxy_redirect ~*^http://UP/(x)/(p[a-z]+)(.*)$ /re/$2/$1$3;
            proxy_redirect http://up/ /$v/;
        }
        location /vars/ { set $u up; proxy_pass http://up/x/; proxy_redirect http://$u/x/ http://$host/v/; }
        location /ph/ { proxy_pass http://up/x/; proxy_redirect http://$proxy_host/x/ /ph-$proxy_host/; }
        location /hide {
            proxy_pass http://up;
            proxy_pass_header Server;
            proxy_pass_header Date;
            proxy_pass_header X-Accel-Buffering;
        }
        location /hide-more {
            proxy_pass http://up;
            proxy_hide_header ETag;
            proxy_hide_header Content-Length;
            proxy_hide_header Content-Type;
        }
        location /ignore {
            proxy_pass http://accel;
            proxy_ignore_headers X-Accel-Redirect X-Accel-Buffering Expires Cache-Control Set-Cookie Vary;
        }
        location /cookies/ {
            proxy_pass http://up/x/;
            proxy_cookie_domain up.example $host;
            proxy_cookie_domain ~^(.+)\\.other$ $1.front;
            proxy_cookie_path /x/ /cookies/;
            proxy_cookie_path ~*^/Y(.*)$ /why$1;
            proxy_cookie_flags ~^s nosecure samesite=lax httponly;
            proxy_cookie_flags a secure $arg_f;
        }
        location /cookies-off/ {
            proxy_pass http://up/x/;
            proxy_cookie_flags off;
            proxy_cookie_path off;
        }
    }
}
";

const UPSTREAM: &str = "HTTP/1.1 302 Found\r\nServer: up-srv\r\n\
    Date: Mon, 01 Jan 2001 00:00:00 GMT\r\nX-Secret: s\r\nX-Accel-Buffering: no\r\n\
    ETag: \"e\"\r\nLocation: http://up/x/page?q=1\r\n\
    Refresh: 5; URL=http://up/x/page\r\n\
    Set-Cookie: a=1; Domain=.UP.example; Path=/x/y; HttpOnly\r\n\
    Set-Cookie: sess=2 ;path=/Yes; secure; SameSite=None; domain=b.other\r\n\
    Set-Cookie: plain\r\n\
    Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";

/// With `X-Accel-Redirect`, which nginx and ringfront follow unless ignored (accel_redirect.rs).
const ACCEL: &str = "HTTP/1.1 200 OK\r\nX-Accel-Redirect: /elsewhere\r\n\
    X-Accel-Buffering: no\r\nExpires: Thu, 01 Jan 1970 00:00:01 GMT\r\nVary: *\r\n\
    Content-Length: 2\r\n\r\nup";

const PATHS: &[&str] = &[
    "/impl/page",
    "/expl/page",
    "/bare",
    "/ifpass?x=1",
    "/off/page",
    "/off/on/page",
    "/off/on/in/page",
    "/rules/page",
    "/vars/page",
    "/ph/page",
    "/hide",
    "/hide-more",
    "/ignore",
    "/cookies/page",
    "/cookies/page?f=samesite=strict",
    "/cookies-off/page",
];

#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: String,
    fields: Vec<(String, String)>,
    body: String,
}

fn normalise(text: &str, port: u16) -> String {
    let version = concat!("ringfront/", env!("CARGO_PKG_VERSION"));
    text.replace("nginx/1.22.1", "TOKEN/V")
        .replace(version, "TOKEN/V")
        .mask_port(port)
}

fn get(port: u16, path: &str) -> Seen {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole head");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default().to_string();
    let mut fields: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_ascii_lowercase(), normalise(v, port)))
        // Ours is now; a passed upstream `Date` is compared.
        .filter(|(n, v)| n != "date" || v.starts_with("Mon, 01 Jan 2001"))
        .collect();
    fields.sort();
    Seen {
        status,
        fields,
        body: body.to_string(),
    }
}

fn config(port: u16, up: &RawBackend, accel: &RawBackend) -> String {
    fill(
        CONFIG,
        &[
            ("PORT", port.to_string()),
            ("UP", up.port().to_string()),
            ("ACCEL", accel.port().to_string()),
        ],
    )
}

#[test]
fn response_header_directives_match_nginx() {
    let up = RawBackend::start(UPSTREAM.as_bytes(), After::Keep);
    let accel = RawBackend::start(ACCEL.as_bytes(), After::Keep);
    let np = port();
    let nginx: Vec<Seen> = {
        let _n = Nginx::start(&config(np, &up, &accel), np);
        PATHS.iter().map(|p| get(np, p)).collect()
    };
    let rp = port();
    let ours: Vec<Seen> = {
        let _r = Ringfront::start(&config(rp, &up, &accel));
        PATHS.iter().map(|p| get(rp, p)).collect()
    };
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(n, r, "{}", PATHS[i]);
    }
    // The cases say what they should: spot checks on nginx's own answers.
    let at = |path: &str| {
        PATHS
            .iter()
            .position(|p| *p == path)
            .expect("a listed path")
    };
    let field = |path: &str, name: &str| {
        nginx[at(path)]
            .fields
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        field("/impl/page", "location"),
        ["http://a.test:PORT/impl/page?q=1"]
    );
    assert_eq!(field("/impl/page", "refresh"), ["5; URL=/impl/page"]);
    assert_eq!(field("/impl/page", "x-secret"), Vec::<&str>::new());
    assert_eq!(
        field("/bare", "location"),
        ["http://a.test:PORT/x/page?q=1"]
    );
    assert_eq!(
        field("/ifpass?x=1", "location"),
        ["http://a.test:PORT/x/page?q=1"]
    );
    assert_eq!(field("/off/page", "location"), ["http://up/x/page?q=1"]);
    assert_eq!(
        field("/off/on/in/page", "location"),
        ["http://a.test:PORT/from-on/page?q=1"]
    );
    assert_eq!(
        field("/rules/page", "location"),
        ["http://a.test:PORT/re/page/x?q=1"]
    );
    assert_eq!(field("/rules/page", "refresh"), ["5; URL=/re/page/x"]);
    assert_eq!(
        field("/ph/page", "location"),
        ["http://a.test:PORT/ph-up/page?q=1"]
    );
    assert_eq!(field("/hide", "server"), ["up-srv"]);
    assert_eq!(field("/hide", "x-accel-buffering"), ["no"]);
    assert_eq!(field("/hide-more", "etag"), Vec::<&str>::new());
    assert_eq!(field("/hide-more", "content-length"), ["5"], "never hidden");
    assert_eq!(nginx[at("/ignore")].body, "up", "X-Accel-Redirect ignored");
    assert_eq!(
        field("/cookies/page", "set-cookie"),
        [
            "a=1; Domain=.a.test; Path=/cookies/y; HttpOnly; Secure",
            "plain",
            "sess=2; path=/whyes; SameSite=Lax; domain=b.front; HttpOnly"
        ]
    );
}
