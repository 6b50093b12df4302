//! A raw-bytes backend for hostile-response tests: answers every request (head plus a
//! `Content-Length` body) with fixed bytes, then keeps, closes, resets or stalls the
//! connection, counting accepted connections and requests.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

fn find_sub(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// What a [`RawBackend`] does after writing its reply bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Keep the connection open and answer the next request on it the same way.
    Keep,
    /// Close (FIN).
    Close,
    /// Close with a TCP RST (`SO_LINGER` 0).
    Reset,
    /// Keep the connection open without reading or writing for this long, then close.
    Stall(Duration),
}

struct RawShared {
    reply: Vec<u8>,
    after: After,
    accepted: AtomicUsize,
    requests: AtomicUsize,
    received: Mutex<Vec<u8>>,
    stop: AtomicBool,
}

/// A backend that answers every request (head + Content-Length body) with fixed bytes.
pub struct RawBackend {
    shared: Arc<RawShared>,
    port: u16,
}

impl RawBackend {
    pub fn start(reply: &[u8], after: After) -> RawBackend {
        let l = crate::net::fresh_listener();
        let port = l.local_addr().unwrap().port();
        let shared = Arc::new(RawShared {
            reply: reply.to_vec(),
            after,
            accepted: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            received: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let sh = shared.clone();
        thread::spawn(move || {
            for conn in l.incoming() {
                if sh.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                sh.accepted.fetch_add(1, Ordering::SeqCst);
                let sh = sh.clone();
                thread::spawn(move || serve_raw(&sh, conn));
            }
        });
        RawBackend { shared, port }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<u8> {
        self.shared.received.lock().unwrap().clone()
    }
}

impl Drop for RawBackend {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve_raw(sh: &RawShared, mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let mut buf: Vec<u8> = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        // One request: head, then a Content-Length body (proxies send no chunked bodies).
        let head_end = loop {
            if let Some(e) = find_sub(&buf, b"\r\n\r\n") {
                break e + 4;
            }
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    sh.received.lock().unwrap().extend_from_slice(&tmp[..n]);
                    buf.extend_from_slice(&tmp[..n]);
                }
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let cl: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + cl {
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    sh.received.lock().unwrap().extend_from_slice(&tmp[..n]);
                    buf.extend_from_slice(&tmp[..n]);
                }
            }
        }
        buf.drain(..head_end + cl);
        sh.requests.fetch_add(1, Ordering::SeqCst);
        if s.write_all(&sh.reply).is_err() {
            return;
        }
        match sh.after {
            After::Keep => {}
            After::Close => {
                let _ = s.shutdown(Shutdown::Both);
                return;
            }
            After::Reset => {
                let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                return;
            }
            After::Stall(d) => {
                thread::sleep(d);
                return;
            }
        }
    }
}
