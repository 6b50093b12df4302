//! Golden traces from real nginx for the balancers whose choice is a pure function of the
//! request (`ip_hash`, `hash KEY`, `hash KEY consistent`), and [`get_from`], a GET from a
//! chosen loopback source address (all of 127.0.0.0/8 is local on Linux), which `ip_hash`
//! tests need. `cargo run -p ringfront-testkit --bin record-golden` rewrites the files in
//! `crates/ringfront-upstream/tests/golden/`.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use socket2::{Domain, Socket, Type};

use crate::wire::{find_header, Head};
use crate::{free_port, Backend, Nginx, Response, NGINX_BIN};

/// `GET path` to `addr` from `source` (bound before connect), `Connection: close`. The body
/// is whatever arrives until the server closes.
pub fn get_from(source: Ipv4Addr, addr: SocketAddr, path: &str) -> io::Result<Response> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    sock.bind(&SocketAddrV4::new(source, 0).into())?;
    sock.connect_timeout(&addr.into(), Duration::from_secs(10))?;
    let mut s: std::net::TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no response head"))?;
    let head = Head::parse(&raw[..split])?;
    let mut parts = head.first_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("").to_string();
    let status = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let reason = parts.next().unwrap_or("").to_string();
    Ok(Response {
        version,
        status,
        reason,
        headers: head.headers,
        body: raw[split + 4..].to_vec(),
        trailers: Vec::new(),
    })
}

/// The client sources of the `ip_hash` trace: `n` addresses spread over many /24 networks,
/// plus a few sharing a /24 (ip_hash keys on the first three octets only).
pub fn ip_hash_sources(n: usize) -> Vec<Ipv4Addr> {
    let mut v: Vec<Ipv4Addr> = (0..n as u32)
        .map(|i| {
            let a = ((i * 37 + i / 256) % 256) as u8;
            let b = ((i * 101 + 7) % 256) as u8;
            let c = (1 + (i * 13) % 254) as u8;
            Ipv4Addr::new(127, a, b, c)
        })
        .collect();
    v.extend([
        Ipv4Addr::new(127, 0, 0, 1),
        Ipv4Addr::new(127, 0, 0, 2),
        Ipv4Addr::new(127, 0, 0, 254),
        Ipv4Addr::new(127, 255, 255, 254),
        Ipv4Addr::new(127, 1, 2, 3),
        Ipv4Addr::new(127, 1, 2, 200),
    ]);
    v.sort();
    v.dedup();
    v
}

/// The request keys of the `hash` traces.
pub fn hash_keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/k/{i}")).collect()
}

/// One golden trace: an upstream block and (request, server) pairs nginx produced.
pub struct Trace {
    pub upstream: String,
    pub servers: Vec<(String, u32)>,
    pub pairs: Vec<(String, String)>,
}

/// Parses a golden file: the `# server ADDR weight=W` header lines and the `A<TAB>B` lines.
pub fn parse_trace(text: &str) -> Trace {
    let mut servers = Vec::new();
    let mut pairs = Vec::new();
    let mut upstream = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# server ") {
            let (addr, w) = rest.split_once(" weight=").expect("server line");
            servers.push((addr.to_string(), w.parse().expect("weight")));
        } else if let Some(rest) = line.strip_prefix("# | ") {
            upstream.push_str(rest);
            upstream.push('\n');
        } else if !line.starts_with('#') && !line.is_empty() {
            let (a, b) = line.split_once('\t').expect("tab-separated line");
            pairs.push((a.to_string(), b.to_string()));
        }
    }
    Trace {
        upstream,
        servers,
        pairs,
    }
}

/// The config every golden trace runs under: `upstream` (the whole `upstream u { ... }`
/// block) behind `proxy_pass http://u;` on 127.0.0.1:`port`, one worker.
pub fn config(upstream: &str, port: u16) -> String {
    format!(
        "worker_processes 1;\nevents {{ worker_connections 256; }}\nhttp {{\n    access_log off;\n\
         {upstream}\n    server {{\n        listen 127.0.0.1:{port};\n        \
         location / {{ proxy_pass http://u; }}\n    }}\n}}\n"
    )
}

/// Sends one request per `(source, path)` to the proxy at `addr`; returns the answering
/// backend per request as `127.0.0.1:PORT` (`-` when not a 200 from a backend).
pub fn ask(addr: SocketAddr, requests: &[(Ipv4Addr, String)]) -> Vec<String> {
    requests
        .iter()
        .map(|(src, path)| {
            let r = get_from(*src, addr, path).unwrap_or_else(|e| panic!("GET {path}: {e}"));
            match find_header(&r.headers, "x-backend") {
                Some(b) if r.status == 200 => format!("127.0.0.1:{b}"),
                _ => "-".to_string(),
            }
        })
        .collect()
}

/// The requests of a parsed trace: from that client address (ip_hash traces), or that
/// URI from 127.0.0.1.
pub fn requests_of(trace: &Trace) -> Vec<(Ipv4Addr, String)> {
    trace
        .pairs
        .iter()
        .map(|(a, _)| match a.parse::<Ipv4Addr>() {
            Ok(ip) => (ip, "/".to_string()),
            Err(_) => (Ipv4Addr::LOCALHOST, a.clone()),
        })
        .collect()
}

/// Runs nginx on [`config`] and [`ask`]s it.
pub fn run_nginx(upstream: &str, requests: &[(Ipv4Addr, String)]) -> Vec<String> {
    let port = free_port();
    let _nginx = Nginx::start(&config(upstream, port), port);
    ask(SocketAddr::from(([127, 0, 0, 1], port)), requests)
}

/// The `upstream u { ... }` block for `method` over `servers` (address, weight).
pub fn upstream_block(method: &str, servers: &[(String, u32)]) -> String {
    let mut s = format!("upstream u {{\n    {method};\n");
    for (a, w) in servers {
        if *w == 1 {
            s.push_str(&format!("    server {a};\n"));
        } else {
            s.push_str(&format!("    server {a} weight={w};\n"));
        }
    }
    s.push('}');
    s
}

/// Records one trace as golden-file text.
pub fn record(
    method: &str,
    servers: &[(String, u32)],
    requests: &[(Ipv4Addr, String)],
    by_source: bool,
) -> String {
    let upstream = upstream_block(method, servers);
    let answers = run_nginx(&upstream, requests);
    let version = std::process::Command::new(NGINX_BIN)
        .arg("-v")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
        .unwrap_or_default();
    let date = std::process::Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%dT%H:%M:%SZ")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut out = format!(
        "# {version}\n# recorded {date} by `cargo run -p ringfront-testkit --bin record-golden`\n"
    );
    out.push_str("# upstream block (nginx.conf, `proxy_pass http://u;`, worker_processes 1):\n");
    for l in upstream.lines() {
        out.push_str(&format!("# | {l}\n"));
    }
    for (a, w) in servers {
        out.push_str(&format!("# server {a} weight={w}\n"));
    }
    out.push_str(if by_source {
        "# CLIENT_IP\tSERVER_ADDR\n"
    } else {
        "# KEY\tSERVER_ADDR\n"
    });
    for ((src, path), server) in requests.iter().zip(answers) {
        let key = if by_source {
            src.to_string()
        } else {
            path.clone()
        };
        out.push_str(&format!("{key}\t{server}\n"));
    }
    out
}

/// Backends on the fixed ports of the golden traces (the addresses are part of the hash).
pub fn golden_backends(ports: &[u16]) -> Vec<Backend> {
    ports.iter().map(|p| Backend::start_on(*p)).collect()
}
