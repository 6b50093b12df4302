//! Differential: `add_header` (http/server/location levels, inheritance, `always`, variables,
//! empty values, `ETag`/`Last-Modified` replacement), `server_tokens`, and `Server`/`Date` as
//! nginx sets them — on proxied responses (the upstream's `Server`, `Date`, `X-Pad` and
//! `X-Accel-*` hidden), `return`, built-in error pages and 502s. Real nginx 1.22 and
//! ringfront run the same configuration; per request the status, the header fields (names
//! and values, order aside) and the body must agree once the product token is normalised
//! (`nginx[/1.22.1]` and `ringfront[/VERSION]` both read `TOKEN[/V]`, the listen port reads
//! `PORT`). `Date` is checked apart: one field, first after `Server`, a valid IMF-fixdate
//! within a few seconds of now.

mod common;

use ringfront_testkit::MaskPort;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{fill, port};
use ringfront_testkit::{free_port, After, Nginx, RawBackend, Ringfront};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    add_header X-Http h;
    add_header X-Http-Always ha always;
    upstream up { server 127.0.0.1:{UP}; }
    upstream up404 { server 127.0.0.1:{UP404}; }
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        location / { proxy_pass http://up; }
        location /nf { proxy_pass http://up404; }
        location /loc {
            proxy_pass http://up;
            add_header X-Loc \"$host|$status|$request_method|$arg_a\";
            add_header X-Empty \"\";
            add_header X-Empty-Var $arg_none;
            add_header ETag mine;
            add_header X-Dup 1;
            add_header X-Dup 2;
        }
        location /loc-nf { proxy_pass http://up404; add_header X-S s; add_header X-A a always; }
        location /etag-off { proxy_pass http://up; add_header ETag \"\"; add_header Last-Modified \"\" always; }
        location /ret { return 200 \"ok\\n\"; }
        location /ret-loc { return 200 ok; add_header X-R r; add_header X-RA ra always; }
        location /r404 { return 404; add_header X-R r; add_header X-RA \"$status\" always; }
        location /redir { return 301 /else; add_header X-R r; }
        location /dead {
            proxy_pass http://127.0.0.1:{DEAD};
            proxy_next_upstream off;
            add_header X-D d;
            add_header X-DA da always;
            add_header Server extra always;
        }
        location /tokens-off { server_tokens off; return 404; }
        location /tokens-build { server_tokens build; return 200 b; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name b.test;
        server_tokens off;
        add_header X-Server s;
        location / { proxy_pass http://up; }
        location /own { proxy_pass http://up; add_header X-Own o; }
        location /r404 { return 404; }
        location /dead { proxy_pass http://127.0.0.1:{DEAD}; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name c.test;
        add_header X-C c;
        server_tokens off;
        return 200 c;
        location / { add_header X-L l; server_tokens on; }
    }
}
";

const UPSTREAM_200: &str = "HTTP/1.1 200 OK\r\nServer: upstream-srv\r\n\
    Date: Mon, 01 Jan 2001 00:00:00 GMT\r\nX-Pad: avoid browser bug\r\nX-Accel-Expires: 5\r\n\
    X-Accel-Buffering: no\r\nX-Accel-Other: kept\r\nContent-Type: text/x-up\r\nETag: \"up\"\r\n\
    Last-Modified: Mon, 01 Jan 2001 00:00:00 GMT\r\nX-Up: 1\r\nContent-Length: 5\r\n\r\nhello";

const UPSTREAM_404: &str = "HTTP/1.1 404 Not Found\r\nServer: upstream-srv\r\n\
    Date: Mon, 01 Jan 2001 00:00:00 GMT\r\nContent-Type: text/plain\r\nETag: \"nf\"\r\n\
    Content-Length: 2\r\n\r\nno";

/// (method, Host, path); one connection each, `Connection: close`.
const REQUESTS: &[(&str, &str, &str)] = &[
    ("GET", "a.test", "/"),
    ("HEAD", "a.test", "/"),
    ("GET", "a.test", "/nf"),
    ("GET", "Ex.A.test", "/loc?a=1"),
    ("GET", "a.test", "/loc-nf"),
    ("GET", "a.test", "/etag-off"),
    ("GET", "a.test", "/ret"),
    ("GET", "a.test", "/ret-loc"),
    ("HEAD", "a.test", "/ret-loc"),
    ("GET", "a.test", "/r404"),
    ("GET", "a.test", "/redir"),
    ("GET", "a.test", "/dead"),
    ("GET", "a.test", "/tokens-off"),
    ("GET", "a.test", "/tokens-build"),
    ("GET", "b.test", "/"),
    ("GET", "b.test", "/own"),
    ("GET", "b.test", "/r404"),
    ("GET", "b.test", "/dead"),
    ("GET", "c.test", "/"),
    // A bad head: nginx's 400, from the default server, gets its `always` fields.
    ("GET", "a.test\r\nno colon here", "/"),
];

/// One response as compared: status line, sorted fields, body, all normalised.
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
        .replace("nginx", "TOKEN")
        .replace("ringfront", "TOKEN")
        .mask_port(port)
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

/// Seconds since the epoch of an IMF-fixdate, checking its exact shape (weekday included).
fn imf_fixdate(v: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const WEEK: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    let b = v.as_bytes();
    if b.len() != 29 || &v[3..5] != ", " || !v.ends_with(" GMT") {
        return None;
    }
    let num = |r: std::ops::Range<usize>| v.get(r)?.parse::<i64>().ok();
    let month = MONTHS.iter().position(|m| *m == &v[8..11])? as i64 + 1;
    let d = days(num(12..16)?, month, num(5..7)?);
    if WEEK[d.rem_euclid(7) as usize] != &v[..3] || b[19] != b':' || b[22] != b':' {
        return None;
    }
    Some(d * 86_400 + num(17..19)? * 3600 + num(20..22)? * 60 + num(23..25)?)
}

fn exchange(port: u16, method: &str, host: &str, path: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Splits a response, checks its `Date` and the place of `Server`/`Date`, and normalises it.
fn seen(raw: &[u8], port: u16, what: &str) -> Seen {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole head");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default().to_string();
    let all: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(all[0].0, "Server", "{what}: {head}");
    assert_eq!(all[1].0, "Date", "{what}: {head}");
    let dates: Vec<_> = all.iter().filter(|(n, _)| n == "Date").collect();
    assert_eq!(dates.len(), 1, "{what}: {head}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let at = imf_fixdate(&dates[0].1).unwrap_or_else(|| panic!("{what}: bad Date {head}"));
    assert!(
        (now - at).abs() <= 5,
        "{what}: Date {} vs now {now}",
        dates[0].1
    );
    let mut fields: Vec<(String, String)> = all
        .into_iter()
        .filter(|(n, _)| n != "Date")
        .map(|(n, v)| (n.to_ascii_lowercase(), normalise(&v, port)))
        .collect();
    // Content-Length differs with the token's length in pages: checked against the body.
    if let Some(i) = fields.iter().position(|(n, _)| n == "content-length") {
        let (_, len) = fields.remove(i);
        if !what.starts_with("HEAD") {
            assert_eq!(len, body.len().to_string(), "{what}: {head}");
        }
    }
    fields.sort();
    Seen {
        status,
        fields,
        body: normalise(body, port),
    }
}

fn run(port: u16) -> Vec<Seen> {
    REQUESTS
        .iter()
        .map(|(m, host, path)| {
            let what = format!("{m} {host}{path}");
            seen(&exchange(port, m, host, path), port, &what)
        })
        .collect()
}

fn config(port: u16, up: &RawBackend, up404: &RawBackend, dead: u16) -> String {
    fill(
        CONFIG,
        &[
            ("PORT", port.to_string()),
            ("UP", up.port().to_string()),
            ("UP404", up404.port().to_string()),
            ("DEAD", dead.to_string()),
        ],
    )
}

#[test]
fn add_header_server_tokens_server_and_date_match_nginx() {
    let up = RawBackend::start(UPSTREAM_200.as_bytes(), After::Keep);
    let up404 = RawBackend::start(UPSTREAM_404.as_bytes(), After::Keep);
    let dead = free_port();
    let np = port();
    let nginx = {
        let _n = Nginx::start(&config(np, &up, &up404, dead), np);
        run(np)
    };
    let rp = port();
    let ours = {
        let _r = Ringfront::start(&config(rp, &up, &up404, dead));
        run(rp)
    };
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(n, r, "{:?}", REQUESTS[i]);
    }
    // The cases say what they should: spot checks on nginx's own answers.
    let field = |i: usize, name: &str| {
        nginx[i]
            .fields
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(field(0, "server"), ["TOKEN/V"]);
    assert_eq!(field(0, "x-pad"), Vec::<&str>::new());
    assert_eq!(field(0, "x-accel-other"), ["kept"]);
    assert_eq!(field(3, "x-loc"), ["ex.a.test|200|GET|1"]);
    assert_eq!(field(3, "etag"), ["mine"]);
    assert_eq!(field(5, "etag"), Vec::<&str>::new());
    assert_eq!(field(11, "server"), ["TOKEN/V", "extra"]);
    assert_eq!(field(12, "server"), ["TOKEN"]);
}
