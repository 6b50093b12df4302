//! A small authoritative DNS server for tests: UDP and TCP on 127.0.0.1 (one port for
//! both), answers that a test switches at run time ([`DnsServer::set`]): A, AAAA, SRV and
//! CNAME records with a TTL, NXDOMAIN or another error code, silence (the resolver times
//! out), or a truncated UDP answer that must be asked again over TCP. Every question is
//! counted, and a test can wait for a count instead of sleeping. Its own encoder, written
//! apart from ringfront's.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub const A: u16 = 1;
pub const CNAME: u16 = 5;
pub const AAAA: u16 = 28;
pub const SRV: u16 = 33;

/// One record of an answer (its owner is the name asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: String,
    },
}

impl Record {
    fn rtype(&self) -> u16 {
        match self {
            Record::A(_) => A,
            Record::Aaaa(_) => AAAA,
            Record::Cname(_) => CNAME,
            Record::Srv { .. } => SRV,
        }
    }
}

/// What the server says about one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The records; a query gets those of its type, and every CNAME.
    pub records: Vec<Record>,
    pub ttl: u32,
    /// The response code (3 is NXDOMAIN).
    pub rcode: u8,
    /// Never answer (the resolver must time out).
    pub silent: bool,
    /// Over UDP, answer with TC set and no records; the records come over TCP.
    pub truncate_udp: bool,
    /// Answer this much later (UDP).
    pub delay: Duration,
}

impl Answer {
    pub fn records(records: Vec<Record>, ttl: u32) -> Answer {
        Answer {
            records,
            ttl,
            rcode: 0,
            silent: false,
            truncate_udp: false,
            delay: Duration::ZERO,
        }
    }

    /// A records for `ips`.
    pub fn a(ips: &[Ipv4Addr], ttl: u32) -> Answer {
        Answer::records(ips.iter().map(|ip| Record::A(*ip)).collect(), ttl)
    }

    /// A CNAME to `target`.
    pub fn cname(target: &str, ttl: u32) -> Answer {
        Answer::records(vec![Record::Cname(target.to_string())], ttl)
    }

    /// SRV records `(priority, weight, port, target)`.
    pub fn srv(list: &[(u16, u16, u16, &str)], ttl: u32) -> Answer {
        let records = list
            .iter()
            .map(|&(priority, weight, port, target)| Record::Srv {
                priority,
                weight,
                port,
                target: target.to_string(),
            })
            .collect();
        Answer::records(records, ttl)
    }

    pub fn nxdomain() -> Answer {
        Answer::rcode(3)
    }

    pub fn rcode(code: u8) -> Answer {
        Answer {
            rcode: code,
            ..Answer::records(Vec::new(), 0)
        }
    }

    pub fn silent() -> Answer {
        Answer {
            silent: true,
            ..Answer::records(Vec::new(), 0)
        }
    }

    /// This answer, `delay` later.
    pub fn delayed(mut self, delay: Duration) -> Answer {
        self.delay = delay;
        self
    }

    /// This answer, truncated over UDP.
    pub fn truncated(mut self) -> Answer {
        self.truncate_udp = true;
        self
    }
}

#[derive(Default)]
struct State {
    answers: HashMap<String, Answer>,
    /// Questions seen: (name, type, over TCP).
    asked: Vec<(String, u16, bool)>,
}

struct Inner {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
}

/// The running server; stops when dropped.
pub struct DnsServer {
    port: u16,
    inner: Arc<Inner>,
}

impl DnsServer {
    /// Starts on a fresh 127.0.0.1 port (the same for UDP and TCP). Names without an
    /// answer get NXDOMAIN.
    pub fn start() -> DnsServer {
        let (tcp, udp) = loop {
            let tcp = crate::fresh_listener();
            let port = tcp.local_addr().expect("local_addr").port();
            if let Ok(udp) = UdpSocket::bind(("127.0.0.1", port)) {
                break (tcp, udp);
            }
        };
        let port = udp.local_addr().expect("local_addr").port();
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        udp.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        tcp.set_nonblocking(true).expect("nonblocking");
        let i = inner.clone();
        thread::spawn(move || serve_udp(&udp, &i));
        let i = inner.clone();
        thread::spawn(move || serve_tcp(&tcp, &i));
        DnsServer { port, inner }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`, for a `resolver` line.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sets what `name` answers from now on.
    pub fn set(&self, name: &str, answer: Answer) {
        let mut st = self.lock();
        st.answers.insert(name.to_ascii_lowercase(), answer);
    }

    /// How many questions for `name` of `qtype` arrived (UDP and TCP).
    pub fn queries(&self, name: &str, qtype: u16) -> usize {
        let name = name.to_ascii_lowercase();
        let st = self.lock();
        st.asked
            .iter()
            .filter(|(n, t, _)| *n == name && *t == qtype)
            .count()
    }

    /// How many questions for `name` came over TCP.
    pub fn tcp_queries(&self, name: &str) -> usize {
        let name = name.to_ascii_lowercase();
        let st = self.lock();
        st.asked
            .iter()
            .filter(|(n, _, tcp)| *n == name && *tcp)
            .count()
    }

    /// Waits until `name` was asked for `qtype` at least `n` times; false after `limit`.
    pub fn wait_queries(&self, name: &str, qtype: u16, n: usize, limit: Duration) -> bool {
        let name = name.to_ascii_lowercase();
        let end = Instant::now() + limit;
        let mut st = self.lock();
        loop {
            let seen = st
                .asked
                .iter()
                .filter(|(q, t, _)| *q == name && *t == qtype)
                .count();
            if seen >= n {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.inner.changed.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
    }
}

fn serve_udp(sock: &UdpSocket, inner: &Inner) {
    let mut buf = [0u8; 1500];
    while !inner.stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        if let Some((reply, delay)) = respond(&buf[..n], inner, false) {
            if delay.is_zero() {
                let _ = sock.send_to(&reply, from);
            } else if let Ok(s) = sock.try_clone() {
                thread::spawn(move || {
                    thread::sleep(delay);
                    let _ = s.send_to(&reply, from);
                });
            }
        }
    }
}

fn serve_tcp(listener: &TcpListener, inner: &Inner) {
    while !inner.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut len = [0u8; 2];
                if s.read_exact(&mut len).is_err() {
                    continue;
                }
                let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
                if s.read_exact(&mut q).is_err() {
                    continue;
                }
                if let Some((reply, _)) = respond(&q, inner, true) {
                    let mut msg = (reply.len() as u16).to_be_bytes().to_vec();
                    msg.extend_from_slice(&reply);
                    let _ = s.write_all(&msg);
                }
            }
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// The reply to one query packet and when to send it, or `None` to stay silent.
fn respond(q: &[u8], inner: &Inner, tcp: bool) -> Option<(Vec<u8>, Duration)> {
    let (name, qtype, qend) = question(q)?;
    let answer = {
        let mut st = inner.state.lock().unwrap_or_else(|e| e.into_inner());
        st.asked.push((name.clone(), qtype, tcp));
        inner.changed.notify_all();
        st.answers.get(&name).cloned()
    };
    let answer = answer.unwrap_or_else(Answer::nxdomain);
    if answer.silent {
        return None;
    }
    let mut out = q[..qend].to_vec();
    let truncate = answer.truncate_udp && !tcp;
    out[2] = 0x84 | q[2] & 0x01 | if truncate { 0x02 } else { 0 };
    out[3] = 0x80 | (answer.rcode & 0x0f);
    out[6..12].fill(0);
    if truncate || answer.rcode != 0 {
        return Some((out, answer.delay));
    }
    let mut count = 0u16;
    for r in answer
        .records
        .iter()
        .filter(|r| r.rtype() == qtype || r.rtype() == CNAME)
    {
        out.extend_from_slice(&[0xc0, 12]);
        out.extend_from_slice(&r.rtype().to_be_bytes());
        out.extend_from_slice(&[0, 1]);
        out.extend_from_slice(&answer.ttl.to_be_bytes());
        let data = rdata(r);
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(&data);
        count += 1;
    }
    out[6..8].copy_from_slice(&count.to_be_bytes());
    Some((out, answer.delay))
}

/// The question of a query: its name (lower case), type, and where it ends.
fn question(q: &[u8]) -> Option<(String, u16, usize)> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*q.get(at)?);
        if len == 0 {
            at += 1;
            break;
        }
        if len > 63 {
            return None;
        }
        labels.push(String::from_utf8_lossy(q.get(at + 1..at + 1 + len)?).to_ascii_lowercase());
        at += 1 + len;
    }
    let qtype = u16::from_be_bytes([*q.get(at)?, *q.get(at + 1)?]);
    q.get(at + 3)?;
    Some((labels.join("."), qtype, at + 4))
}

fn rdata(r: &Record) -> Vec<u8> {
    match r {
        Record::A(ip) => ip.octets().to_vec(),
        Record::Aaaa(ip) => ip.octets().to_vec(),
        Record::Cname(target) => name(target),
        Record::Srv {
            priority,
            weight,
            port,
            target,
        } => {
            let mut d = Vec::new();
            d.extend_from_slice(&priority.to_be_bytes());
            d.extend_from_slice(&weight.to_be_bytes());
            d.extend_from_slice(&port.to_be_bytes());
            d.extend_from_slice(&name(target));
            d
        }
    }
}

fn name(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in text.trim_end_matches('.').split('.') {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}
