//! One lookup, as nginx's resolver runs it: the queries for a name (A and AAAA, or SRV)
//! go to one name server over UDP; what is unanswered after 5 s (nginx's `resend_timeout`)
//! is sent again to the next server, until `resolver_timeout` ends the lookup ("110:
//! Operation timed out"). A truncated answer is asked again over TCP (5 s, nginx's
//! `tcp_timeout`). The answers combine as in `ngx_resolver_process_a`: an error in any is
//! the lookup's error; else the addresses of all (A first); else the CNAME of the answer
//! that came last is followed (50 times at most); else "Host not found".

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::udp::UdpSocket;
use monoio::net::TcpStream;
use ringfront_config::resolver::Resolver;

use super::wire::{self, Answer, Srv};
use super::WorkerDns;

const RESEND: Duration = Duration::from_secs(5);
const TCP_TIMEOUT: Duration = Duration::from_secs(5);
/// nginx's `NGX_RESOLVER_MAX_RECURSION`.
const MAX_CNAMES: usize = 50;
const NXDOMAIN: u8 = 3;

/// Why a name did not resolve: an error code from the answer (1-5) or the timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Code(u8),
    TimedOut,
}

impl Failure {
    /// `3: Host not found`, as nginx's `ngx_resolver_strerror` words it.
    pub fn text(self) -> String {
        let (code, what) = match self {
            Failure::TimedOut => (110, "Operation timed out"),
            Failure::Code(c) => (u32::from(c), strerror(c)),
        };
        format!("{code}: {what}")
    }
}

fn strerror(code: u8) -> &'static str {
    match code {
        1 => "Format error",
        2 => "Server failure",
        3 => "Host not found",
        4 => "Unimplemented",
        5 => "Operation refused",
        _ => "Unknown error",
    }
}

/// What a name resolved to.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    pub addrs: Vec<IpAddr>,
    pub srvs: Vec<Srv>,
    /// The smallest TTL along the way (CNAMEs included).
    pub ttl: u32,
}

/// Resolves `name` for the record `types`, starting with server `start`.
pub async fn lookup(
    dns: &WorkerDns,
    conf: &Resolver,
    timeout: Duration,
    name: &str,
    types: &[u16],
    start: usize,
    log: &dyn Fn(&str),
) -> Result<Resolved, Failure> {
    let deadline = Instant::now() + timeout;
    let mut server = start;
    let mut current = name.to_string();
    let mut ttl = u32::MAX;
    for _ in 0..=MAX_CNAMES {
        let (answers, order) = ask(dns, conf, &current, types, deadline, &mut server, log).await?;
        if let Some(&first) = order.iter().find(|&&i| answers[i].rcode != 0) {
            return Err(Failure::Code(answers[first].rcode));
        }
        ttl = answers.iter().map(|a| a.ttl).fold(ttl, u32::min);
        let mut found = Resolved::default();
        for a in &answers {
            found.addrs.extend_from_slice(&a.addrs);
            found.srvs.extend_from_slice(&a.srvs);
        }
        if !found.addrs.is_empty() || !found.srvs.is_empty() {
            found.ttl = if ttl == u32::MAX { 0 } else { ttl };
            return Ok(found);
        }
        match order.last().and_then(|&i| answers[i].cname.clone()) {
            Some(next) => current = next,
            None => return Err(Failure::Code(NXDOMAIN)),
        }
    }
    Err(Failure::Code(NXDOMAIN))
}

/// Asks every type for `name` and waits for all the answers: them in the order of
/// `types`, and the order they came in.
async fn ask(
    dns: &WorkerDns,
    conf: &Resolver,
    name: &str,
    types: &[u16],
    deadline: Instant,
    server: &mut usize,
    log: &dyn Fn(&str),
) -> Result<(Vec<Answer>, Vec<usize>), Failure> {
    let mut queries = Vec::with_capacity(types.len());
    for (&t, id) in types
        .iter()
        .zip(distinct_ids(types.len(), || dns.next_id()))
    {
        // A name that cannot be written is not found (nginx: NGX_DECLINED, NXDOMAIN).
        let q = wire::query(id, name, t).ok_or(Failure::Code(NXDOMAIN))?;
        queries.push((id, t, q));
    }
    let mut answers: Vec<Option<Answer>> = vec![None; types.len()];
    let mut order = Vec::with_capacity(types.len());
    // One socket for the lookup: an answer from a server asked in an earlier round still
    // counts after the queries went on to the next (nginx keeps a socket per server).
    let sock = match udp_for(&conf.servers) {
        Ok(s) => s,
        Err(e) => {
            log(&format!("socket() failed {}", crate::io::errno_text(&e)));
            monoio::time::sleep(deadline.saturating_duration_since(Instant::now())).await;
            return Err(Failure::TimedOut);
        }
    };
    let mut asked: Vec<SocketAddr> = Vec::with_capacity(conf.servers.len());
    loop {
        let Some(&addr) = conf.servers.get(*server % conf.servers.len().max(1)) else {
            return Err(Failure::TimedOut);
        };
        if !asked.contains(&addr) {
            asked.push(addr);
        }
        let round_end = deadline.min(Instant::now() + RESEND);
        let mut got = Got {
            answers: &mut answers,
            order: &mut order,
        };
        let to = Round {
            sock: &sock,
            addr,
            asked: &asked,
            end: round_end,
            deadline,
        };
        round(&to, name, &queries, &mut got, log).await;
        if answers.iter().all(Option::is_some) {
            return Ok((answers.into_iter().flatten().collect(), order));
        }
        if Instant::now() >= deadline {
            return Err(Failure::TimedOut);
        }
        *server = server.wrapping_add(1);
    }
}

/// `n` query ids from `next`, no two alike. Answers are matched to their query by id, so
/// an A and an AAAA query that drew the same id would leave the second one unanswerable
/// until `resolver_timeout` (a lookup's queries go to the same servers from one socket).
fn distinct_ids(n: usize, mut next: impl FnMut() -> u16) -> Vec<u16> {
    let mut ids = Vec::with_capacity(n);
    while ids.len() < n {
        let id = next();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The answers so far, by query, and the order they came in.
struct Got<'a> {
    answers: &'a mut [Option<Answer>],
    order: &'a mut Vec<usize>,
}

/// One round: the socket, the server asked now, every server asked so far (answers are
/// taken from them only), and when the round ends.
struct Round<'a> {
    sock: &'a UdpSocket,
    addr: SocketAddr,
    asked: &'a [SocketAddr],
    end: Instant,
    /// The lookup's deadline (`resolver_timeout`), which a TCP query may not pass.
    deadline: Instant,
}

/// One round with one server: sends what is unanswered, reads answers until the end.
async fn round(
    r: &Round<'_>,
    name: &str,
    queries: &[(u16, u16, Vec<u8>)],
    got: &mut Got<'_>,
    log: &dyn Fn(&str),
) {
    let target = on_socket(r.sock, r.addr);
    for (i, (_, _, q)) in queries.iter().enumerate() {
        if got.answers[i].is_none() {
            let (res, _) = r.sock.send_to(q.clone(), target).await;
            if let Err(e) = res {
                log(&format!(
                    "sendto() to {} failed {}",
                    r.addr,
                    crate::io::errno_text(&e)
                ));
            }
        }
    }
    let mut buf = vec![0u8; 4096];
    while got.answers.iter().any(Option::is_none) {
        let left = r.end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let (res, b) = match monoio::time::timeout(left, r.sock.recv_from(buf)).await {
            Ok(done) => done,
            Err(_) => return,
        };
        buf = b;
        let (n, from) = match res {
            Ok(got) => got,
            Err(e) => {
                log(&format!(
                    "recvfrom() failed {} while resolving {name}",
                    crate::io::errno_text(&e)
                ));
                return monoio::time::sleep(left).await;
            }
        };
        let from = SocketAddr::new(from.ip().to_canonical(), from.port());
        // Datagrams from anyone not asked are dropped, as a connected socket would.
        if !r.asked.contains(&from) {
            continue;
        }
        let packet = &buf[..n.min(buf.len())];
        take(from, name, queries, got, packet, r.deadline, log).await;
    }
}

/// Files one UDP answer under its query (asking over TCP when it is truncated).
async fn take(
    addr: SocketAddr,
    name: &str,
    queries: &[(u16, u16, Vec<u8>)],
    got: &mut Got<'_>,
    packet: &[u8],
    deadline: Instant,
    log: &dyn Fn(&str),
) {
    let pid = wire::packet_id(packet);
    let Some(i) = queries.iter().position(|(id, _, _)| Some(*id) == pid) else {
        let expect = queries.first().map_or(0, |q| q.0);
        log(&wire::WireError::WrongId(pid.unwrap_or(0)).message(name, expect));
        return;
    };
    if got.answers[i].is_some() {
        return;
    }
    let (id, qtype, q) = &queries[i];
    let mut answer = match wire::parse(packet, *id, name, *qtype) {
        Ok(a) => a,
        Err(e) => return log(&e.message(name, *id)),
    };
    // FORMERR and codes past REFUSED are logged and dropped before anything else (a
    // truncated one too), as nginx does: the lookup waits for another answer.
    if dropped(&answer, *id, name, log) {
        return;
    }
    if answer.truncated {
        let limit = TCP_TIMEOUT.min(deadline.saturating_duration_since(Instant::now()));
        answer = match monoio::time::timeout(limit, tcp_ask(addr, q)).await {
            Ok(Ok(reply)) => match wire::parse(&reply, *id, name, *qtype) {
                Ok(a) if a.truncated => return log(&format!("invalid TCP DNS response {id}")),
                Ok(a) if dropped(&a, *id, name, log) => return,
                Ok(a) => a,
                Err(e) => return log(&e.message(name, *id)),
            },
            Ok(Err(e)) => {
                return log(&format!(
                    "DNS over TCP failed {}",
                    crate::io::errno_text(&e)
                ))
            }
            Err(_) => return log(&format!("DNS over TCP to {addr} timed out")),
        };
    }
    got.answers[i] = Some(answer);
    got.order.push(i);
}

/// FORMERR and codes past REFUSED: logged, and the answer is not taken.
fn dropped(answer: &Answer, id: u16, name: &str, log: &dyn Fn(&str)) -> bool {
    let code = answer.rcode;
    let drop = code == 1 || code > 5;
    if drop {
        log(&format!(
            "DNS error ({code}: {}), query id:{id}, name:\"{name}\"",
            strerror(code)
        ));
    }
    drop
}

/// An unconnected UDP socket that reaches every server: IPv4 when all are, else a
/// dual-stack IPv6 one (IPv4 servers then as mapped addresses).
fn udp_for(servers: &[SocketAddr]) -> std::io::Result<UdpSocket> {
    let local: SocketAddr = match servers.iter().all(SocketAddr::is_ipv4) {
        true => (Ipv4Addr::UNSPECIFIED, 0).into(),
        false => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    UdpSocket::bind(local)
}

/// `addr` as the socket sends to it (a mapped address on an IPv6 socket).
fn on_socket(sock: &UdpSocket, addr: SocketAddr) -> SocketAddr {
    let v6 = sock.local_addr().is_ok_and(|a| a.is_ipv6());
    match (v6, addr) {
        (true, SocketAddr::V4(a)) => SocketAddr::new(a.ip().to_ipv6_mapped().into(), a.port()),
        _ => addr,
    }
}

/// One query over TCP: a two-byte length before each message (RFC 1035 4.2.2).
async fn tcp_ask(addr: SocketAddr, query: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(addr).await?;
    let mut msg = Vec::with_capacity(query.len() + 2);
    msg.extend_from_slice(&(query.len() as u16).to_be_bytes());
    msg.extend_from_slice(query);
    let (r, _) = s.write_all(msg).await;
    r?;
    let (r, len) = s.read_exact(vec![0u8; 2]).await;
    r?;
    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
    let (r, body) = s.read_exact(vec![0u8; len]).await;
    r?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::distinct_ids;

    #[test]
    fn a_lookups_queries_never_share_an_id() {
        let mut drawn = [7u16, 7, 7, 9, 7, 11].into_iter();
        let ids = distinct_ids(3, || drawn.next().unwrap_or(0));
        assert_eq!(ids, [7, 9, 11]);
        let mut one = [5u16].into_iter();
        assert_eq!(distinct_ids(1, || one.next().unwrap_or(0)), [5]);
    }
}
