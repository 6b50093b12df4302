//! Variables (`$host`, `$upstream_addr`, ...) evaluated for `proxy_set_header`, `return` and
//! access-log lines. Values are written straight into the caller's buffer: no per-variable
//! allocation on the request path.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ringfront_config::unix_addr::is_unix;
use ringfront_config::{LogEscape, Template, TemplatePart, Variable};
use ringfront_http::RequestHead;
use ringfront_upstream::exchange::{TryPeer, TryRecord};
use ringfront_upstream::Topology;

use crate::clock;

/// Everything a variable can read.
pub struct Vars<'a> {
    pub buf: &'a [u8],
    pub head: &'a RequestHead,
    pub client: SocketAddr,
    pub local: SocketAddr,
    pub server_name: &'a str,
    pub proxy_host: &'a str,
    /// `proxy_pass https://`: `$proxy_port` defaults to 443.
    pub proxy_tls: bool,
    pub conn_id: u64,
    pub conn_requests: u64,
    pub start: Instant,
    pub status: u16,
    pub body_bytes_sent: u64,
    pub bytes_sent: u64,
    /// One value per try; names are looked up in `topo`.
    pub tries: &'a [TryRecord],
    pub topo: Option<&'a Topology>,
    /// `map` variables (`Variable::Map(i)` is the `i`th).
    pub maps: &'a [crate::map::MapRt],
    /// `split_clients` variables (`Variable::Split(i)` is the `i`th).
    pub splits: &'a [ringfront_config::SplitClients],
    /// `geo` variables (`Variable::Geo(i)` is the `i`th).
    pub geos: &'a [ringfront_config::GeoBlock],
    /// How deep map evaluation is (a map whose value uses a map...), to stop a cycle.
    pub depth: std::cell::Cell<u8>,
    /// The connection's TLS facts (`$https`, `$ssl_*`); `None` on plain HTTP.
    pub tls: Option<&'a ringfront_tls::Info>,
    /// What the rewrite directives changed (`$uri`, `$args`, `set` variables, captures);
    /// `None` where nothing can have.
    pub rw: Option<&'a crate::rewrite_state::RwState>,
    /// The relayed upstream response's head (status line and fields, raw); empty when the
    /// request was not proxied or nothing reads it.
    pub upstream_head: &'a [u8],
    /// The head sent to the client (raw), for `$sent_http_*` in logs; empty when unknown.
    pub sent_head: &'a [u8],
    /// `$request_body`: empty unless the configuration reads it.
    pub body: &'a [u8],
    /// When the connection was accepted (`clock::now_ms`).
    pub opened_ms: u64,
    /// The workers' counters (`$connections_*`).
    pub stats: &'a [crate::WorkerStats],
    /// `$request_length`: head and body bytes as received.
    pub request_length: u64,
    /// `$request_id`'s bytes.
    pub request_id: [u8; 16],
    /// The body's length once read.
    pub body_len: u64,
    /// The listening sockets, for `$server_addr` on `listen unix:` (its path).
    pub listens: &'a [crate::snapshot::ListenRt],
    /// The connection's PROXY protocol header (`$proxy_protocol_*`).
    pub proxy_protocol: Option<&'a ringfront_http::ProxyHeader>,
    /// The address before realip replaced `client` (`$realip_remote_*`).
    pub realip_from: Option<SocketAddr>,
    /// `$request_body_file`.
    pub body_file: &'a [u8],
}

impl<'a> Vars<'a> {
    /// The same, with `sent_head` as the response's fields so far (`$sent_http_*`).
    pub fn with_sent_head<'b>(&'b self, sent_head: &'b [u8]) -> Vars<'b> {
        Vars {
            sent_head,
            depth: std::cell::Cell::new(self.depth.get()),
            ..*self
        }
    }
}

/// Whether a template may read `$sent_http_*` (so `add_header` shows it the fields so
/// far): directly, or through a `map`, `geo` or `split_clients` whose key may (the widely
/// copied `map $sent_http_content_type $v`).
pub fn reads_sent_fields(t: &Template) -> bool {
    t.parts.iter().any(|p| {
        matches!(
            p,
            TemplatePart::Var(
                Variable::SentHttp(_) | Variable::Map(_) | Variable::Geo(_) | Variable::Split(_)
            )
        )
    })
}

/// `$uri` and `$args` as the rewrite directives left them.
fn current<'a>(
    v: &Vars<'a>,
    path: &'a [u8],
    args: Option<&'a [u8]>,
) -> (&'a [u8], Option<&'a [u8]>) {
    let Some(rw) = v.rw else {
        return (path, args);
    };
    let path = rw.uri.as_deref().map_or(path, str::as_bytes);
    let args = match &rw.args {
        Some(a) if a.is_empty() => None,
        Some(a) => Some(&a[..]),
        None => args,
    };
    (path, args)
}

/// A `set` variable (`-` in logs while unset, as nginx's "not found"), or capture `$n`.
fn push_rewrite_var(out: &mut Vec<u8>, var: &Variable, v: &Vars<'_>, empty: &[u8]) {
    let rw = v.rw;
    match var {
        Variable::User(i) => {
            let value = rw.and_then(|rw| rw.vars.get(*i)).and_then(Option::as_deref);
            out.extend_from_slice(value.unwrap_or(empty));
        }
        Variable::Capture(n) => {
            if let Some(c) = rw.and_then(|rw| rw.capture(usize::from(*n))) {
                out.extend_from_slice(c);
            }
        }
        _ => {}
    }
}

fn path_and_args(target: &[u8]) -> (&[u8], Option<&[u8]>) {
    match target.iter().position(|&b| b == b'?') {
        Some(i) => (&target[..i], Some(&target[i + 1..])),
        None => (target, None),
    }
}

/// The origin-form path of a target: absolute-form `http://host/p` gives `/p`.
pub fn origin_path(target: &[u8]) -> &[u8] {
    ringfront_http::origin_path(target)
}

/// `$host`: the Host name as nginx validates it (no port, no trailing dot; lower-cased by
/// the caller; nginx falls back to the server name).
pub fn host<'a>(buf: &'a [u8], head: &RequestHead) -> &'a [u8] {
    head.host
        .map_or(b"", |h| ringfront_http::host_name(h.get(buf)))
}

fn push_secs(out: &mut Vec<u8>, d: Duration) {
    let ms = d.as_millis();
    let mut s = String::new();
    let _ = write!(s, "{}.{:03}", ms / 1000, ms % 1000);
    out.extend_from_slice(s.as_bytes());
}

fn push_num(out: &mut Vec<u8>, n: u64) {
    ringfront_http::push_decimal(out, n);
}

fn push_tries(out: &mut Vec<u8>, tries: &[TryRecord], f: impl Fn(&mut Vec<u8>, &TryRecord)) {
    if tries.is_empty() {
        out.push(b'-');
        return;
    }
    let mut sep: &[u8] = b"";
    for t in tries {
        if t.peer == TryPeer::Redirect {
            sep = b" : ";
            continue;
        }
        out.extend_from_slice(sep);
        f(out, t);
        sep = b", ";
    }
}

fn push_opt_time(out: &mut Vec<u8>, d: Option<Duration>) {
    match d {
        Some(d) => push_secs(out, d),
        None => out.push(b'-'),
    }
}

/// The request's fields a variable name names (`x_forwarded_for` is `X-Forwarded-For`).
fn headers_named<'a, 'n>(v: &Vars<'a>, name: &'n str) -> impl Iterator<Item = &'a [u8]> + 'n
where
    'a: 'n,
{
    let buf = v.buf;
    v.head.headers.iter().filter_map(move |h| {
        let n = h.name.get(buf);
        let same = n.len() == name.len()
            && n.iter().zip(name.bytes()).all(|(&a, b)| {
                let a = a.to_ascii_lowercase();
                a == b || (a == b'-' && b == b'_')
            });
        same.then(|| h.value.get(buf))
    })
}

fn header_named<'a>(v: &Vars<'a>, name: &str) -> Option<&'a [u8]> {
    headers_named(v, name).next()
}

/// `$http_NAME`: the first such field; all of them for `Cookie` (joined by `; `) and
/// `X-Forwarded-For` (by `, `), as nginx 1.22.
fn push_http(out: &mut Vec<u8>, v: &Vars<'_>, name: &str, empty: &[u8]) {
    let sep: &[u8] = match name {
        "cookie" => b"; ",
        "x_forwarded_for" => b", ",
        _ => {
            out.extend_from_slice(header_named(v, name).unwrap_or(empty));
            return;
        }
    };
    let mark = out.len();
    for (i, value) in headers_named(v, name).enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        out.extend_from_slice(value);
    }
    if out.len() == mark {
        out.extend_from_slice(empty);
    }
}

/// The deepest chain of maps evaluated (nginx reports a cycle; ringfront gives "").
const MAX_MAP_DEPTH: u8 = 16;

/// A `map` variable: its source, then the chosen value, both rendered here.
fn push_map(out: &mut Vec<u8>, i: usize, v: &Vars<'_>) {
    let (Some(m), depth) = (v.maps.get(i), v.depth.get()) else {
        return;
    };
    let cache = v.rw.filter(|_| !m.volatile).map(|rw| &rw.map_values);
    if let Some(c) = cache {
        if let Some(Some(kept)) = c.borrow().get(i) {
            out.extend_from_slice(kept);
            return;
        }
    }
    if depth >= MAX_MAP_DEPTH {
        return;
    }
    let mark = out.len();
    push_map_value(out, m, v, depth);
    if let Some(c) = cache {
        let mut c = c.borrow_mut();
        if c.len() <= i {
            c.resize(i + 1, None);
        }
        c[i] = Some(out[mark..].to_vec());
    }
}

/// A map's value for its source as it is now.
fn push_map_value(out: &mut Vec<u8>, m: &crate::map::MapRt, v: &Vars<'_>, depth: u8) {
    v.depth.set(depth + 1);
    let mut source = Vec::new();
    render(&mut source, &m.source, v, false);
    match (m.pick_with(&source), v.rw) {
        ((t, Some((re, names))), Some(rw)) => {
            // The value sees the captures of the regex that chose it.
            let text = String::from_utf8_lossy(&source);
            let local = re
                .captures(&text)
                .map(|c| rw.with_captures(&c, &text, names));
            let inner = Vars {
                rw: local.as_ref().or(v.rw),
                depth: std::cell::Cell::new(depth + 1),
                ..*v
            };
            render(out, t, &inner, false);
        }
        ((t, _), _) => render(out, t, v, false),
    }
    v.depth.set(depth);
}

/// The `$upstream_*` variables: one value per try, comma separated.
fn push_upstream_var(out: &mut Vec<u8>, var: &Variable, v: &Vars<'_>) {
    match var {
        Variable::UpstreamAddr => push_tries(out, v.tries, |o, t| match t.peer {
            TryPeer::Addr(a) => o.extend_from_slice(a.to_string().as_bytes()),
            _ => o.extend_from_slice(try_addr(v.topo, t.peer).as_bytes()),
        }),
        Variable::UpstreamStatus => push_tries(out, v.tries, |o, t| match t.status {
            Some(s) => push_num(o, u64::from(s)),
            None => o.push(b'-'),
        }),
        Variable::UpstreamResponseTime => {
            push_tries(out, v.tries, |o, t| push_opt_time(o, t.response_time))
        }
        Variable::UpstreamConnectTime => {
            push_tries(out, v.tries, |o, t| push_opt_time(o, t.connect_time))
        }
        Variable::UpstreamHeaderTime => {
            push_tries(out, v.tries, |o, t| push_opt_time(o, t.header_time))
        }
        Variable::UpstreamResponseLength => {
            push_tries(out, v.tries, |o, t| push_num(o, t.response_length))
        }
        Variable::UpstreamBytesReceived => {
            push_tries(out, v.tries, |o, t| push_num(o, t.bytes_received))
        }
        Variable::UpstreamBytesSent => push_tries(out, v.tries, |o, t| push_num(o, t.bytes_sent)),
        _ => {}
    }
}

/// `$proxy_port`: the port `$proxy_host` names (`[::1]:8080`), else the scheme's.
fn proxy_port(host: &str, tls: bool) -> &str {
    let port = host.rfind(':').map(|i| &host[i + 1..]);
    match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p,
        _ if tls => "443",
        _ => "80",
    }
}

/// `$upstream_addr` of one try: the peer's name, or the group's when none was selected.
pub fn try_addr(topo: Option<&Topology>, peer: TryPeer) -> &str {
    let name = match (topo, peer) {
        (Some(t), TryPeer::Peer(id)) => t.peer(id).map(|p| p.name.as_str()),
        (Some(t), TryPeer::Group(g)) => t.upstreams.get(g).map(|u| u.name.as_str()),
        (_, TryPeer::Addr(_)) | (_, TryPeer::Redirect) | (None, _) => None,
    };
    name.unwrap_or("")
}

/// `$ssl_*`: empty (`-` in logs) on a plain connection, as nginx.
fn push_ssl(out: &mut Vec<u8>, var: &Variable, tls: Option<&ringfront_tls::Info>, empty: &[u8]) {
    let Some(t) = tls else {
        out.extend_from_slice(empty);
        return;
    };
    let text: &str = match var {
        Variable::SslServerName => t.server_name.as_deref().unwrap_or(""),
        Variable::SslProtocol => t.protocol,
        Variable::SslCipher => t.cipher,
        Variable::SslSessionReused => {
            if t.reused {
                "r"
            } else {
                "."
            }
        }
        _ => &t.client_verify,
    };
    if text.is_empty() {
        out.extend_from_slice(empty);
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

/// Appends the value of one variable; `-` stands for "not set" in logs, as nginx.
pub fn push_var(out: &mut Vec<u8>, var: &Variable, v: &Vars<'_>, dash: bool) {
    let target = v.head.target.get(v.buf);
    // The URI and arguments, made only for the variables that read them.
    let uri = || {
        let (path, args) = path_and_args(origin_path(target));
        current(v, path, args)
    };
    let empty: &[u8] = if dash { b"-" } else { b"" };
    if let Some(line) = v.rw.and_then(|r| r.unparsed_line.as_deref()) {
        if crate::head_refusal::push_unparsed(out, var, line, empty) {
            return;
        }
    }
    match var {
        Variable::User(_) | Variable::Capture(_) => push_rewrite_var(out, var, v, empty),
        Variable::Map(i) => push_map(out, *i, v),
        Variable::Geo(i) => {
            if let Some(g) = v.geos.get(*i) {
                let addr = match &g.source {
                    Some(t) => {
                        let mut text = Vec::new();
                        render(&mut text, t, v, false);
                        crate::geo::address(&text)
                    }
                    None => crate::geo::client(v.client),
                };
                let addr = crate::geo::real(g, addr, v.head, v.buf);
                out.extend_from_slice(crate::geo::pick(g, addr).as_bytes());
            }
        }
        Variable::Split(i) => {
            if let Some(s) = v.splits.get(*i) {
                let mut source = Vec::new();
                render(&mut source, &s.source, v, false);
                out.extend_from_slice(crate::split::pick(s, &source).as_bytes());
            }
        }
        Variable::Host => {
            let h = host(v.buf, v.head);
            if h.is_empty() {
                out.extend_from_slice(v.server_name.as_bytes());
            } else {
                out.extend(h.iter().map(u8::to_ascii_lowercase));
            }
        }
        Variable::RemoteAddr => push_addr(out, v.client),
        Variable::RemotePort if v.client.port() == 0 => {}
        Variable::RemotePort => push_port(out, v.client),
        Variable::ProxyProtocol(pv) => {
            crate::proxy_protocol::push_var(out, v.proxy_protocol, *pv, empty);
        }
        Variable::ProxyProtocolTlv(t) => {
            crate::proxy_protocol::push_tlv(out, v.proxy_protocol, *t, empty)
        }
        Variable::RealipRemoteAddr => push_addr(out, v.realip_from.unwrap_or(v.client)),
        Variable::RealipRemotePort => {
            let a = v.realip_from.unwrap_or(v.client);
            if a.port() != 0 {
                push_port(out, a);
            }
        }
        Variable::ServerAddr => push_server_addr(out, v),
        Variable::ServerPort => push_port(out, v.local),
        Variable::ServerName => out.extend_from_slice(v.server_name.as_bytes()),
        Variable::ServerProtocol => out.extend_from_slice(if v.head.minor_version == 0 {
            b"HTTP/1.0"
        } else {
            b"HTTP/1.1"
        }),
        Variable::Scheme => out.extend_from_slice(if v.tls.is_some() { b"https" } else { b"http" }),
        Variable::Https => out.extend_from_slice(if v.tls.is_some() { b"on" } else { b"" }),
        Variable::SslServerName
        | Variable::SslProtocol
        | Variable::SslCipher
        | Variable::SslSessionReused
        | Variable::SslClientVerify => push_ssl(out, var, v.tls, empty),
        // GET after an error_page redirect (error_redirect.rs).
        Variable::RequestMethod => match v.rw {
            Some(rw) if rw.error.get => out.extend_from_slice(b"GET"),
            _ => out.extend_from_slice(v.head.method.get(v.buf)),
        },
        Variable::RequestUri if v.rw.is_some_and(|r| r.refused_uri) => out.extend_from_slice(empty),
        Variable::RequestUri => out.extend_from_slice(origin_path(target)),
        Variable::Uri => out.extend_from_slice(uri().0),
        Variable::Args => out.extend_from_slice(uri().1.unwrap_or(empty)),
        Variable::IsArgs => {
            if uri().1.is_some() {
                out.push(b'?')
            }
        }
        Variable::Arg(name) => {
            // nginx's `ngx_http_arg`: `NAME=` is needed; `$arg_` finds nothing.
            let val = uri().1.filter(|_| !name.is_empty()).and_then(|a| {
                a.split(|&b| b == b'&').find_map(|kv| {
                    let i = kv.iter().position(|&b| b == b'=')?;
                    kv[..i]
                        .eq_ignore_ascii_case(name.as_bytes())
                        .then_some(&kv[i + 1..])
                })
            });
            out.extend_from_slice(val.unwrap_or(empty));
        }
        Variable::Request => {
            out.extend_from_slice(v.head.method.get(v.buf));
            out.push(b' ');
            out.extend_from_slice(target);
            out.extend_from_slice(if v.head.minor_version == 0 {
                b" HTTP/1.0"
            } else {
                b" HTTP/1.1"
            });
        }
        Variable::Status => push_num(out, u64::from(v.status)),
        Variable::BodyBytesSent => push_num(out, v.body_bytes_sent),
        Variable::BytesSent => push_num(out, v.bytes_sent),
        Variable::LimitRate => push_num(out, v.rw.and_then(|rw| rw.limit_rate).unwrap_or(0)),
        Variable::LimitReqStatus | Variable::LimitConnStatus => {
            let text = v.rw.and_then(|rw| match var {
                Variable::LimitReqStatus => crate::limits::req_status_text(rw.limit_req),
                _ => crate::limits::conn_status_text(rw.limit_conn),
            });
            out.extend_from_slice(text.map_or(empty, str::as_bytes));
        }
        Variable::RequestLength => push_num(out, v.request_length),
        Variable::RequestTime => {
            push_secs(out, crate::clock::now().saturating_duration_since(v.start))
        }
        Variable::TimeLocal => clock::push_time_local(out),
        Variable::TimeIso8601 => out.extend_from_slice(clock::wall().iso8601().as_bytes()),
        Variable::Msec => {
            let w = clock::wall();
            push_num(out, w.unix_secs);
            out.push(b'.');
            out.extend_from_slice(format!("{:03}", w.millis).as_bytes());
        }
        Variable::Pid => push_num(out, u64::from(std::process::id())),
        Variable::ConnectionId => push_num(out, v.conn_id),
        Variable::ConnectionRequests => push_num(out, v.conn_requests),
        Variable::ProxyHost => out.extend_from_slice(v.proxy_host.as_bytes()),
        Variable::ProxyPort if v.proxy_host.is_empty() => out.extend_from_slice(empty),
        Variable::ProxyPort => {
            out.extend_from_slice(proxy_port(v.proxy_host, v.proxy_tls).as_bytes())
        }
        Variable::ProxyAddXForwardedFor => {
            for xff in headers_named(v, "x_forwarded_for") {
                out.extend_from_slice(xff);
                out.extend_from_slice(b", ");
            }
            push_addr(out, v.client);
        }
        Variable::UpstreamAddr
        | Variable::UpstreamStatus
        | Variable::UpstreamResponseTime
        | Variable::UpstreamConnectTime
        | Variable::UpstreamHeaderTime
        | Variable::UpstreamResponseLength
        | Variable::UpstreamBytesReceived
        | Variable::UpstreamBytesSent => push_upstream_var(out, var, v),
        Variable::Http(name) => push_http(out, v, name, empty),
        Variable::Cookie(name) => {
            let val = headers_named(v, "cookie").find_map(|c| crate::vars_cookie::find(c, name));
            out.extend_from_slice(val.unwrap_or(empty));
        }
        Variable::SentHttp(_) | Variable::UpstreamHttp(_) | Variable::UpstreamCookie(_) => {
            push_response_var(out, var, v, empty)
        }
        Variable::RequestBody => match v.body {
            [] => out.extend_from_slice(empty),
            b => out.extend_from_slice(b),
        },
        Variable::RequestBodyFile => match v.body_file {
            [] => out.extend_from_slice(empty),
            f => out.extend_from_slice(f),
        },
        Variable::ContentLength => match header_named(v, "content_length") {
            Some(n) => out.extend_from_slice(n),
            // nginx counts a chunked body as it reads it: its length once read.
            None if matches!(v.head.framing, ringfront_http::BodyFraming::Chunked) => {
                push_num(out, v.body_len)
            }
            None => out.extend_from_slice(empty),
        },
        Variable::ContentType => {
            out.extend_from_slice(header_named(v, "content_type").unwrap_or(empty))
        }
        Variable::ConnectionTime => push_secs(
            out,
            Duration::from_millis(clock::now_ms().saturating_sub(v.opened_ms)),
        ),
        Variable::ConnectionsActive
        | Variable::ConnectionsReading
        | Variable::ConnectionsWriting
        | Variable::ConnectionsWaiting => push_connections(out, var, v),
        Variable::Ssl(s) => crate::vars_tls::push(out, *s, v.tls, empty),
        Variable::RequestId => {
            for b in v.request_id {
                out.extend_from_slice(format!("{b:02x}").as_bytes());
            }
        }
        Variable::Hostname => out.extend_from_slice(crate::request_id::hostname().as_bytes()),
        Variable::RemoteUser => {
            let user = header_named(v, "authorization").and_then(crate::vars_auth::remote_user);
            out.extend_from_slice(user.as_deref().unwrap_or(empty));
        }
        // A unix client: nginx's bytes of its unnamed `sockaddr_un`, the family alone.
        Variable::BinaryRemoteAddr if is_unix(v.client) => {
            out.extend_from_slice(&(libc::AF_UNIX as libc::sa_family_t).to_ne_bytes());
        }
        Variable::BinaryRemoteAddr => match v.client.ip() {
            std::net::IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
            std::net::IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
        },
        Variable::UpstreamCacheStatus => out.extend_from_slice(empty),
        // `$sent_trailer_*` has a value only in a later `add_trailer` (trailers.rs).
        Variable::SentTrailer(_) => out.extend_from_slice(empty),
    }
}

/// `$remote_addr`: the client's address, `unix:` on a unix-domain socket (nginx's text of
/// its unnamed peer).
fn push_addr(out: &mut Vec<u8>, a: SocketAddr) {
    match a.ip() {
        _ if is_unix(a) => out.extend_from_slice(b"unix:"),
        std::net::IpAddr::V4(ip) => push_ipv4(out, ip),
        ip => out.extend_from_slice(ip.to_string().as_bytes()),
    }
}

/// An IPv4 address in dotted decimal, as `Ipv4Addr`'s `Display` writes it.
fn push_ipv4(out: &mut Vec<u8>, ip: std::net::Ipv4Addr) {
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_num(out, u64::from(octet));
    }
}

/// The client as error-log lines name it (`client: unix:`).
pub(crate) fn client_text(a: SocketAddr) -> String {
    if is_unix(a) {
        "unix:".into()
    } else {
        a.ip().to_string()
    }
}

/// `$remote_port`, `$server_port`: empty on a unix-domain socket, which has no port.
fn push_port(out: &mut Vec<u8>, a: SocketAddr) {
    if !is_unix(a) {
        push_num(out, u64::from(a.port()));
    }
}

/// `$server_addr`: the socket's address, `unix:PATH` on `listen unix:PATH`.
fn push_server_addr(out: &mut Vec<u8>, v: &Vars<'_>) {
    if !is_unix(v.local) {
        out.extend_from_slice(v.local.ip().to_string().as_bytes());
        return;
    }
    out.extend_from_slice(b"unix:");
    if let Some(p) = v.listens.iter().find(|l| l.addr == v.local) {
        use std::os::unix::ffi::OsStrExt;
        out.extend_from_slice(
            p.unix
                .as_deref()
                .map_or(&[][..], |p| p.as_os_str().as_bytes()),
        );
    }
}

/// `$connections_*`: stub_status's numbers as they are now.
fn push_connections(out: &mut Vec<u8>, var: &Variable, v: &Vars<'_>) {
    let [active, reading, writing, waiting] = crate::local::connection_counts(v.stats);
    let n = match var {
        Variable::ConnectionsActive => active,
        Variable::ConnectionsReading => reading,
        Variable::ConnectionsWriting => writing,
        _ => waiting,
    };
    push_num(out, n);
}

/// `$upstream_http_*`, `$upstream_cookie_*` (not found without an upstream response) and
/// `$sent_http_*` (`Cache-Control` and `Link` joined as nginx does).
fn push_response_var(out: &mut Vec<u8>, var: &Variable, v: &Vars<'_>, empty: &[u8]) {
    use crate::vars_response::{field, joined, set_cookie};
    // After an `X-Accel-Redirect`, the response that redirected until another one came.
    let upstream = match (v.upstream_head, v.rw.and_then(|r| r.accel.as_ref())) {
        ([], Some(a)) => &a.upstream_head[..],
        (head, _) => head,
    };
    let found = match var {
        Variable::UpstreamHttp(name) => field(upstream, name),
        Variable::UpstreamCookie(name) => set_cookie(upstream, name),
        Variable::SentHttp(name) if matches!(name.as_str(), "cache_control" | "link") => {
            if joined(out, v.sent_head, name) {
                return;
            }
            None
        }
        Variable::SentHttp(name) => field(v.sent_head, name),
        _ => None,
    };
    out.extend_from_slice(found.unwrap_or(empty));
}

/// nginx's default log escaping of a value written from `from` on: `"`, `\\` and bytes
/// outside printable ASCII become `\xHH`. Nothing is moved when nothing needs escaping.
fn escape_from(out: &mut Vec<u8>, from: usize) {
    let needs = |b: u8| b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b);
    // Every byte is looked at, without an early exit, so the compiler checks many at once.
    if !out[from..].iter().fold(false, |any, &b| any | needs(b)) {
        return;
    }
    let raw = out.split_off(from);
    for b in raw {
        if needs(b) {
            out.extend_from_slice(format!("\\x{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

/// An access-log line's template, values escaped as `log_format ... escape=` says (nginx's
/// log module: with `default` a value not found is `-`, with `json` and `none` nothing).
pub fn render_log(out: &mut Vec<u8>, t: &Template, v: &Vars<'_>, escape: LogEscape) {
    if escape == LogEscape::Default {
        return render(out, t, v, true);
    }
    for part in &t.parts {
        match part {
            TemplatePart::Literal(s) => out.extend_from_slice(s.as_bytes()),
            TemplatePart::Var(var) => {
                let mark = out.len();
                push_var(out, var, v, false);
                if escape == LogEscape::Json {
                    escape_json_from(out, mark);
                }
            }
        }
    }
}

/// nginx's `ngx_escape_json` on `out[from..]`: `"` and `\` get a backslash, `\n` `\r` `\t`
/// `\b` `\f` their letters, other controls `\u00XX`; bytes from 0x7f stay.
fn escape_json_from(out: &mut Vec<u8>, from: usize) {
    if !out[from..]
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
    {
        return;
    }
    let raw = out.split_off(from);
    for b in raw {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
}

/// Appends a whole template. `log` selects access-log semantics: empty values print as `-`
/// and values are escaped as nginx's `escape=default`.
pub fn render(out: &mut Vec<u8>, t: &Template, v: &Vars<'_>, log: bool) {
    for part in &t.parts {
        match part {
            TemplatePart::Literal(s) => out.extend_from_slice(s.as_bytes()),
            TemplatePart::Var(var) => {
                let mark = out.len();
                push_var(out, var, v, log);
                if log {
                    escape_from(out, mark);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_paths() {
        assert_eq!(origin_path(b"/a?b"), b"/a?b");
        assert_eq!(origin_path(b"http://h:1/x?y"), b"/x?y");
        assert_eq!(origin_path(b"HTTP://h"), b"/");
        assert_eq!(path_and_args(b"/p?q=1"), (&b"/p"[..], Some(&b"q=1"[..])));
    }

    #[test]
    fn log_escaping() {
        let mut o = b"x=".to_vec();
        o.extend_from_slice(b"a\"b\\c\x01\xff");
        escape_from(&mut o, 2);
        assert_eq!(o, b"x=a\\x22b\\x5Cc\\x01\\xFF");
        let mut o = b"plain".to_vec();
        escape_from(&mut o, 0);
        assert_eq!(o, b"plain");
    }

    #[test]
    fn ipv4_as_display_writes_it() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.30.40",
            "255.255.255.255",
            "1.0.10.100",
        ] {
            let a: std::net::Ipv4Addr = ip.parse().unwrap();
            let mut o = vec![];
            push_ipv4(&mut o, a);
            assert_eq!(o, a.to_string().as_bytes());
        }
    }

    #[test]
    fn numbers() {
        let mut o = vec![];
        push_num(&mut o, 0);
        o.push(b' ');
        push_num(&mut o, 18_446_744_073_709_551_615);
        assert_eq!(o, b"0 18446744073709551615");
        let mut o = vec![];
        push_secs(&mut o, Duration::from_millis(2003));
        assert_eq!(o, b"2.003");
        assert_eq!(proxy_port("127.0.0.1:8081", false), "8081");
        assert_eq!(proxy_port("up", false), "80");
        assert_eq!(proxy_port("up", true), "443");
        assert_eq!(proxy_port("[::1]", false), "80");
        assert_eq!(proxy_port("[::1]:9", true), "9");
    }
}
