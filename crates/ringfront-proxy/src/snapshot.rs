//! The shared, immutable view of one configuration: listeners, servers with their location
//! trees, upstream topology and its health board. Built on the control thread, published
//! whole through `ArcSwap`, never mutated.

use std::collections::HashMap;
use std::net::SocketAddr;

use regex::{Regex, RegexBuilder};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ringfront_config::{
    AccessLog, AllFailed, Config, LocationMatch, LocationSettings, LogLevel, PassiveHealth,
    ProxyTarget, Template,
};
use ringfront_upstream::{
    Balancer, Board, PeerHealth, PeerId, PeerSpec, Topology, UpstreamId, UpstreamSpec,
};

pub use crate::build_error::BuildError;
use crate::logger::Sink;
use crate::upstream_tls::TlsCache;

/// Per-group settings the proxy needs beside the topology (same index as `topology.upstreams`).
#[derive(Debug)]
pub struct GroupConf {
    pub keepalive: usize,
    pub keepalive_timeout: std::time::Duration,
    pub keepalive_requests: u64,
    /// Upstream `keepalive_time`: a connection older than this is closed, not pooled, after
    /// the response it carried.
    pub keepalive_time: std::time::Duration,
    /// `$proxy_host`: the group name, or `host:port` for an implicit group (`:80` dropped).
    pub proxy_host: String,
    /// What a `proxy_pass` with variables finds the group by (nginx's `uscf->host`,
    /// `uscf->port`): the name and no port for an `upstream` block, host and port (the
    /// scheme's when none was written) for an implicit group.
    pub host_key: (String, Option<u16>),
    /// `hash KEY`: the key evaluated per request.
    pub hash_key: Option<Template>,
    /// `least_time`: whether the response time fed back is the last byte's (else the header's).
    pub least_time_last_byte: Option<bool>,
    /// `passive_health confirm`.
    pub confirm: bool,
    /// The group's active checks, ready to run.
    pub checks: Vec<crate::check_rt::CheckRt>,
    /// The balancing method's name (status pages).
    pub balancer: &'static str,
    /// `sticky`: the group's server ids and session zone.
    pub sticky: Option<crate::sticky::StickyRt>,
}

fn balancer_name(b: &ringfront_config::Balancer) -> &'static str {
    use ringfront_config::Balancer as C;
    match b {
        C::RoundRobin => "round_robin",
        C::IpHash => "ip_hash",
        C::Hash {
            consistent: true, ..
        } => "hash consistent",
        C::Hash { .. } => "hash",
        C::LeastConn => "least_conn",
        C::Random { two: true, .. } => "random two",
        C::Random { .. } => "random",
        C::LeastTime {
            last_byte: true, ..
        } => "least_time last_byte",
        C::LeastTime { .. } => "least_time header",
    }
}

/// The balancer a configuration names, in the upstream crate's terms.
fn balancer(b: &ringfront_config::Balancer) -> Balancer {
    use ringfront_config::Balancer as C;
    match b {
        C::RoundRobin => Balancer::RoundRobin,
        C::IpHash => Balancer::IpHash,
        C::Hash { consistent, .. } => Balancer::Hash {
            consistent: *consistent,
        },
        C::LeastConn => Balancer::LeastConn,
        C::Random { two, least_conn } => Balancer::Random {
            two: *two,
            least_conn: *least_conn,
        },
        C::LeastTime {
            last_byte,
            inflight,
        } => Balancer::LeastTime {
            last_byte: *last_byte,
            inflight: *inflight,
        },
    }
}

#[derive(Debug)]
pub struct LocationRt {
    pub matcher: Option<LocationMatch>,
    pub regex: Option<Regex>,
    pub settings: LocationSettings,
    pub upstream: Option<UpstreamId>,
    pub access_logs: Vec<AccessLogRt>,
    pub children: Vec<LocationRt>,
    /// `proxy_pass https://`: its `proxy_ssl_*`, ready (built once per configuration load).
    pub upstream_tls: Option<Arc<crate::upstream_tls::TlsRt>>,
    /// Its rewrite directives (empty for a server's fallback: the server's run before).
    pub rewrite: crate::rewrite_rt::Program,
    /// The variable slot of each named group of `regex`: (group index, slot).
    pub capture_names: Vec<(usize, usize)>,
    /// Its `if` blocks' configurations (`IfRt::config` indexes them).
    pub ifs: Vec<LocationRt>,
    /// Its `limit_except` block's configuration, for the methods it does not list.
    pub limit: Option<Box<LocationRt>>,
}

impl LocationRt {
    /// It has a `proxy_pass` (static or with variables).
    pub fn proxies(&self) -> bool {
        self.upstream.is_some() || self.pass_vars().is_some()
    }

    /// The URL of its `proxy_pass` with variables, if it has one.
    pub fn pass_vars(&self) -> Option<&Template> {
        match self.settings.proxy_pass.as_ref().map(|p| &p.target) {
            Some(ProxyTarget::Variables(t)) => Some(t),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub struct ServerRt {
    /// `$server_name`: the first `server_name` as written (a regex one too), else "".
    pub primary_name: String,
    pub names: Vec<String>,
    /// `server_name ~regex` entries, tried after the exact and wildcard names.
    pub name_regexes: Vec<Regex>,
    /// For each of `name_regexes`, the variable slot of each named group.
    pub name_captures: Vec<Vec<(usize, usize)>>,
    pub locations: Vec<LocationRt>,
    /// Used when no location matches (answers 404, as nginx).
    pub fallback: LocationRt,
    /// Its TLS handshake settings, when one of its addresses is `listen ... ssl`.
    pub tls: Option<ringfront_tls::ServerHandshake>,
    /// `ssl_verify_client` is not `off` (a request naming it by a `Host` other than the
    /// handshake's SNI is misdirected, 421).
    pub verify_client: bool,
    /// The server level's rewrite directives, run before the location is chosen.
    pub rewrite: crate::rewrite_rt::Program,
    /// A location may answer nginx's auto redirect (`route::auto_redirect`): without one
    /// the search for it is skipped.
    pub auto_redirects: bool,
}

#[derive(Debug, Clone)]
pub struct ListenRt {
    pub addr: SocketAddr,
    /// `listen ... ssl`: connections start with a TLS handshake.
    pub ssl: bool,
    /// `listen ... proxy_protocol`: connections start with a PROXY protocol header.
    pub proxy_protocol: bool,
    pub backlog: i32,
    pub options: ringfront_config::SocketOptions,
    /// `listen unix:PATH`: the path (`addr` is its key, `ringfront_config::unix_addr`).
    pub unix: Option<std::path::PathBuf>,
}

impl ListenRt {
    /// The address as nginx names it: `127.0.0.1:80`, `unix:/path`.
    pub fn name(&self) -> String {
        match &self.unix {
            Some(p) => format!("unix:{}", p.display()),
            None => self.addr.to_string(),
        }
    }
}

#[derive(Debug)]
pub struct Snapshot {
    pub generation: u64,
    pub topology: Topology,
    pub board: Board,
    /// Requests and retries in flight per group (`proxy_next_upstream_budget`).
    pub loads: Vec<ringfront_upstream::budget::Load>,
    pub groups: Vec<GroupConf>,
    pub listens: Vec<ListenRt>,
    pub servers: Vec<ServerRt>,
    /// For each listen address, the servers on it, the default server first; sorted by
    /// address (a binary search per request: no SipHash of the address).
    pub by_listen: Vec<(SocketAddr, Vec<usize>)>,
    pub log_formats: Vec<(Template, ringfront_config::LogEscape)>,
    /// `map` variables, ready to evaluate.
    pub maps: Vec<crate::map::MapRt>,
    pub splits: Vec<ringfront_config::SplitClients>,
    pub geos: Vec<ringfront_config::GeoBlock>,
    /// `limit_req_zone` / `limit_conn_zone` zones, shared by every worker.
    pub limit_zones: Vec<crate::limits::ZoneRt>,
    /// Set by [`Snapshot::adopt`]: which peer of the previous generation each peer continues.
    pub carried: Option<Carried>,
    pub error_logs: Vec<Sink>,
    pub error_level: LogLevel,
    pub worker_connections: usize,
    /// The socket path of each unix-domain peer (`server unix:/path`), by peer id.
    pub unix_paths: Vec<Option<std::path::PathBuf>>,
    /// `worker_shutdown_timeout`: connections still open this long after a graceful stop,
    /// or after a reload for those accepted before it, are closed.
    pub shutdown_timeout: Option<std::time::Duration>,
    /// The rewrite module's variables (`set`, named captures): each request's slots start
    /// as these (empty for a `set` variable, not found for a named capture's).
    pub variables: Vec<Option<Vec<u8>>>,
    /// Some rewrite directive, `try_files`, variable or capture is configured: requests keep a
    /// [`crate::rewrite_state::RwState`].
    pub rewriting: bool,
    /// Something reads regex captures (`$1`.. in a template, a named group): regex
    /// locations and server names keep theirs (a `return`-only configuration does not
    /// pay for them).
    pub captures: bool,
    /// What templates read that requests keep only then (the body, response heads).
    pub uses: ringfront_config::Uses,
    /// The configuration as read (`server NAME resolve` lines as templates), and the
    /// members each template has now: with them a membership change builds the next
    /// snapshot (members.rs).
    pub config: Option<Arc<Config>>,
    pub members: Arc<crate::members::Members>,
    /// Made by a membership change, not a reload: connections are not retired for it.
    pub membership_only: bool,
}

/// The peers a reload carried over: `from[new id] = Some(old id)`.
/// One `access_log` of a location, ready to write.
#[derive(Debug)]
pub struct AccessLogRt {
    pub sink: Sink,
    /// Index into `Snapshot::log_formats`.
    pub format: usize,
    /// `if=`: written only when this evaluates to neither `""` nor `"0"`.
    pub condition: Option<Template>,
}

#[derive(Debug, Clone)]
pub struct Carried {
    pub generation: u64,
    pub from: Vec<Option<PeerId>>,
}

/// The path of an implicit group named `unix:PATH`.
fn unix_path(name: &str) -> Option<&str> {
    name.get(..5)
        .filter(|p| p.eq_ignore_ascii_case("unix:"))
        .map(|_| &name[5..])
}

/// Where one `server` line's peers are: (name, address, socket path). A unix-domain server
/// is one peer named as written (`unix:/path`), its address unused.
fn peer_targets(
    s: &ringfront_config::UpstreamServer,
) -> Vec<(String, SocketAddr, Option<std::path::PathBuf>)> {
    match &s.unix {
        Some(path) => vec![(s.text.clone(), UNIX_PEER_ADDR, Some(path.clone()))],
        None => s.addrs.iter().map(|a| (a.to_string(), *a, None)).collect(),
    }
}

/// The `PeerSpec::addr` of a unix-domain peer, which is never connected to.
const UNIX_PEER_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0);

/// A `proxy_pass` with variables whose evaluated scheme is not known to be `http://`.
fn may_be_https(target: &ProxyTarget) -> bool {
    let ProxyTarget::Variables(t) = target else {
        return false;
    };
    !matches!(t.parts.first(), Some(ringfront_config::TemplatePart::Literal(s))
        if s.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("http://")))
}

/// See [`GroupConf::host_key`]; an implicit group's name is `host[:port]` as written.
fn host_key(up: &ringfront_config::Upstream) -> (String, Option<u16>) {
    if !up.implicit {
        return (up.name.clone(), None);
    }
    if let Some(path) = unix_path(&up.name) {
        return (path.to_string(), Some(0));
    }
    let default = if up.implicit_tls { 443 } else { 80 };
    let name = up.name.as_str();
    let colon = match name.rfind(']') {
        Some(close) => name[close..].find(':').map(|i| close + i),
        None => name.find(':'),
    };
    match colon {
        Some(i) => (
            name[..i].to_string(),
            Some(name[i + 1..].parse().unwrap_or(default)),
        ),
        None => (name.to_string(), Some(default)),
    }
}

struct Builder<'a> {
    cfg: &'a Config,
    group_ids: HashMap<String, UpstreamId>,
    tls: std::cell::RefCell<TlsCache>,
}

impl Builder<'_> {
    fn location(
        &self,
        matcher: Option<LocationMatch>,
        settings: &LocationSettings,
        children: &[ringfront_config::Location],
    ) -> Result<LocationRt, BuildError> {
        let regex = match &matcher {
            Some(LocationMatch::Regex {
                pattern,
                case_insensitive,
            }) => Some(
                RegexBuilder::new(pattern)
                    .case_insensitive(*case_insensitive)
                    .build()
                    .map_err(|e| BuildError::Regex(pattern.clone(), e.to_string()))?,
            ),
            _ => None,
        };
        let upstream_tls = match &settings.proxy_pass {
            Some(p) if p.tls || may_be_https(&p.target) => {
                Some(self.tls.borrow_mut().location(&settings.proxy_ssl)?)
            }
            _ => None,
        };
        let upstream = match settings.proxy_pass.as_ref().map(|p| &p.target) {
            Some(ProxyTarget::Upstream(name)) => Some(
                *self
                    .group_ids
                    .get(name)
                    .ok_or_else(|| BuildError::NoUpstream(name.clone()))?,
            ),
            _ => None,
        };
        let formats = &self.cfg.http.log_formats;
        let access_logs = settings
            .access_log
            .iter()
            .filter_map(|a| match a {
                AccessLog::Off => None,
                AccessLog::File {
                    path,
                    format,
                    condition,
                } => {
                    let idx = formats.iter().position(|f| &f.name == format).unwrap_or(0);
                    let sink = Sink::of(path);
                    Some(AccessLogRt {
                        sink,
                        format: idx,
                        condition: condition.clone(),
                    })
                }
            })
            .collect();
        let children = children
            .iter()
            .map(|l| self.location(Some(l.matcher.clone()), &l.settings, &l.locations))
            .collect::<Result<_, _>>()?;
        let variables = &self.cfg.http.variables;
        let (rewrite, capture_names) = match &matcher {
            None => Default::default(),
            Some(m) => (
                crate::rewrite_rt::Program::build(&settings.rewrite, variables)?,
                match m {
                    LocationMatch::Regex {
                        pattern,
                        case_insensitive,
                    } => {
                        crate::rewrite_rt::Matcher::build(pattern, *case_insensitive, variables)?
                            .names
                    }
                    _ => Vec::new(),
                },
            ),
        };
        let ifs = settings
            .if_settings
            .iter()
            .map(|s| self.location(matcher.clone(), s, &[]))
            .collect::<Result<_, _>>()?;
        let limit = match &settings.limit_except {
            Some(l) => Some(Box::new(self.location(
                matcher.clone(),
                &l.settings,
                &[],
            )?)),
            None => None,
        };
        Ok(LocationRt {
            ifs,
            limit,
            rewrite,
            capture_names,
            matcher,
            regex,
            settings: settings.clone(),
            upstream,
            access_logs,
            children,
            upstream_tls,
        })
    }
}

impl Snapshot {
    pub fn build(cfg: &Config, generation: u64) -> Result<Snapshot, BuildError> {
        let members = Arc::new(crate::members::Members::default());
        Snapshot::build_with(Arc::new(cfg.clone()), members, generation)
    }

    /// The snapshot of `cfg` with `members` in place of its `resolve` templates.
    pub fn build_with(
        cfg: Arc<Config>,
        members: Arc<crate::members::Members>,
        generation: u64,
    ) -> Result<Snapshot, BuildError> {
        let expanded = crate::members::expand(&cfg, &members);
        let mut snap = Snapshot::build_expanded(&expanded, generation)?;
        snap.config = Some(cfg);
        snap.members = members;
        Ok(snap)
    }

    fn build_expanded(cfg: &Config, generation: u64) -> Result<Snapshot, BuildError> {
        let mut specs = Vec::new();
        let mut groups = Vec::new();
        let mut group_ids = HashMap::new();
        let mut tls = TlsCache::default();
        let mut unix_paths = Vec::new();
        for (i, up) in cfg.http.upstreams.iter().enumerate() {
            let mut primary = Vec::new();
            let mut backup = Vec::new();
            // The socket paths of the group's peers, in the topology's order of ids.
            let (mut primary_unix, mut backup_unix) = (Vec::new(), Vec::new());
            let (mut primary_ids, mut backup_ids) = (Vec::new(), Vec::new());
            let secret = up.sticky.as_ref().map_or(&[][..], |s| s.secret());
            for s in &up.servers {
                for (name, addr, unix) in peer_targets(s) {
                    let sid = crate::sticky::server_id(s.route.as_deref(), secret, &name);
                    let p = PeerSpec {
                        name,
                        addr,
                        weight: s.weight.max(1),
                        max_fails: s.max_fails,
                        fail_timeout: s.fail_timeout.as_secs(),
                        max_conns: s.max_conns,
                        server: s.text.clone(),
                        down: s.down || s.drain,
                        drain: s.drain,
                        slow_start_ms: u64::try_from(s.slow_start.as_millis()).unwrap_or(u64::MAX),
                    };
                    if s.backup {
                        backup.push(p);
                        backup_unix.push(unix);
                        backup_ids.push(sid);
                    } else {
                        primary.push(p);
                        primary_unix.push(unix);
                        primary_ids.push(sid);
                    }
                }
            }
            unix_paths.extend(primary_unix);
            unix_paths.extend(backup_unix);
            primary_ids.extend(backup_ids);
            let sticky = up
                .sticky
                .as_ref()
                .map(|s| crate::sticky::StickyRt::build(s, &up.name, primary_ids));
            specs.push(UpstreamSpec {
                name: up.name.clone(),
                primary,
                backup,
                balancer: balancer(&up.balancer),
                revive: up.all_failed == AllFailed::Revive,
            });
            let default_port = if up.implicit_tls { ":443" } else { ":80" };
            let proxy_host = match up.name.strip_suffix(default_port) {
                // nginx sends `Host: localhost` to a unix-domain socket.
                _ if up.implicit && unix_path(&up.name).is_some() => "localhost".to_string(),
                Some(h) if up.implicit => h.to_string(),
                _ => up.name.clone(),
            };
            let checks = up
                .checks
                .iter()
                .map(|c| {
                    let t = crate::check_rt::check_tls(c, &proxy_host, &mut tls)?;
                    crate::check_rt::CheckRt::build(c, &proxy_host, t)
                })
                .collect::<Result<Vec<_>, _>>()?;
            groups.push(GroupConf {
                sticky,
                confirm: up.passive_health == PassiveHealth::Confirm,
                checks,
                balancer: balancer_name(&up.balancer),
                hash_key: match &up.balancer {
                    ringfront_config::Balancer::Hash { key, .. } => Some(key.clone()),
                    _ => None,
                },
                least_time_last_byte: match &up.balancer {
                    ringfront_config::Balancer::LeastTime { last_byte, .. } => Some(*last_byte),
                    _ => None,
                },
                keepalive: up.keepalive,
                keepalive_timeout: up.keepalive_timeout,
                keepalive_requests: up.keepalive_requests,
                keepalive_time: up.keepalive_time,
                host_key: host_key(up),
                proxy_host,
            });
            group_ids.insert(up.name.clone(), i);
        }
        let topology = Topology::new(specs);
        let board = Board::new(topology.peer_count);
        // A group with a `mandatory` check starts with every peer held out until its first
        // probe passes.
        for (g, up) in groups.iter().zip(&topology.upstreams) {
            if g.checks.iter().any(|c| c.mandatory) {
                for id in up.ids() {
                    if let Some(h) = board.get(id) {
                        h.state
                            .store(ringfront_upstream::CHECKING, Ordering::Relaxed);
                    }
                }
            }
        }
        let b = Builder {
            cfg,
            group_ids,
            tls: tls.into(),
        };

        let mut listens: Vec<ListenRt> = Vec::new();
        let mut by_listen: HashMap<SocketAddr, Vec<usize>> = HashMap::new();
        let mut servers = Vec::new();
        for (si, s) in cfg.http.servers.iter().enumerate() {
            let locations = s
                .locations
                .iter()
                .map(|l| b.location(Some(l.matcher.clone()), &l.settings, &l.locations))
                .collect::<Result<Vec<_>, _>>()?;
            let fallback = b.location(None, &s.settings, &[])?;
            let mut name_regexes = Vec::new();
            let mut name_captures = Vec::new();
            for written in s.server_names.iter().filter_map(|n| n.strip_prefix('~')) {
                // Kept as written for `$server_name`; PCRE's `\Q..\E` read here.
                let n = &ringfront_config::pcre::translate(written);
                let m = crate::rewrite_rt::Matcher::build(n, true, &cfg.http.variables)?;
                name_captures.push(m.names);
                let re = RegexBuilder::new(n)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| BuildError::Regex(n.to_string(), e.to_string()))?;
                name_regexes.push(re);
            }
            // A TLS server without a certificate of its own (not a default one: the
            // config refuses that) hands its handshakes to the address's default server.
            let own = !s.ssl.certificates.is_empty() || s.ssl.reject_handshake;
            // Certificates (and their password files) are loaded for every server that
            // names them, as nginx does, whether or not it listens with TLS.
            let built = match own {
                true => Some(ringfront_tls::server_tls(&s.ssl)?),
                false => None,
            };
            let tls = built.filter(|_| s.listens.iter().any(|l| l.ssl));
            servers.push(ServerRt {
                auto_redirects: crate::route::has_auto_redirects(&locations),
                name_captures,
                rewrite: crate::rewrite_rt::Program::build(
                    &s.settings.rewrite,
                    &cfg.http.variables,
                )?,
                tls,
                verify_client: s.ssl.verify_client != ringfront_config::VerifyClient::Off,
                name_regexes,
                primary_name: primary_name(&s.server_names),
                names: s
                    .server_names
                    .iter()
                    .filter(|n| !n.starts_with('~'))
                    .map(|n| n.to_ascii_lowercase())
                    .collect(),
                locations,
                fallback,
            });
            for l in &s.listens {
                // One server per address sets its socket options (the config checks it).
                match listens.iter_mut().find(|x| x.addr == l.addr) {
                    None => listens.push(ListenRt {
                        addr: l.addr,
                        ssl: l.ssl,
                        proxy_protocol: l.proxy_protocol,
                        backlog: l.backlog,
                        options: l.options,
                        unix: l.unix.clone(),
                    }),
                    Some(x) if x.options == Default::default() => {
                        x.options = l.options;
                        x.backlog = x.backlog.max(l.backlog);
                    }
                    Some(_) => {}
                }
                let list = by_listen.entry(l.addr).or_default();
                if l.default_server {
                    list.insert(0, si);
                } else {
                    list.push(si);
                }
            }
        }
        let mut error_logs: Vec<Sink> = Vec::new();
        let mut error_level = LogLevel::Emerg;
        for e in &cfg.main.error_log {
            error_logs.push(match &e.path {
                None => Sink::Stderr,
                Some(p) => Sink::of(p),
            });
            error_level = error_level.min(e.level);
        }
        if error_logs.is_empty() {
            error_logs.push(Sink::Stderr);
            error_level = LogLevel::Error;
        }
        let captures = !cfg.http.variables.is_empty() || cfg.http.captures;
        let rewriting = captures
            || servers.iter().any(|s: &ServerRt| {
                !s.rewrite.is_empty()
                    || has_rewrite(&s.fallback)
                    || s.locations.iter().any(has_rewrite)
            });
        Ok(Snapshot {
            variables: cfg
                .http
                .variable_set
                .iter()
                .map(|&set| set.then(Vec::new))
                .collect(),
            rewriting,
            captures,
            uses: cfg.http.uses,
            generation,
            loads: (0..topology.upstreams.len())
                .map(|_| Default::default())
                .collect(),
            topology,
            board,
            groups,
            listens,
            servers,
            by_listen: {
                let mut v: Vec<_> = by_listen.into_iter().collect();
                v.sort_unstable_by_key(|(addr, _)| *addr);
                v
            },
            carried: None,
            splits: cfg.http.splits.clone(),
            geos: cfg.http.geos.clone(),
            limit_zones: crate::limits::build(&cfg.http.limit_zones),
            maps: cfg
                .http
                .maps
                .iter()
                .map(|m| crate::map::MapRt::build(m, &cfg.http.variables))
                .collect::<Result<_, _>>()?,
            log_formats: cfg
                .http
                .log_formats
                .iter()
                .map(|f| (f.format.clone(), f.escape))
                .collect(),
            error_logs,
            error_level,
            worker_connections: cfg.main.worker_connections.max(1),
            unix_paths,
            shutdown_timeout: cfg.main.worker_shutdown_timeout,
            config: None,
            members: Arc::default(),
            membership_only: false,
        })
    }

    /// Takes over the health of every peer that survives from `old` (same group name and
    /// address): failure counts, health state, slow-start progress and counters, by sharing
    /// the very same board entries (requests still running on `old` keep updating them).
    /// Records which old peer each new one continues, so workers can keep their keepalive
    /// pools. After a reload, a surviving peer of a group with a `mandatory` check that is
    /// not `persistent` (or was not up) is held out until its next probe passes, as nginx
    /// Plus does; a membership change (`membership_only`) holds out only its new peers
    /// (which [`Snapshot::build_with`] starts in `CHECKING`).
    pub fn adopt(&mut self, old: &Snapshot) {
        let mut index: HashMap<(&str, &str), usize> = HashMap::new();
        for up in &old.topology.upstreams {
            for id in up.ids() {
                if let Some(p) = up.peer(id) {
                    index.insert((up.name.as_str(), p.name.as_str()), id);
                }
            }
        }
        let mut peers: Vec<Arc<PeerHealth>> = Vec::with_capacity(self.topology.peer_count);
        let mut from = vec![None; self.topology.peer_count];
        for (gi, up) in self.topology.upstreams.iter().enumerate() {
            let checks = self.groups.get(gi).map_or(&[][..], |g| &g.checks[..]);
            let reload = !self.membership_only;
            let recheck = reload && checks.iter().any(|c| c.mandatory && !c.persistent);
            let persistent = reload && checks.iter().any(|c| c.mandatory && c.persistent);
            for id in up.ids() {
                let mine = self.board.arc(id).cloned().unwrap_or_default();
                let carried = up
                    .peer(id)
                    .and_then(|p| index.get(&(up.name.as_str(), p.name.as_str())))
                    .and_then(|&oid| old.board.arc(oid).map(|h| (oid, h.clone())));
                let h = match carried {
                    Some((oid, h)) => {
                        if let Some(slot) = from.get_mut(id) {
                            *slot = Some(oid);
                        }
                        if recheck || (persistent && !h.is_up()) {
                            h.state
                                .store(ringfront_upstream::CHECKING, Ordering::Relaxed);
                        }
                        h
                    }
                    None => mine,
                };
                peers.push(h);
            }
        }
        self.board = Board::from_peers(peers);
        crate::limits::adopt(&mut self.limit_zones, &old.limit_zones);
        self.carried = Some(Carried {
            generation: old.generation,
            from,
        });
    }

    /// Whether connections to `local` (the socket's own address) speak TLS first.
    pub fn is_tls(&self, local: SocketAddr) -> bool {
        self.listen_of(local).is_some_and(|l| l.ssl)
    }

    /// The `listen` a connection to `local` (the socket's own address) came through.
    pub fn listen_of(&self, local: SocketAddr) -> Option<&ListenRt> {
        let any = wildcard(local);
        self.listens
            .iter()
            .find(|l| l.addr == local)
            .or_else(|| self.listens.iter().find(|l| l.addr == any))
    }

    /// The servers listening on `local` (the socket's own address), default first.
    pub fn servers_for(&self, local: SocketAddr) -> &[usize] {
        let find = |addr: SocketAddr| {
            self.by_listen
                .binary_search_by_key(&addr, |(a, _)| *a)
                .ok()
                .and_then(|i| self.by_listen.get(i))
                .map(|(_, servers)| servers.as_slice())
        };
        find(local).or_else(|| find(wildcard(local))).unwrap_or(&[])
    }
}

/// Whether a location or one nested in it has rewrite directives.
/// Rewrite directives, or `try_files` (whose internal redirect changes the URI too).
fn has_rewrite(l: &LocationRt) -> bool {
    !l.rewrite.is_empty()
        || l.settings.files.try_files.is_some()
        || l.children.iter().any(has_rewrite)
}

/// The wildcard address of `local`'s family and port.
fn wildcard(local: SocketAddr) -> SocketAddr {
    match local {
        SocketAddr::V4(_) => ([0, 0, 0, 0], local.port()).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, local.port()).into(),
    }
}

/// nginx's `$server_name`: the first name, a leading `.` dropped (`.example.com` is
/// `example.com`); a regex keeps its `~`; none is `""`.
fn primary_name(names: &[String]) -> String {
    let first = names.first().map_or("", String::as_str);
    first.strip_prefix('.').unwrap_or(first).to_string()
}
