//! Differential: `add_trailer` on proxied responses, static files and ringfront's own
//! answers (`return`, error pages). Real nginx 1.22 and ringfront run the
//! same configuration against the same raw upstreams (a `Content-Length` body, a chunked one
//! with trailers of its own, a 404, an empty body); per request the status, the framing
//! (`Transfer-Encoding` / `Content-Length`), the decoded body and the trailer fields must
//! agree — for HTTP/1.1 (chunked, trailers after the last chunk), HTTP/1.0 (no trailers) and
//! HEAD (no body), and with `chunked_transfer_encoding off` (no chunks, no trailers). The chunk sizes themselves are not compared (they follow reads).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{fill, port};
use ringfront_testkit::{After, Nginx, RawBackend, Ringfront};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        add_trailer X-Var $host;
        add_trailer X-Always $uri always;
        add_trailer X-Empty '';
        add_trailer X-Sent-Trailer $sent_trailer_x_var;
        location /len { proxy_pass http://127.0.0.1:{LEN}; }
        location /chunked { proxy_pass http://127.0.0.1:{CHUNKED}; }
        location /nf { proxy_pass http://127.0.0.1:{NF}; }
        location /empty { proxy_pass http://127.0.0.1:{EMPTY}; }
        location /close { proxy_pass http://127.0.0.1:{CLOSE}; }
        location /own { proxy_pass http://127.0.0.1:{LEN}; add_trailer X-Own \"$request_method $arg_a\"; }
        location /none { proxy_pass http://127.0.0.1:{LEN}; add_header X-H h; }
        location /files/ { root {ROOT}; }
        location /nc/len { proxy_pass http://127.0.0.1:{LEN}; chunked_transfer_encoding off; }
        location /nc/chunked { proxy_pass http://127.0.0.1:{CHUNKED}; chunked_transfer_encoding off; }
        location /nc/file { alias {ROOT}/files/t1; chunked_transfer_encoding off; }
        location /ret { return 200 \"\"; }
        location /text { return 200 \"some text\"; }
        location /gone { return 404; }
        location /sent/ { alias {ROOT}/files/; add_trailer X-Sent \"$sent_http_accept_ranges $sent_http_content_type\"; }
        location /sentret { add_trailer X-Sent \"$sent_http_content_type\"; return 200 \"text\"; }
        location /ulen/len {
            proxy_pass http://127.0.0.1:{LEN};
            add_trailer X-Length \"$upstream_response_length $upstream_bytes_received $upstream_status\";
            add_trailer X-Sent \"$sent_http_content_type $upstream_http_content_type\";
        }
        location /ulen/chunked { proxy_pass http://127.0.0.1:{CHUNKED}; add_trailer X-Length $upstream_response_length; }
        location /ulen/close { proxy_pass http://127.0.0.1:{CLOSE}; add_trailer X-Length $upstream_response_length; }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name b.test;
        location / { proxy_pass http://127.0.0.1:{LEN}; }
    }
}
";

const LEN: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
const CHUNKED: &str = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
    2\r\nhe\r\n3\r\nllo\r\n0\r\nX-Upstream: t\r\n\r\n";
const NF: &str = "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno";
const EMPTY: &str = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
/// Its body ends where the upstream closes.
const CLOSE: &str = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close";

/// (method, version, Host, path).
const REQUESTS: &[(&str, &str, &str, &str)] = &[
    ("GET", "1.1", "a.test", "/len"),
    ("GET", "1.1", "a.test", "/chunked"),
    ("GET", "1.1", "a.test", "/nf"),
    ("GET", "1.1", "a.test", "/empty"),
    ("GET", "1.1", "a.test", "/close"),
    ("GET", "1.1", "a.test", "/own?a=1"),
    ("GET", "1.1", "a.test", "/none"),
    ("GET", "1.0", "a.test", "/len"),
    ("GET", "1.0", "a.test", "/chunked"),
    ("HEAD", "1.1", "a.test", "/len"),
    ("GET", "1.1", "b.test", "/"),
    ("GET", "1.1", "a.test", "/files/t1"),
    ("GET", "1.1", "a.test", "/files/big"),
    ("GET", "1.1", "a.test", "/files/empty"),
    ("GET", "1.1", "a.test", "/files/nx"),
    ("HEAD", "1.1", "a.test", "/files/t1"),
    ("GET", "1.0", "a.test", "/files/t1"),
    ("GET", "1.1", "a.test", "/ret"),
    ("GET", "1.1", "a.test", "/text"),
    ("GET", "1.1", "a.test", "/gone"),
    ("GET", "1.1", "a.test", "/nc/len"),
    ("GET", "1.1", "a.test", "/nc/chunked"),
    ("GET", "1.1", "a.test", "/nc/file"),
    ("GET", "1.1", "a.test", "/sent/t1"),
    ("GET", "1.1", "a.test", "/sentret"),
    ("GET", "1.1", "a.test", "/ulen/len"),
    ("GET", "1.1", "a.test", "/ulen/chunked"),
    ("GET", "1.1", "a.test", "/ulen/close"),
];

#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: String,
    framing: Vec<String>,
    body: String,
    trailers: Vec<String>,
}

fn decode_chunked(mut rest: &str) -> (String, Vec<String>) {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("chunk size line");
        let n = usize::from_str_radix(size.trim(), 16).expect("hex size");
        if n == 0 {
            let (trailers, _) = after.split_once("\r\n\r\n").unwrap_or((after, ""));
            let mut t: Vec<String> = trailers
                .split("\r\n")
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect();
            t.sort();
            return (body, t);
        }
        body.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").expect("chunk end");
    }
}

fn get(port: u16, (method, version, host, path): (&str, &str, &str, &str)) -> Seen {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req =
        format!("{method} {path} HTTP/{version}\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").expect("a whole head");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default().to_string();
    let framing: Vec<String> = lines
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.starts_with("transfer-encoding:") || l.starts_with("content-length:")
        })
        .map(str::to_ascii_lowercase)
        .collect();
    let chunked = framing.iter().any(|f| f.contains("chunked"));
    let (body, trailers) = if chunked && method != "HEAD" {
        decode_chunked(rest)
    } else {
        (rest.to_string(), Vec::new())
    };
    // Error pages name the product.
    let version = concat!("ringfront/", env!("CARGO_PKG_VERSION"));
    let body = body
        .replace("nginx/1.22.1", "TOKEN")
        .replace(version, "TOKEN");
    Seen {
        status,
        framing,
        body,
        trailers,
    }
}

fn config(port: u16, ups: &[&RawBackend; 5], root: &str) -> String {
    let p = |i: usize| ups[i].port().to_string();
    fill(
        CONFIG,
        &[
            ("PORT", port.to_string()),
            ("LEN", p(0)),
            ("CHUNKED", p(1)),
            ("NF", p(2)),
            ("EMPTY", p(3)),
            ("CLOSE", p(4)),
            ("ROOT", root.to_string()),
        ],
    )
}

#[test]
fn add_trailer_on_proxied_responses_matches_nginx() {
    let b = |r: &str| RawBackend::start(r.as_bytes(), After::Keep);
    let (len, chunked, nf, empty) = (b(LEN), b(CHUNKED), b(NF), b(EMPTY));
    let close = RawBackend::start(CLOSE.as_bytes(), After::Close);
    let ups = [&len, &chunked, &nf, &empty, &close];
    let dir = ringfront_testkit::TempDir::new("rf-trailers");
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("t1"), "SEE-THIS").unwrap();
    // Larger than one read: several chunks.
    let big: String = (0..200_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    std::fs::write(files.join("big"), &big).unwrap();
    std::fs::write(files.join("empty"), "").unwrap();
    let root = dir.path().to_str().unwrap();
    let np = port();
    let nginx: Vec<Seen> = {
        let _n = Nginx::start(&config(np, &ups, root), np);
        REQUESTS.iter().map(|r| get(np, *r)).collect()
    };
    let rp = port();
    let ours: Vec<Seen> = {
        let _r = Ringfront::start(&config(rp, &ups, root));
        REQUESTS.iter().map(|r| get(rp, *r)).collect()
    };
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(n, r, "{:?}", REQUESTS[i]);
    }
    // The cases say what they should: spot checks on nginx's own answers.
    assert_eq!(nginx[0].framing, ["transfer-encoding: chunked"]);
    assert_eq!(
        nginx[0].trailers,
        ["X-Always: /len", "X-Sent-Trailer: a.test", "X-Var: a.test"]
    );
    assert_eq!(nginx[1].trailers[0], "X-Always: /chunked");
    assert_eq!(nginx[2].trailers, ["X-Always: /nf"]);
    assert_eq!(nginx[5].trailers, ["X-Own: GET 1"]);
    assert!(nginx[7].trailers.is_empty() && nginx[7].body == "hello");
    assert_eq!(nginx[10].framing, ["content-length: 5"]);
    assert_eq!(nginx[4].body, "until close");
    let at = |path: &str, version: &str| {
        let i = REQUESTS
            .iter()
            .position(|r| r.3 == path && r.1 == version && r.0 == "GET");
        &nginx[i.expect("a listed request")]
    };
    assert_eq!(at("/files/t1", "1.1").body, "SEE-THIS");
    assert_eq!(at("/files/big", "1.1").body, big);
    assert_eq!(at("/files/t1", "1.1").trailers.len(), 3);
    assert_eq!(at("/gone", "1.1").trailers, ["X-Always: /gone"]);
    assert!(at("/files/t1", "1.0").trailers.is_empty());
    assert_eq!(at("/nc/chunked", "1.1").framing, Vec::<String>::new());
    assert_eq!(at("/nc/chunked", "1.1").body, "hello");
    assert_eq!(at("/nc/file", "1.1").framing, ["content-length: 8"]);
    // `$sent_http_*` see the response's fields; `$upstream_*` are known at the last chunk.
    assert_eq!(at("/sent/t1", "1.1").trailers, ["X-Sent: bytes text/plain"]);
    assert_eq!(at("/sentret", "1.1").trailers, ["X-Sent: text/plain"]);
    assert_eq!(
        at("/ulen/len", "1.1").trailers,
        ["X-Length: 5 69 200", "X-Sent: text/plain text/plain"]
    );
    assert!(at("/ulen/close", "1.1").trailers[0].starts_with("X-Length: "));
}
