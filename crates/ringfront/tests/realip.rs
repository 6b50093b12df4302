//! Differential: the realip module against real nginx 1.22. `X-Real-IP` (the default),
//! `X-Forwarded-For` with and without `real_ip_recursive` over trusted chains and several
//! fields, another header by name, `proxy_protocol` as the header (its port too), `unix:`
//! trust, an untrusted client, server-level settings run in post-read before a location's
//! own (preaccess); then what every consumer sees: `$remote_addr`, `$remote_port`,
//! `$binary_remote_addr`, `$realip_remote_addr`, `geo`, `allow`/`deny`, `ip_hash` and
//! `hash $remote_addr` choosing backends (the same sequence as nginx), the `X-Real-IP` and
//! `X-Forwarded-For` a proxied request carries, and the access log. And the configuration
//! errors in nginx's words.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use common::{fill, log_lines, port};
use ringfront_testkit::{Backend, Nginx, Ringfront, TempDir};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    log_format r '$remote_addr|$realip_remote_addr|$request|$status|$http_x_real_ip';
    access_log {LOG} r;
    map $realip_remote_port $own_port { '' none; default some; }
    geo $g { default other; 192.0.2.0/24 doc; 127.0.0.0/8 lo; }
    upstream iph {
        ip_hash;
        server 127.0.0.1:{B0};
        server 127.0.0.1:{B1};
        server 127.0.0.1:{B2};
    }
    upstream hashed {
        hash $remote_addr;
        server 127.0.0.1:{B0};
        server 127.0.0.1:{B1};
        server 127.0.0.1:{B2};
    }
    server {
        listen 127.0.0.1:{PORT};
        set_real_ip_from 127.0.0.1;
        location / {
            return 200 \"$remote_addr|$remote_port|$realip_remote_addr|$own_port|$g\\n\";
        }
        location /bin { return 200 \"$binary_remote_addr\"; }
        location /xff {
            real_ip_header X-Forwarded-For;
            proxy_pass http://127.0.0.1:{B0}; proxy_set_header X-Seen \"$remote_addr|$remote_port|$realip_remote_addr\";
        }
        location /xffr {
            set_real_ip_from 127.0.0.1;
            set_real_ip_from 10.0.0.0/8;
            set_real_ip_from 2001:db8::/32;
            real_ip_header X-Forwarded-For;
            real_ip_recursive on;
            proxy_pass http://127.0.0.1:{B0}; proxy_set_header X-Seen \"$remote_addr|$remote_port|$realip_remote_addr\";
        }
        location /custom {
            real_ip_header X-Client;
            proxy_pass http://127.0.0.1:{B0}; proxy_set_header X-Seen \"$remote_addr|$remote_port|$realip_remote_addr\";
        }
        location /untrusted {
            set_real_ip_from 10.9.9.9;
            real_ip_header X-Client;
            proxy_pass http://127.0.0.1:{B0}; proxy_set_header X-Seen \"$remote_addr|$remote_port|$realip_remote_addr\";
        }
        location /deny {
            deny 192.0.2.0/24;
            allow all;
            proxy_pass http://127.0.0.1:{B0}; proxy_set_header X-Seen \"$remote_addr|$remote_port|$realip_remote_addr\";
        }
        location /iph { proxy_pass http://iph; }
        location /hash { proxy_pass http://hashed; }
        location /up {
            proxy_pass http://127.0.0.1:{B0};
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
    server {
        listen 127.0.0.1:{PP} proxy_protocol;
        set_real_ip_from 127.0.0.1;
        real_ip_header proxy_protocol;
        location / {
            return 200 \"$remote_addr|$remote_port|$realip_remote_addr|$proxy_protocol_addr\\n\";
        }
    }
    server {
        listen unix:{SOCK};
        set_real_ip_from unix:;
        location / { return 200 \"$remote_addr|$remote_port|$realip_remote_addr\\n\"; }
    }
}
";

/// (path, fields)
const CASES: &[(&str, &[(&str, &str)])] = &[
    ("/", &[("X-Real-IP", "192.0.2.1")]),
    ("/", &[("X-Real-IP", "192.0.2.1:8080")]),
    ("/", &[("X-Real-IP", "[2001:db8::5]:81")]),
    ("/", &[("X-Real-IP", "2001:db8::5")]),
    ("/", &[("X-Real-IP", "junk")]),
    (
        "/",
        &[("X-Real-IP", "192.0.2.1"), ("X-Real-IP", "192.0.2.2")],
    ),
    ("/", &[]),
    ("/bin", &[("X-Real-IP", "192.0.2.1")]),
    ("/xff", &[("X-Forwarded-For", "203.0.113.1, 192.0.2.7")]),
    (
        "/xff",
        &[
            ("X-Forwarded-For", "203.0.113.1"),
            ("X-Forwarded-For", "192.0.2.8:99"),
        ],
    ),
    // The server level's X-Real-IP wins: post-read runs first.
    (
        "/xff",
        &[
            ("X-Forwarded-For", "203.0.113.1"),
            ("X-Real-IP", "192.0.2.9"),
        ],
    ),
    (
        "/xffr",
        &[("X-Forwarded-For", "203.0.113.1, 10.1.1.1, 10.2.2.2")],
    ),
    (
        "/xffr",
        &[("X-Forwarded-For", "203.0.113.1, 192.0.2.3, 10.2.2.2")],
    ),
    ("/xffr", &[("X-Forwarded-For", "10.3.3.3, 10.1.1.1")]),
    ("/xffr", &[("X-Forwarded-For", "junk, 10.1.1.1")]),
    (
        "/xffr",
        &[
            ("X-Forwarded-For", "198.51.100.4"),
            ("X-Forwarded-For", "10.5.5.5, 10.6.6.6"),
        ],
    ),
    (
        "/xffr",
        &[("X-Forwarded-For", "2001:db8::9, [2001:db8::1]:443")],
    ),
    ("/custom", &[("X-Client", "198.51.100.2:4444")]),
    ("/custom", &[("X-Real-IP", "198.51.100.3")]),
    ("/untrusted", &[("X-Client", "198.51.100.3")]),
    ("/deny", &[("X-Real-IP", "192.0.2.1")]),
    ("/deny", &[("X-Real-IP", "198.51.100.1")]),
];

const IP_HASH: &[&str] = &[
    "192.0.2.1",
    "192.0.3.1",
    "198.51.100.1",
    "203.0.113.1",
    "10.1.2.3",
    "10.1.3.3",
    "172.16.0.1",
    "8.8.8.8",
    "2001:db8::1",
    "192.0.2.200",
];

struct Setup {
    port: u16,
    pp: u16,
    sock: PathBuf,
    log: PathBuf,
}

fn config(s: &Setup, b: &[Backend]) -> String {
    fill(
        CONFIG,
        &[
            ("PORT", s.port.to_string()),
            ("PP", s.pp.to_string()),
            ("SOCK", s.sock.display().to_string()),
            ("LOG", s.log.display().to_string()),
            ("B0", b[0].port().to_string()),
            ("B1", b[1].port().to_string()),
            ("B2", b[2].port().to_string()),
        ],
    )
}

/// The answer (status, body) and the `X-Seen` the backend got for it (`-`: none).
fn ask(port: u16, path: &str, fields: &[(&str, &str)], b0: &Backend) -> String {
    b0.reset_hits();
    let mut c = ringfront_testkit::Client::connect(("127.0.0.1", port));
    let mut h = vec![("Host", "a"), ("Connection", "close")];
    h.extend_from_slice(fields);
    let r = c.request("GET", path, &h, b"");
    // nginx's own pages name the product: only answers of the location are compared.
    let text = if r.status == 200 {
        r.text()
    } else {
        String::new()
    };
    let body: String = text
        .bytes()
        .flat_map(|b| match b.is_ascii_graphic() || b == b' ' || b == b'\n' {
            true => vec![b as char],
            false => format!("\\x{b:02x}").chars().collect(),
        })
        .collect();
    let seen = b0.requests();
    let seen = seen.last().and_then(|q| q.header("x-seen")).unwrap_or("-");
    ephemeral(&format!("{} {body:?} seen {seen}", r.status))
}

/// A loopback client's own port (different on every run) reads `P`.
fn ephemeral(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("127.0.0.1|") {
        let (head, tail) = rest.split_at(i + 10);
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        let port = digits > 0 && !matches!(tail.as_bytes().get(digits), Some(b'.' | b':'));
        let skip = if port { digits } else { 0 };
        if port {
            out.push('P');
        }
        rest = &tail[skip..];
    }
    out.push_str(rest);
    out
}

fn backend_of(r: &ringfront_testkit::Response, b: &[Backend]) -> String {
    let p = common::served_by(r);
    b.iter()
        .position(|x| x.port() == p)
        .map_or("-".into(), |i| format!("b{i}"))
}

fn raw(stream: &mut impl ReadWrite, bytes: &[u8]) -> String {
    stream.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    text.split("\r\n\r\n")
        .nth(1)
        .unwrap_or("closed")
        .to_string()
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn session(s: &Setup, b: &[Backend]) -> Vec<String> {
    for x in b {
        x.reset_hits();
    }
    let mut out: Vec<String> = CASES
        .iter()
        .map(|(path, f)| format!("{path} {f:?} -> {}", ask(s.port, path, f, &b[0])))
        .collect();
    b[0].reset_hits();
    ask(
        s.port,
        "/up",
        &[
            ("X-Real-IP", "192.0.2.44"),
            ("X-Forwarded-For", "203.0.113.4"),
        ],
        &b[0],
    );
    let up = b[0].requests();
    let last = up.last().expect("the proxied request");
    out.push(format!(
        "backend saw X-Real-IP {:?} X-Forwarded-For {:?}",
        last.header("x-real-ip"),
        last.header("x-forwarded-for")
    ));
    for path in ["/iph", "/hash"] {
        let picks: Vec<String> = IP_HASH
            .iter()
            .map(|ip| {
                let mut c = ringfront_testkit::Client::connect(("127.0.0.1", s.port));
                let r = c.request("GET", path, &[("Host", "a"), ("X-Real-IP", ip)], b"");
                backend_of(&r, b)
            })
            .collect();
        out.push(format!("{path}: {}", picks.join(" ")));
    }
    let mut t = std::net::TcpStream::connect(("127.0.0.1", s.pp)).unwrap();
    out.push(raw(
        &mut t,
        b"PROXY TCP4 198.51.100.9 192.0.2.2 6000 80\r\nGET / HTTP/1.0\r\nX-Real-IP: 192.0.2.1\r\n\r\n",
    ));
    let mut t = std::net::TcpStream::connect(("127.0.0.1", s.pp)).unwrap();
    out.push(raw(&mut t, b"PROXY UNKNOWN\r\nGET / HTTP/1.0\r\n\r\n"));
    let mut u = std::os::unix::net::UnixStream::connect(&s.sock).unwrap();
    out.push(raw(
        &mut u,
        b"GET / HTTP/1.0\r\nX-Real-IP: 192.0.2.77:7\r\n\r\n",
    ));
    out.extend(log_lines(&s.log, CASES.len() + 2 * IP_HASH.len() + 4));
    out.iter().map(|l| ephemeral(l)).collect()
}

#[test]
fn the_real_address_is_what_every_consumer_sees_as_in_nginx() {
    let dir = TempDir::new("rf-realip");
    let b: Vec<Backend> = (0..3).map(|_| Backend::start()).collect();
    let setup = |name: &str| Setup {
        port: port(),
        pp: port(),
        sock: dir.path().join(format!("{name}.sock")),
        log: dir.path().join(format!("{name}.log")),
    };
    let ns = setup("n");
    let nginx = Nginx::start(&config(&ns, &b), ns.port);
    let n = session(&ns, &b);
    drop(nginx);
    let rs = setup("r");
    let _rf = Ringfront::start(&config(&rs, &b));
    let r = session(&rs, &b);
    common::assert_same("realip", &n, &r);
    let has = |s: &str| assert!(n.iter().any(|l| l.contains(s)), "{s} in {n:?}");
    has("200 \"192.0.2.1||127.0.0.1|some|doc\\n\"");
    has("200 \"192.0.2.1|8080|127.0.0.1|some|doc\\n\"");
    has("403 ");
    has("seen 203.0.113.1||127.0.0.1");
    has("/untrusted [(\"X-Client\", \"198.51.100.3\")] -> 200 \"backend");
    has("seen 127.0.0.1|P|127.0.0.1");
    has("198.51.100.9|6000|127.0.0.1|198.51.100.9");
    has("192.0.2.77|7|unix:");
    has("backend saw X-Real-IP Some(\"192.0.2.44\") X-Forwarded-For Some(\"203.0.113.4, 192.0.2.44\")");
    assert!(
        n.iter()
            .any(|l| l.starts_with("/iph: ") && l.contains("b1") && l.contains("b2")),
        "{n:?}"
    );
}

/// `nginx -t` and ringfront's loader refuse the same things with the same words.
#[test]
fn configuration_errors_in_nginx_words() {
    let cases = [
        ("set_real_ip_from 10.0.0.0/33;", "host not found in set_real_ip_from \"10.0.0.0/33\""),
        ("set_real_ip_from no.such.host.invalid;", "host not found in set_real_ip_from \"no.such.host.invalid\""),
        ("real_ip_header X-Real-IP; real_ip_header X-Forwarded-For;", "\"real_ip_header\" directive is duplicate"),
        ("real_ip_recursive maybe;", "invalid value \"maybe\" in \"real_ip_recursive\" directive, it must be \"on\" or \"off\""),
        ("set_real_ip_from;", "invalid number of arguments in \"set_real_ip_from\" directive"),
    ];
    for (directive, want) in cases {
        let cfg = format!("events {{}}\nhttp {{\n server {{\n  {directive}\n }}\n}}\n");
        let (status, out) = Nginx::run_check(&cfg);
        assert!(!status.success(), "{cfg}");
        assert!(out.contains(want), "nginx: {out}");
        let host = ringfront_config::OsHost;
        let path = Path::new("/c/x.conf");
        let err = ringfront_config::parse_str(&cfg, path, &host).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{want} in /c/x.conf:4"),
            "{directive}"
        );
    }
    // `localhost` resolves: trusted as its addresses (nginx's realip_hostname.t).
    let cfg = "events {}\nhttp {\n server {\n  set_real_ip_from localhost;\n }\n}\n";
    assert!(Nginx::run_check(cfg).0.success());
    let parsed =
        ringfront_config::parse_str(cfg, Path::new("/c/x.conf"), &ringfront_config::OsHost);
    assert!(parsed.is_ok(), "{parsed:?}");
}
