//! The typed configuration model: what the proxy consumes after parsing, checking and merging
//! (http -> server -> location inheritance is already resolved, so every location is complete).

use crate::cidr::Cidr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A whole configuration, the result of `load`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The main file the configuration was loaded from.
    pub path: PathBuf,
    pub main: MainConf,
    pub http: HttpConf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerProcesses {
    Auto,
    Count(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuAffinity {
    /// No pinning (the default, as nginx).
    Off,
    /// One worker per core, in order.
    Auto,
    /// One bit mask per worker, as written in the config (`0001 0010`), bit i = CPU i.
    Masks(Vec<u64>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warn,
    Error,
    Crit,
    Alert,
    Emerg,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorLog {
    /// `stderr` is represented as `None`.
    pub path: Option<PathBuf>,
    pub level: LogLevel,
}

#[derive(Debug, Clone)]
pub struct MainConf {
    pub worker_processes: WorkerProcesses,
    pub worker_cpu_affinity: CpuAffinity,
    pub daemon: bool,
    pub master_process: bool,
    pub pid: Option<PathBuf>,
    /// Default when absent: stderr at `error` level.
    pub error_log: Vec<ErrorLog>,
    /// `events { worker_connections N; }`, default 512 as nginx.
    pub worker_connections: usize,
    /// `worker_shutdown_timeout T`: on a graceful stop, and on a reload for the connections
    /// accepted before it, whatever is still open T later is closed. `None`: wait.
    pub worker_shutdown_timeout: Option<std::time::Duration>,
}

#[derive(Debug, Clone)]
pub struct HttpConf {
    pub upstreams: Vec<Upstream>,
    pub servers: Vec<Server>,
    /// `map` blocks; `Variable::Map(i)` is the `i`th.
    pub maps: Vec<MapBlock>,
    /// `split_clients` blocks; `Variable::Split(i)` is the `i`th.
    pub splits: Vec<SplitClients>,
    /// `geo` blocks; `Variable::Geo(i)` is the `i`th.
    pub geos: Vec<GeoBlock>,
    /// `log_format NAME ...`; always contains `combined` first.
    pub log_formats: Vec<LogFormat>,
    /// The rewrite module's variables (`set $name`, named regex captures), lower-cased;
    /// `Variable::User(i)` is the `i`th.
    pub variables: Vec<String>,
    /// For each of `variables`, whether a `set` gives it values (it then reads as empty
    /// before one, in logs too; a named capture's reads as not found, `-` in logs).
    pub variable_set: Vec<bool>,
    /// Some template uses `$1`..`$9` (so regex locations keep their captures).
    pub captures: bool,
    /// What templates read that costs to keep (the body, response heads).
    pub uses: crate::template::Uses,
    /// `limit_req_zone` / `limit_conn_zone`; `ReqLimit::zone` and `ConnLimit::zone` index it.
    pub limit_zones: Vec<crate::limits_model::LimitZone>,
}

#[derive(Debug, Clone)]
pub struct LogFormat {
    pub name: String,
    pub format: Template,
    pub escape: LogEscape,
}

/// `log_format ... escape=`: how variable values are written into the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogEscape {
    /// `"`, `\`, controls and bytes from 0x7f as `\xHH`; a value not found is `-`.
    #[default]
    Default,
    /// JSON string escapes (`\"`, `\\`, `\n`, `\u00XX`); a value not found is empty.
    Json,
    /// As they are; a value not found is empty.
    None,
}

/// Where a directive came from, for messages in nginx's form `in FILE:LINE`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    pub servers: Vec<UpstreamServer>,
    /// Idle keepalive connections kept per worker (`keepalive N`); none by default, as nginx.
    pub keepalive: usize,
    /// Upstream `keepalive_timeout`, default 60s.
    pub keepalive_timeout: Duration,
    /// Upstream `keepalive_requests`, default 1000.
    pub keepalive_requests: u64,
    /// Upstream `keepalive_time`, default 1h: a connection older than this is not kept
    /// after the response it carried.
    pub keepalive_time: Duration,
    /// True for the group nginx creates implicitly for `proxy_pass http://host:port`.
    pub implicit: bool,
    /// Made by `proxy_pass https://`: `$proxy_host` leaves out `:443` as it leaves out `:80`
    /// for http (nginx drops the scheme's default port from the `Host` it sends).
    pub implicit_tls: bool,
    pub origin: Origin,
    /// How a peer is chosen (`ip_hash`, `hash`, `least_conn`, `random`, `least_time`, `fair`);
    /// round robin when none is written. When several are written the last one counts, as in
    /// nginx (which only warns).
    pub balancer: Balancer,
    /// `zone NAME [SIZE]`: stored, no effect (peer state is always shared by the workers).
    pub zone: Option<String>,
    /// `all_failed reject | revive` (ringfront only): what happens when every peer has failed
    /// out. Default [`AllFailed::Reject`].
    pub all_failed: AllFailed,
    /// `passive_health nginx | confirm` (ringfront only), default `nginx`.
    pub passive_health: PassiveHealth,
    /// Active health checks of this group: every nginx Plus `health_check` in a location
    /// whose `proxy_pass` names the group, and the group's Tengine `check` (with its
    /// `check_http_send` / `check_http_expect_alive`). A peer is up for the active checks
    /// only when every check says so.
    pub checks: Vec<ActiveCheck>,
    /// `sticky cookie|route|learn ...`: session persistence (nginx Plus, nginx 1.29.6+).
    pub sticky: Option<crate::sticky::Sticky>,
    /// The upstream's `resolver` and `resolver_timeout` over the http block's; `Some` only
    /// when a server has `resolve`.
    pub resolver: Option<crate::resolver::ResolverSettings>,
    /// `state FILE` (nginx Plus): the file the servers were read from (instead of `server`
    /// lines), which the API rewrites after each change.
    pub state: Option<std::path::PathBuf>,
}

/// `passive_health`: what reaching `max_fails` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PassiveHealth {
    /// nginx: the peer is out for `fail_timeout`, then one user request probes it.
    #[default]
    Nginx,
    /// ringfront: the peer is held out while an out-of-band probe runs; a passing probe
    /// clears the failures, a failing one ejects the peer until probes pass.
    Confirm,
}

/// One active health check, in either syntax, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveCheck {
    /// Time between two probes of one peer (`interval=`; Tengine: milliseconds).
    pub interval: Duration,
    /// Each probe is delayed by a random time up to this (`jitter=`, default 0).
    pub jitter: Duration,
    /// Consecutive failed probes that mark an up peer down (`fails=` / Tengine `fall=`).
    pub fails: u32,
    /// Consecutive passed probes that bring a down peer back (`passes=` / Tengine `rise=`).
    pub passes: u32,
    /// Connect timeout of a probe (nginx Plus: the location's `proxy_connect_timeout`;
    /// Tengine: `timeout=`).
    pub connect_timeout: Duration,
    /// Timeout for the whole answer of an HTTP probe (nginx Plus: the location's
    /// `proxy_read_timeout`; Tengine: `timeout=`).
    pub read_timeout: Duration,
    /// Probe this port instead of the peer's own (`port=`).
    pub port: Option<u16>,
    pub probe: Probe,
    /// Peers start unhealthy until their first probe passes (`mandatory`; Tengine
    /// `default_down=true`, Tengine's default).
    pub mandatory: bool,
    /// With `mandatory`: a peer that was up before a reload stays up (`persistent`).
    pub persistent: bool,
    /// Probes speak TLS with these settings (a `health_check` in a location whose
    /// `proxy_pass` is `https://`); `None`: plain.
    pub tls: Option<crate::ssl_model::ProxySsl>,
    /// The directive the check came from (for messages).
    pub origin: Origin,
}

/// What a probe does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Tengine `type=tcp`: a TCP connect that succeeds passes.
    Tcp,
    /// An HTTP/1 request; the answer must satisfy `expect`.
    Http { request: HttpProbe, expect: Expect },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpProbe {
    /// nginx Plus: `GET URI HTTP/1.1` with `Host:` the location's `$proxy_host` (the group
    /// name) and `Connection: close`; `uri=`, default `/`.
    Uri(String),
    /// Tengine `check_http_send "..."`: these exact bytes (escapes already resolved);
    /// default `GET / HTTP/1.0\r\n\r\n`.
    Raw(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// No `match=`: a 2xx or 3xx status passes.
    Default,
    /// `match=NAME`: the named block's tests, all of which must hold.
    Match(Match),
    /// Tengine `check_http_expect_alive http_2xx http_3xx ...`: bit n set = status class
    /// n xx passes (bit 2 = 2xx); default 2xx and 3xx.
    Classes(u8),
}

/// `match NAME { ... }` (http context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub name: String,
    pub tests: Vec<MatchTest>,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchTest {
    /// `status 200 204 300-399;` or `status ! 500 502;`: the status is (`!`: is not) in one
    /// of the inclusive ranges (a single code is `(c, c)`).
    Status {
        negate: bool,
        ranges: Vec<(u16, u16)>,
    },
    /// `header NAME;` (present), `header ! NAME;` (absent), `header NAME = V;`, `!= V`,
    /// `~ RE`, `!~ RE`. Names compare case-insensitively.
    Header { name: String, op: HeaderOp },
    /// `body ~ RE;` / `body !~ RE;` over the first 256 KiB of the body.
    Body { negate: bool, regex: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderOp {
    Present,
    Absent,
    Equals(String),
    NotEquals(String),
    Matches(String),
    NotMatches(String),
}

/// `check_status [html|csv|json|prometheus]` (Tengine, plus Prometheus text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusFormat {
    #[default]
    Html,
    Csv,
    Json,
    Prometheus,
}

/// The load-balancing method of an upstream group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Balancer {
    /// nginx's smooth weighted round robin (no directive).
    #[default]
    RoundRobin,
    /// `ip_hash`: the first three bytes of a client's IPv4 address (the whole IPv6 address)
    /// choose the peer.
    IpHash,
    /// `hash KEY [consistent]`: KEY (a template, e.g. `$request_uri`) chooses the peer;
    /// `consistent` is ketama consistent hashing.
    Hash { key: Template, consistent: bool },
    /// `least_conn`: fewest active connections (weighted), round robin among equals.
    LeastConn,
    /// `random [two [least_conn]]`: a random peer (weighted), or of two random peers the one
    /// with fewer active connections. The fields say what was written: `least_conn` is only
    /// ever true together with `two`, and `two` alone means the same as `two least_conn`
    /// (nginx's default and, in 1.22, only method).
    Random { two: bool, least_conn: bool },
    /// `least_time header | last_byte [inflight]` (nginx Plus), and the third-party `fair`
    /// (mapped to `least_time header`): lowest average response time (to the header, or to
    /// the last byte), then fewest active connections. `inflight` also counts requests still
    /// in progress.
    LeastTime { last_byte: bool, inflight: bool },
}

/// `all_failed`: what an upstream group does when every peer is failed out (or down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllFailed {
    /// nginx >= 1.11.5: answer 502 ("no live upstreams") until a peer's `fail_timeout` ends
    /// and it is probed back in, one by one.
    #[default]
    Reject,
    /// nginx before 1.11.5: forget every peer's failures and try the group again at once.
    Revive,
}

#[derive(Debug, Clone)]
pub struct UpstreamServer {
    /// The address as written (`127.0.0.1:8081`, `localhost:8081`); peers are named by the
    /// resolved address as nginx does (`127.0.0.1:8081`).
    pub text: String,
    /// All resolved addresses; each becomes one peer with the parameters below.
    pub addrs: Vec<SocketAddr>,
    /// `server unix:/path`: the socket's path (`addrs` is then empty; one peer, named
    /// `unix:/path` as nginx names it).
    pub unix: Option<std::path::PathBuf>,
    pub weight: u32,
    pub max_fails: u32,
    pub fail_timeout: Duration,
    pub backup: bool,
    pub down: bool,
    /// `drain` (nginx 1.29.6, nginx Plus): the balancer skips the server, but a `sticky`
    /// session bound to it still goes there. `down` and `drain` exclude each other (the
    /// last one written wins, as nginx stores both in `peer->down`).
    pub drain: bool,
    /// `max_conns=N`: most connections open to each of this server's peers at once, counted
    /// across all workers; 0 = unlimited (the default). Values above `u32::MAX` are stored
    /// as `u32::MAX`.
    pub max_conns: u32,
    /// `slow_start=T` (nginx Plus): after the peer comes back its weight ramps from 0 to
    /// `weight` over T. Zero = off (the default).
    pub slow_start: Duration,
    /// `route=STRING` (nginx 1.29.6+): the server id `sticky` matches (instead of the hash
    /// ringfront makes of the peer), at most 32 bytes.
    pub route: Option<String>,
    pub origin: Origin,
    /// `resolve [service=NAME]` (nginx 1.27.3): the server is a template whose addresses
    /// the resolver gives at run time (`addrs` is then empty).
    pub resolve: Option<crate::resolver::ResolveSpec>,
}

#[derive(Debug, Clone)]
pub struct Server {
    pub listens: Vec<Listen>,
    pub server_names: Vec<String>,
    /// In the order written; the proxy applies nginx's matching order.
    pub locations: Vec<Location>,
    /// Settings at server level, used when no location matches (nginx answers 404 then).
    pub settings: LocationSettings,
    /// `ssl_*` (with the `http` level's values inherited); used on `listen ... ssl`.
    pub ssl: crate::ssl_model::ServerSsl,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub addr: SocketAddr,
    pub default_server: bool,
    pub reuseport: bool,
    /// `backlog=N`, default 511 as nginx.
    pub backlog: i32,
    /// `rcvbuf=`, `sndbuf=`, `so_keepalive=`.
    pub options: SocketOptions,
    /// `listen ... ssl`: connections to this address speak TLS first.
    pub ssl: bool,
    /// `listen ... proxy_protocol`: connections to this address start with a PROXY
    /// protocol header (before the TLS handshake on an `ssl` one).
    pub proxy_protocol: bool,
    /// `listen ... ssl http2`: accepted, but connections still speak HTTP/1.1 (ALPN offers
    /// `http/1.1` only); the binary warns once per address at start
    /// ([`crate::http2_listens`]).
    pub http2: bool,
    /// `listen unix:PATH`: the socket's path; `addr` is then its key
    /// ([`crate::unix_addr::listen_key`]).
    pub unix: Option<std::path::PathBuf>,
}

impl Listen {
    /// The address as nginx names it in messages: `127.0.0.1:80`, `unix:/path`.
    pub fn name(&self) -> String {
        match &self.unix {
            Some(p) => format!("unix:{}", p.display()),
            None => self.addr.to_string(),
        }
    }
}

/// Socket options of a `listen`, set on the listening socket (accepted connections inherit
/// them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketOptions {
    pub rcvbuf: Option<u64>,
    pub sndbuf: Option<u64>,
    pub keepalive: Option<KeepAlive>,
    /// `ipv6only=on|off` for an IPv6 address; `None` is nginx's default, on.
    pub ipv6only: Option<bool>,
    /// `fastopen=N`: the TCP Fast Open queue length (`TCP_FASTOPEN`).
    pub fastopen: Option<u32>,
}

/// `so_keepalive=on|off|[keepidle]:[keepintvl]:[keepcnt]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepAlive {
    Off,
    On,
    /// TCP keepalive on, with the kernel's defaults where a part is empty.
    Tuned {
        idle: Option<Duration>,
        interval: Option<Duration>,
        count: Option<u32>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocationMatch {
    /// `location = /x`
    Exact(String),
    /// `location ^~ /x`
    PrefixNoRegex(String),
    /// `location /x`
    Prefix(String),
    /// `location ~ re` / `location ~* re`
    Regex {
        pattern: String,
        case_insensitive: bool,
    },
    /// `location @name` (the name with its `@`): never matched by a URI, only reached by
    /// `try_files ... @name`.
    Named(String),
}

#[derive(Debug, Clone)]
pub struct Location {
    pub matcher: LocationMatch,
    pub settings: LocationSettings,
    /// Nested locations (nginx allows them); matched inside this one.
    pub locations: Vec<Location>,
    pub origin: Origin,
}

/// A string with variables, e.g. `"$host:$server_port"`, split at parse time.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    pub parts: Vec<TemplatePart>,
}

/// A size written as a constant or with variables (nginx's complex value size slot): the
/// variables' value is read per request, and one that is not a size counts as 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeValue {
    Fixed(u64),
    Vars(Template),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    Literal(String),
    Var(Variable),
}

/// Variables ringfront knows. Unknown variables are a config error
/// (`unknown "foo" variable`), as in nginx.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variable {
    /// A `map` variable: index into `HttpConf::maps`.
    Map(usize),
    /// A `split_clients` variable: index into `HttpConf::splits`.
    Split(usize),
    /// A `geo` variable: index into `HttpConf::geos`.
    Geo(usize),
    /// A variable of the rewrite module (`set $name`, or a named regex capture): index into
    /// `HttpConf::variables`; empty until a `set` (or a match) gives it a value.
    User(usize),
    /// `$1`..`$9`: a capture of the last successful regex match (rewrite, `if`, location).
    Capture(u8),
    Host,
    RemoteAddr,
    RemotePort,
    RemoteUser,
    ServerAddr,
    ServerPort,
    ServerName,
    ServerProtocol,
    Scheme,
    RequestMethod,
    RequestUri,
    Uri,
    Args,
    IsArgs,
    /// `$limit_rate`: the rate `set $limit_rate` gave this request, else 0.
    LimitRate,
    /// `$limit_req_status`: PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN.
    LimitReqStatus,
    /// `$limit_conn_status`: PASSED, REJECTED, REJECTED_DRY_RUN.
    LimitConnStatus,
    /// `$arg_NAME`
    Arg(String),
    Request,
    Status,
    BodyBytesSent,
    BytesSent,
    RequestLength,
    RequestTime,
    TimeLocal,
    TimeIso8601,
    Msec,
    Pid,
    ConnectionId,
    ConnectionRequests,
    ProxyHost,
    ProxyAddXForwardedFor,
    UpstreamAddr,
    UpstreamStatus,
    UpstreamResponseTime,
    UpstreamConnectTime,
    UpstreamHeaderTime,
    /// `$http_NAME` with NAME lower-cased and `_` kept (matched against `-` or `_`).
    Http(String),
    /// `$sent_http_NAME`
    SentHttp(String),
    /// `$upstream_http_NAME`
    UpstreamHttp(String),
    /// `$sent_trailer_NAME`: an `add_trailer` field already set (empty elsewhere).
    SentTrailer(String),
    /// `$cookie_NAME`
    Cookie(String),
    /// `$https`: `on` on a TLS connection, empty otherwise.
    Https,
    SslServerName,
    SslProtocol,
    SslCipher,
    SslSessionReused,
    SslClientVerify,
    /// `$request_body`: the body read; empty when it is in a file or streamed.
    RequestBody,
    /// `$request_body_file`: the body's temporary file, if it is in one.
    RequestBodyFile,
    /// `$content_length`, `$content_type`: the request's fields.
    ContentLength,
    ContentType,
    /// `$connection_time`: seconds (with milliseconds) since the connection was accepted.
    ConnectionTime,
    /// `$connections_active` and friends: stub_status's counters.
    ConnectionsActive,
    ConnectionsReading,
    ConnectionsWriting,
    ConnectionsWaiting,
    /// `$upstream_response_length`: body bytes of each try's response.
    UpstreamResponseLength,
    /// `$upstream_bytes_received`, `$upstream_bytes_sent`: bytes read from / written to each
    /// try's connection.
    UpstreamBytesReceived,
    UpstreamBytesSent,
    /// `$upstream_cookie_NAME`: cookie NAME of the upstream response's `Set-Cookie`s.
    UpstreamCookie(String),
    /// `$ssl_session_id`, `$ssl_curve(s)` and the `$ssl_client_*` certificate variables.
    Ssl(SslVar),
    /// `$request_id`: 16 random bytes in hex, one value per request.
    RequestId,
    /// `$hostname`: the machine's name, lower-cased.
    Hostname,
    /// `$binary_remote_addr`: the client address's 4 or 16 bytes.
    BinaryRemoteAddr,
    /// `$upstream_cache_status`: always empty (ringfront has no cache).
    UpstreamCacheStatus,
    /// `$proxy_port`: the port of `proxy_pass`'s address (80 or 443 when none is written).
    ProxyPort,
    /// `$proxy_protocol_addr` and friends: the connection's PROXY protocol header.
    ProxyProtocol(ProxyProtocolVar),
    /// `$proxy_protocol_tlv_NAME` (nginx 1.23.2+): a v2 TLV's value.
    ProxyProtocolTlv(ProxyProtocolTlv),
    /// `$realip_remote_addr`, `$realip_remote_port`: the connection's own address before
    /// the realip module replaced it.
    RealipRemoteAddr,
    RealipRemotePort,
}

/// What `$proxy_protocol_tlv_NAME` names, read as nginx's `ngx_proxy_protocol_get_tlv`:
/// `ssl_...` looks inside the SSL TLV (0x20) after its 5-byte client/verify head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyProtocolTlv {
    pub in_ssl: bool,
    pub kind: TlvKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlvKind {
    /// A type by name (`alpn`, `ssl_cn`, ...) or by `0xHH` (any number of hex digits).
    Type(u64),
    /// `ssl_verify`: the SSL TLV's verify field, in decimal.
    Verify,
    /// A name nginx does not know, or bad hex: never found.
    Unknown,
}

/// The four address variables of the PROXY protocol header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyProtocolVar {
    Addr,
    Port,
    ServerAddr,
    ServerPort,
}

/// The TLS variables read from the handshake's facts and the client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslVar {
    SessionId,
    Curve,
    Curves,
    ClientCert,
    ClientRawCert,
    ClientEscapedCert,
    Ciphers,
    ClientSDn,
    ClientIDn,
    ClientSDnLegacy,
    ClientIDnLegacy,
    ClientSerial,
    ClientFingerprint,
    ClientVStart,
    ClientVEnd,
    ClientVRemain,
}

/// One `map` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapBlock {
    /// The variable's name, lower-cased, without `$`.
    pub name: String,
    pub source: Template,
    pub default: Template,
    pub hostnames: bool,
    /// `volatile`: evaluated at each use; otherwise a request keeps its first value.
    pub volatile: bool,
    /// In the order written (the first matching regex wins).
    pub entries: Vec<(MapKey, Template)>,
}

/// One `geo` block: a variable chosen by the client address (or another address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoBlock {
    /// The variable's name, lower-cased, without `$`.
    pub name: String,
    /// The address to look up (`$remote_addr` when not given).
    pub source: Option<Template>,
    pub default: String,
    /// Networks and their values; the longest prefix containing the address wins.
    pub nets: Vec<(Cidr, String)>,
    /// `ranges`: IPv4 ranges cut at /16 boundaries as nginx stores them, sorted and
    /// disjoint (`geo_ranges::find`).
    pub ranges: Vec<(u32, u32, String)>,
    /// `proxy NET`: clients whose `X-Forwarded-For` gives the address.
    pub proxies: Vec<Cidr>,
    /// `proxy_recursive`: the last address in `X-Forwarded-For` that is not a proxy.
    pub proxy_recursive: bool,
}

/// One `split_clients` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitClients {
    /// The variable's name, lower-cased, without `$`.
    pub name: String,
    pub source: Template,
    /// (upper bound of the 32-bit MurmurHash2 value, exclusive; 0 for `*`: the rest), value.
    pub parts: Vec<(u32, String)>,
}

/// A `map` key. Strings are lower-cased (matching ignores case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapKey {
    Exact(String),
    /// `hostnames`: `*.NAME` (subdomains of NAME).
    Subdomains(String),
    /// `hostnames`: `.NAME` (NAME and its subdomains).
    DomainAndSubdomains(String),
    /// `hostnames`: `NAME.*` (stored with its dot: `NAME.`).
    Prefix(String),
    Regex {
        pattern: String,
        case_insensitive: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyTarget {
    /// `proxy_pass http://NAME` where NAME is an `upstream` block, or the implicit upstream
    /// created for `http://host:port` (its name is `host:port` as written).
    Upstream(String),
    /// `proxy_pass` with variables: the URL evaluated per request names an `upstream`
    /// group (or an implicit one) or a literal address (nginx's `ngx_http_proxy_eval`).
    Variables(Template),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyPass {
    pub target: ProxyTarget,
    /// The URI part (`http://b/new/` -> `Some("/new/")`); `None` passes the request URI unchanged.
    pub uri: Option<String>,
    /// `https://`: the upstream is spoken to over TLS (`proxy_ssl_*`).
    pub tls: bool,
}

/// `proxy_bind ADDR[:PORT] [transparent]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyBind {
    pub to: BindTo,
    /// `transparent`: the socket may bind a non-local address (`IP_TRANSPARENT`).
    pub transparent: bool,
}

/// `proxy_bind`'s address: read at load, or with variables evaluated per connection (an
/// empty value binds nothing; an invalid one is logged and binds nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindTo {
    Addr(std::net::SocketAddr),
    Vars(Template),
}

/// `proxy_next_upstream` as flags; nginx's default is `error timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextUpstream {
    pub error: bool,
    pub timeout: bool,
    pub invalid_header: bool,
    pub http_500: bool,
    pub http_502: bool,
    pub http_503: bool,
    pub http_504: bool,
    pub http_403: bool,
    pub http_404: bool,
    pub http_429: bool,
    pub non_idempotent: bool,
    /// `off`: never move on (all others false).
    pub off: bool,
}

impl Default for NextUpstream {
    fn default() -> Self {
        NextUpstream {
            error: true,
            timeout: true,
            invalid_header: false,
            http_500: false,
            http_502: false,
            http_503: false,
            http_504: false,
            http_403: false,
            http_404: false,
            http_429: false,
            non_idempotent: false,
            off: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Return {
    pub code: u16,
    /// Text body for codes other than 301/302/303/307/308, or the redirect URL for those.
    pub text: Option<Template>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorPage {
    pub codes: Vec<u16>,
    /// nginx's `overwrite`: `=CODE` is the status sent; `=` alone (`Some(0)`) the status the
    /// redirected request answers with; `None` the error's own (400 for 494..=497).
    pub overwrite: Option<u16>,
    /// A URI (an internal redirect), `@name` (a named location) or anything else (a URL
    /// sent in `Location` of a 302 or the `=` redirect code); variables allowed.
    pub target: Template,
    /// The arguments of a URI written without variables (after its `?`).
    pub args: Option<String>,
}

/// `limit_except METHOD ... { ... }`.
#[derive(Debug, Clone)]
pub struct LimitExcept {
    /// The methods answered with the location's own configuration (GET brings HEAD).
    pub methods: Vec<String>,
    /// The location's settings with the block's on top (its `proxy_pass`, else the
    /// location's).
    pub settings: LocationSettings,
}

impl LimitExcept {
    /// Whether a request with `method` is answered with the block's configuration.
    pub fn limits(&self, method: &[u8]) -> bool {
        !self.methods.iter().any(|m| m.as_bytes() == method)
    }
}

/// `recursive_error_pages`, `proxy_intercept_errors` and how a `Location` starting with `/`
/// is made absolute (`absolute_redirect`, `port_in_redirect`, `server_name_in_redirect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorRules {
    /// Off (nginx's default): an error while answering with an error page gets the
    /// built-in page.
    pub recursive_error_pages: bool,
    /// On: an upstream response of 300 or more that has an `error_page` is answered with it.
    pub proxy_intercept_errors: bool,
    pub absolute_redirect: bool,
    pub port_in_redirect: bool,
    pub server_name_in_redirect: bool,
}

impl Default for ErrorRules {
    fn default() -> Self {
        ErrorRules {
            recursive_error_pages: false,
            proxy_intercept_errors: false,
            absolute_redirect: true,
            port_in_redirect: true,
            server_name_in_redirect: false,
        }
    }
}

/// `add_header NAME VALUE [always]` (nginx's headers module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddHeader {
    /// As written (nginx does not check or re-case it).
    pub name: String,
    /// Evaluated per response; an empty result adds nothing.
    pub value: Template,
    /// Also for statuses other than 200, 201, 204, 206, 301, 302, 303, 304, 307, 308.
    pub always: bool,
    /// `ETag` or `Last-Modified`: replaces the upstream's field of that name, and an empty
    /// value removes it (nginx's `ngx_http_set_response_header`).
    pub replaces: bool,
}

/// `server_tokens on | off | build`: whether `Server` and the error pages' footer carry the
/// version. `build` is `on` (ringfront has no build name, as nginx built without `--build`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerTokens {
    #[default]
    On,
    Off,
    Build,
}

impl ServerTokens {
    /// Whether the version is shown.
    pub fn version(self) -> bool {
        self != ServerTokens::Off
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLog {
    Off,
    /// `access_log FILE [FORMAT]`; FORMAT defaults to `combined`. `/dev/stdout` and
    /// `/dev/stderr` are files like any other.
    File {
        path: PathBuf,
        format: String,
        /// `if=CONDITION`: the line is written only when it evaluates to neither `""` nor `"0"`.
        condition: Option<Template>,
    },
}

/// One `allow` / `deny` rule (nginx's access module): the first rule matching the client
/// address decides; no match allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRule {
    pub allow: bool,
    /// `None` is `all` (or `unix:`).
    pub net: Option<Cidr>,
    /// `unix:`: the rule applies to unix-domain clients only.
    pub unix: bool,
}

impl AccessRule {
    /// Whether the rule applies to `ip` (IPv4-mapped IPv6 addresses match IPv4 rules). A
    /// unix-domain client ([`crate::unix_addr::UNIX_CLIENT`]) is matched by `all` and
    /// `unix:` only, as nginx keeps its unix rules apart.
    pub fn matches(&self, ip: std::net::IpAddr) -> bool {
        if crate::unix_addr::is_unix_ip(ip) {
            return self.net.is_none();
        }
        !self.unix && self.net.is_none_or(|n| n.contains(ip))
    }
}

/// Every per-location setting, already merged from http and server level (nginx defaults
/// where never written).
#[derive(Debug, Clone)]
pub struct LocationSettings {
    pub proxy_pass: Option<ProxyPass>,
    /// `proxy_set_header` in order. When none is written at any level, nginx's defaults
    /// apply: `Host $proxy_host` and `Connection close`.
    pub proxy_set_header: Vec<(String, Template)>,
    /// `proxy_method` (variables allowed): the method sent upstream instead of the client's.
    pub proxy_method: Option<Template>,
    /// `proxy_bind`: the local address upstream connections are made from; `None`: `off`
    /// (the kernel chooses).
    pub proxy_bind: Option<ProxyBind>,
    /// `proxy_pass_request_headers` (default on): the client's header fields are passed.
    pub proxy_pass_request_headers: bool,
    /// `proxy_pass_request_body` (default on): the client's body is passed.
    pub proxy_pass_request_body: bool,
    /// `proxy_ignore_client_abort` (default off): a client that closes while the upstream
    /// is waited for does not end the request.
    pub proxy_ignore_client_abort: bool,
    /// `proxy_set_body`: the body sent upstream instead of the client's.
    pub proxy_set_body: Option<Template>,
    /// "1.0" (the default, as nginx) or "1.1".
    pub proxy_http_version: String,
    pub proxy_connect_timeout: Duration,
    pub proxy_read_timeout: Duration,
    pub proxy_send_timeout: Duration,
    pub proxy_next_upstream: NextUpstream,
    /// 0 = no cap.
    pub proxy_next_upstream_tries: u32,
    /// `proxy_next_upstream_budget` (ringfront only); `None`: no budget (nginx).
    pub proxy_next_upstream_budget: Option<crate::retry_budget::RetryBudget>,
    /// Zero = no limit.
    pub proxy_next_upstream_timeout: Duration,
    /// The rewrite module's directives of this level (`set`, `rewrite`, `return`, `break`,
    /// `if`) in file order; never inherited (nginx: a level's own codes). A server's run
    /// before its location is chosen, a location's after.
    pub rewrite: Vec<crate::rewrite_model::RewriteOp>,
    /// `rewrite_log on`: notice-level lines about each rewrite step.
    pub rewrite_log: bool,
    /// The settings of this location's `if` blocks with configuration directives
    /// (`If::config` indexes them): this location's, with the block's on top.
    pub if_settings: Vec<LocationSettings>,
    pub error_pages: Vec<ErrorPage>,
    /// `recursive_error_pages`, `proxy_intercept_errors`, `absolute_redirect`, ...
    pub errors: ErrorRules,
    /// `limit_except`: the configuration requests with other methods are answered with.
    pub limit_except: Option<Box<LimitExcept>>,
    /// `root`, default `html` relative to the prefix (ringfront: the config file's folder).
    pub root: PathBuf,
    /// `alias`, `index`, `types`, `default_type`.
    pub files: crate::files_model::Files,
    pub access_log: Vec<AccessLog>,
    pub keepalive_timeout: Duration,
    pub keepalive_requests: u64,
    /// `keepalive_time` (default 1h): no request starts on a client connection older than this.
    pub keepalive_time: Duration,
    /// Seconds for `Keep-Alive: timeout=N` on kept responses; 0: no such field (default).
    pub keepalive_header: u64,
    pub keepalive_disable: KeepaliveDisable,
    /// Bytes; 0 = unlimited. Default 1m.
    pub client_max_body_size: u64,
    pub client_header_timeout: Duration,
    pub client_body_timeout: Duration,
    pub send_timeout: Duration,
    /// `limit_rate` (default 0, no limit): bytes per second to the client.
    pub limit_rate: SizeValue,
    /// `limit_rate_after` (default 0): bytes sent before `limit_rate` applies.
    pub limit_rate_after: SizeValue,
    /// `proxy_limit_rate` (default 0, no limit): bytes per second read from the upstream.
    pub proxy_limit_rate: u64,
    /// `limit_req` / `limit_conn` and their settings.
    pub limits: crate::limits_model::Limits,
    /// (number, size) default (4, 8k).
    pub large_client_header_buffers: (usize, usize),
    /// `allow` / `deny` in order; empty allows everyone.
    pub access_rules: Vec<AccessRule>,
    /// `add_header` in order, inherited whole from the nearest level that writes any.
    pub add_headers: Vec<AddHeader>,
    /// `add_trailer` in order (inherited as `add_header`): fields sent after a chunked body.
    pub add_trailers: Vec<AddHeader>,
    /// `chunked_transfer_encoding` (default on): `off` sends bodies of unknown length
    /// unframed, closing the connection, and no trailers.
    pub chunked_transfer_encoding: bool,
    /// `underscores_in_headers` (server; default off): `_` is valid in request header names.
    pub underscores_in_headers: bool,
    /// `ignore_invalid_headers` (server; default on): request header lines with invalid
    /// names are dropped.
    pub ignore_invalid_headers: bool,
    /// `max_headers` (server; nginx 1.27.4, default 1000): a request with more header lines
    /// is a 400. ringfront's parser takes at most 100 whatever this says.
    pub max_headers: usize,
    /// `merge_slashes` (server; default on): `//` in the request's path is one `/`.
    pub merge_slashes: bool,
    /// `proxy_socket_keepalive` (default off): `SO_KEEPALIVE` on upstream connections.
    pub proxy_socket_keepalive: bool,
    /// `lingering_close` (default on): after a response the connection closes with, the
    /// client's further bytes are read and dropped before the socket is closed.
    pub lingering_close: LingeringClose,
    /// `lingering_time` (default 30s): the most time spent so.
    pub lingering_time: std::time::Duration,
    /// `lingering_timeout` (default 5s): the most time one read waits then.
    pub lingering_timeout: std::time::Duration,
    pub server_tokens: ServerTokens,
    /// `check_status [FORMAT]` in this location (not inherited): the health status page.
    pub check_status: Option<StatusFormat>,
    /// `api;` in this location (not inherited): the read-only nginx-Plus-style JSON API.
    pub api: bool,
    /// `api write=on`: the API's POST, PATCH and DELETE of upstream servers are allowed.
    pub api_write: bool,
    /// `stub_status;` in this location (not inherited): nginx's basic status page.
    pub stub_status: bool,
    /// `internal;` in this location (not inherited): a client's request here gets 404.
    pub internal: bool,
    /// `proxy_ssl_*`, used when `proxy_pass` is `https://`.
    pub proxy_ssl: crate::ssl_model::ProxySsl,
    /// `gzip on` and the `gzip_*` settings; `None` where gzip is off.
    pub gzip: Option<crate::gzip::Gzip>,
    /// The realip module where `set_real_ip_from` is in effect.
    pub real_ip: Option<crate::realip::RealIp>,
    /// `auth_basic`, `auth_basic_user_file`, `satisfy`, `auth_delay`.
    pub access: crate::auth_basic::Access,
    /// `proxy_request_buffering`, `client_body_buffer_size`, `client_body_in_file_only`,
    /// `client_body_temp_path`.
    pub request_body: crate::request_body::RequestBody,
    /// What is done to the upstream response's fields (`proxy_hide_header`,
    /// `proxy_redirect`, `proxy_cookie_*`, ...).
    pub proxy_headers: crate::proxy_headers_model::ProxyHeaders,
    /// `resolver` and `resolver_timeout` in effect here.
    pub resolver: crate::resolver::ResolverSettings,
}

/// `keepalive_disable`: the browsers whose requests close the connection (nginx's
/// bitmask; default `msie6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeepaliveDisable {
    /// Old MSIE, for POST requests only.
    pub msie6: bool,
    pub safari: bool,
}

impl KeepaliveDisable {
    pub const MSIE6: KeepaliveDisable = KeepaliveDisable {
        msie6: true,
        safari: false,
    };
}

/// `lingering_close off | on | always`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LingeringClose {
    Off,
    /// Only when the client may still be sending: a request body left unread, or bytes of
    /// a next request already in.
    On,
    Always,
}
