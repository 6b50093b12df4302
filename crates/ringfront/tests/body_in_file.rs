//! Differential: request bodies in temporary files (`client_body_in_file_only on|clean`,
//! a body longer than `client_body_buffer_size`, `client_body_temp_path` with levels,
//! `$request_body_file`, `$request_body` empty when the body is in a file). The upstream
//! is told the file's name (`proxy_set_header X-File $request_body_file`) and answers
//! with what it reads from that file while the request is in flight, so the file is
//! seen holding the body; after the response, `clean` (and the buffer-size case) must
//! have removed it and `on` kept it. nginx 1.22 and ringfront run the same configuration.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use common::body::{counting_sink, peak_kib};
use common::{fill, port};
use ringfront_testkit::{Client, Nginx, Ringfront, TempDir};

const CONFIG: &str = "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path {TMP} 1 2;
    proxy_set_header X-File $request_body_file;
    add_header X-File $request_body_file;
    add_header X-Body $request_body;
    upstream two { server 127.0.0.1:{DROP}; server 127.0.0.1:{UP}; }
    server {
        listen 127.0.0.1:{PORT};
        server_name a.test;
        location /retry {
            client_body_in_file_only clean;
            proxy_next_upstream error timeout non_idempotent;
            proxy_pass http://two;
        }
        location /clean { client_body_in_file_only clean; proxy_pass http://127.0.0.1:{UP}; }
        location /on { client_body_in_file_only on; proxy_pass http://127.0.0.1:{UP}; }
        location /buffer {
            client_body_buffer_size 1k;
            proxy_pass http://127.0.0.1:{UP};
        }
    }
}
";

/// An upstream that answers each request with the body it got, then `|`, then the content
/// of the file its `X-File` field names (`-` when there is none), read right then.
fn file_reader() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for s in l.incoming().flatten() {
            thread::spawn(move || serve(s));
        }
    });
    port
}

fn serve(s: TcpStream) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let (mut len, mut file) = (0usize, None);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap_or((line, ""));
        match n.to_ascii_lowercase().as_str() {
            "content-length" => len = v.trim().parse().unwrap_or(0),
            "x-file" => file = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; len];
    if r.read_exact(&mut body).is_err() {
        return;
    }
    let seen = match file.filter(|f| !f.is_empty()) {
        Some(f) => std::fs::read(f).unwrap_or_else(|e| format!("unreadable: {e}").into_bytes()),
        None => b"-".to_vec(),
    };
    let mut answer = body;
    answer.push(b'|');
    answer.extend_from_slice(&seen);
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    );
    let mut s = s;
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(&answer);
}

/// What one request showed: status, the upstream's answer, `$request_body`, the file's
/// name relative to the temporary folder (digits as `N`), and whether it is still there.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: u16,
    answer: String,
    body_var: String,
    file_shape: String,
    kept: Option<String>,
}

fn shape(name: &str, tmp: &Path) -> String {
    let rel = name.strip_prefix(tmp.to_str().unwrap()).unwrap_or(name);
    rel.chars()
        .map(|c| if c.is_ascii_digit() { 'N' } else { c })
        .collect()
}

fn ask(port: u16, tmp: &Path, path: &str, body: &str, chunked: bool) -> Seen {
    let mut c = Client::connect(("127.0.0.1", port));
    let framing = match chunked {
        false => format!("Content-Length: {}\r\n\r\n{body}", body.len()),
        true => format!(
            "Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        ),
    };
    let req = format!("POST {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n{framing}");
    c.send_raw(req.as_bytes());
    let r = c.read_response();
    // A `clean` file is removed when the request is freed: for nginx after its lingering
    // close, which the client's own close ends.
    c.read_to_close();
    drop(c);
    let name = r.header("x-file").unwrap_or_default().to_string();
    let kept = (!name.is_empty()).then(|| still_there(&name)).flatten();
    Seen {
        status: r.status,
        answer: r.text(),
        body_var: r.header("x-body").unwrap_or_default().to_string(),
        file_shape: shape(&name, tmp),
        kept,
    }
}

/// The file's content once it stays (bounded wait for a removal).
fn still_there(name: &str) -> Option<String> {
    let end = Instant::now() + Duration::from_secs(3);
    while Path::new(name).exists() && Instant::now() < end {
        thread::sleep(Duration::from_millis(20));
    }
    std::fs::read_to_string(name).ok()
}

/// A peer that reads the start of a request and closes: the next peer must get the
/// whole body again, from the file.
fn dropper() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
        }
    });
    port
}

fn cases() -> Vec<(&'static str, String, bool)> {
    let big = "0123456789".repeat(300);
    // Several reads and writes of the file, sent twice.
    let large: String = (0..100_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    vec![
        ("/retry", large.clone(), false),
        ("/retry", large, true),
        ("/clean", "small body".to_string(), false),
        ("/clean", big.clone(), true),
        ("/on", "kept body".to_string(), false),
        ("/buffer", "short".to_string(), false),
        ("/buffer", big.clone(), false),
        ("/buffer", big, true),
    ]
}

fn run(port: u16, tmp: &Path) -> Vec<Seen> {
    cases()
        .into_iter()
        .map(|(p, b, chunked)| ask(port, tmp, p, &b, chunked))
        .collect()
}

fn config(p: u16, up: u16, tmp: &Path) -> String {
    fill(
        CONFIG,
        &[
            ("PORT", p.to_string()),
            ("UP", up.to_string()),
            ("DROP", DROPPER.with(|d| d.to_string())),
            ("TMP", tmp.display().to_string()),
        ],
    )
}

std::thread_local! {
    static DROPPER: u16 = dropper();
}

#[test]
fn bodies_in_files_match_nginx() {
    let up = file_reader();
    let dir = TempDir::new("body-in-file");
    let (ntmp, rtmp): (PathBuf, PathBuf) = (dir.path().join("n"), dir.path().join("r"));
    let np = port();
    let nginx = {
        let _n = Nginx::start(&config(np, up, &ntmp), np);
        run(np, &ntmp)
    };
    let rp = port();
    let ours = {
        let _r = Ringfront::start(&config(rp, up, &rtmp));
        run(rp, &rtmp)
    };
    for (i, (n, r)) in nginx.iter().zip(&ours).enumerate() {
        assert_eq!(n, r, "case {i}: {:?}", &cases()[i].0);
    }
    // What the cases are there for, on nginx's side.
    let big = "0123456789".repeat(300);
    let large = &cases()[0].1;
    assert_eq!(
        nginx[0].answer,
        format!("{large}|{large}"),
        "retried from the file"
    );
    assert_eq!(nginx[1].answer, nginx[0].answer, "chunked alike");
    let nginx = &nginx[2..];
    assert_eq!(
        nginx[0].answer, "small body|small body",
        "the file holds the body"
    );
    assert_eq!(nginx[0].file_shape, "/N/NN/NNNNNNNNNN", "levels 1 2");
    assert_eq!(nginx[0].kept, None, "clean: removed at the end");
    assert_eq!(
        nginx[0].body_var, "",
        "$request_body is empty with the body in a file"
    );
    assert_eq!(
        nginx[1].answer,
        format!("{big}|{big}"),
        "chunked, de-chunked in the file"
    );
    assert_eq!(nginx[2].kept.as_deref(), Some("kept body"), "on: kept");
    assert_eq!(nginx[3].answer, "short|-", "a short body stays in memory");
    assert_eq!(nginx[3].body_var, "short");
    // Past the buffer: a file, unlinked once open (so named, never found).
    assert!(nginx[4].answer.starts_with(&format!("{big}|unreadable")));
    assert_eq!(nginx[4].file_shape, "/N/NN/NNNNNNNNNN");
    assert_eq!(nginx[4].kept, None);
    assert_eq!(nginx[4].body_var, "");
    assert_eq!(nginx[5].answer, nginx[4].answer, "chunked alike");
}

/// `client_body_in_file_only`: a 64 MiB body goes to its file as it arrives and to the
/// upstream from there, so ringfront's peak memory grows by far less than the body.
#[test]
fn a_large_body_in_a_file_is_not_held_in_memory() {
    const SIZE: usize = 64 << 20;
    let sink = counting_sink();
    let dir = TempDir::new("body-in-file-large");
    let rp = port();
    let conf = format!(
        "worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_max_body_size 0;
    client_body_temp_path {};
    server {{
        listen 127.0.0.1:{rp};
        location / {{ client_body_in_file_only clean; proxy_pass http://127.0.0.1:{sink}; }}
    }}
}}
",
        dir.path().join("body").display()
    );
    let r = Ringfront::start(&conf);
    let before = peak_kib(r.pid());
    let mut c = Client::connect(("127.0.0.1", rp));
    let head = format!(
        "PUT /big HTTP/1.1\r\nHost: a\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n"
    );
    c.send_raw(head.as_bytes());
    let block = vec![b'x'; 1 << 20];
    for _ in 0..SIZE >> 20 {
        c.send_raw(&block);
    }
    let resp = c.read_response();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.text(), SIZE.to_string(), "the whole body arrived");
    let grown = peak_kib(r.pid()).saturating_sub(before);
    eprintln!("ringfront's peak memory grew by {grown} KiB for a {SIZE}-byte body in a file");
    assert!(
        grown < 16 * 1024,
        "peak memory grew by {grown} KiB for a 64 MiB body"
    );
}
