//! Request-body helpers: an upstream that counts what it gets, and a process's peak memory.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

/// The head and what follows it, once a whole head is in.
fn split(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = b.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((&b[..at + 4], &b[at + 4..]))
}

fn field(head: &[u8], name: &str) -> Option<String> {
    String::from_utf8_lossy(head).split("\r\n").find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

/// An upstream that counts the body's bytes (`Content-Length` requests) and answers the
/// count.
pub fn counting_sink() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut got = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            let mut body = 0usize;
            let mut want = None;
            while want.is_none_or(|w| body < w) {
                let n = match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                match want {
                    Some(_) => body += n,
                    None => {
                        got.extend_from_slice(&buf[..n]);
                        if let Some((h, rest)) = split(&got) {
                            want = field(h, "content-length").and_then(|v| v.parse().ok());
                            body = rest.len();
                        }
                    }
                }
            }
            let text = body.to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = s.write_all(reply.as_bytes());
        }
    });
    port
}

/// The peak resident memory of a process, in KiB.
pub fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
