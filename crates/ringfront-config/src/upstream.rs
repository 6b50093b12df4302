//! `upstream NAME { server ADDR [weight=N] [max_fails=N] [fail_timeout=T] [max_conns=N]
//! [backup] [down]; ip_hash | hash KEY [consistent] | least_conn | random [two [least_conn]] |
//! least_time header|last_byte [inflight] | fair; zone NAME [SIZE]; all_failed reject|revive;
//! passive_health nginx|confirm; keepalive N; keepalive_timeout T; keepalive_requests N;
//! keepalive_time T; check ...; check_http_send ...; check_http_expect_alive ...; }`, host
//! names resolved as nginx does when it reads the `server` line.

use std::time::Duration;

use crate::address::{resolve, split_host_port};
use crate::directives::{for_each, unhandled, UPSTREAM};
use crate::error::ConfigError;
use crate::health::TengineRaw;
use crate::host::Host;
use crate::model::{AllFailed, Balancer, Origin, PassiveHealth, Upstream, UpstreamServer};
use crate::tree::Directive;
use crate::units::{parse_number, parse_size, parse_time_mode, TimeMode};
use crate::values::{err, msec, number, set_once, template};

/// No idle upstream connections are kept unless `keepalive N` says so, as in nginx (decision
/// 0018).
pub(crate) const DEFAULT_KEEPALIVE: usize = 0;
pub(crate) const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const DEFAULT_KEEPALIVE_REQUESTS: u64 = 1000;
/// nginx's upstream `keepalive_time` default (1.21.3+): one hour.
pub(crate) const DEFAULT_KEEPALIVE_TIME: Duration = Duration::from_secs(3600);
pub(crate) const DEFAULT_FAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// Health probes connect by IP address; a unix-domain server has none.
pub(crate) const UNIX_CHECKS: &str =
    "health checks of unix-domain socket servers are not supported by ringfront";

/// nginx's smallest `zone` size: 8 pages of 4 KiB.
const MIN_ZONE_SIZE: u64 = 8 * 4096;

/// A shared memory zone as nginx registers it: by exact name, size 0 until a `zone` line
/// gives one (`zone NAME;` may use a zone sized by another upstream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Zone {
    pub name: String,
    pub size: u64,
}

/// nginx's check when the configuration is complete: a zone no `zone` line gave a size to
/// (`zero size shared memory zone "z"`, without a place, as nginx prints it).
pub(crate) fn check_zones(zones: &[Zone]) -> Result<(), ConfigError> {
    match zones.iter().find(|z| z.size == 0) {
        Some(z) => Err(ConfigError::new(format!(
            "zero size shared memory zone \"{}\"",
            z.name
        ))),
        None => Ok(()),
    }
}

/// nginx's check when it initialises a group: at least one server that is not `backup`
/// (`no servers in upstream "u"`, placed at the `upstream` line). A group read from a
/// `state` file may have none (nginx Plus: its servers come and go through the API).
pub(crate) fn check_primary(u: &Upstream) -> Result<(), ConfigError> {
    if u.state.is_some() || u.servers.iter().any(|s| !s.backup) {
        return Ok(());
    }
    Err(ConfigError::at(
        format!("no servers in upstream \"{}\"", u.name),
        &u.origin,
    ))
}

/// Whether `server ... backup` may follow this balancer (nginx's `NGX_HTTP_UPSTREAM_BACKUP`
/// flag: not with the hash methods nor `random`; nginx Plus allows it with `least_time`).
fn allows_backup(b: &Balancer) -> bool {
    !matches!(
        b,
        Balancer::IpHash | Balancer::Hash { .. } | Balancer::Random { .. }
    )
}

/// Whether `server ... slow_start=` may be used with this balancer (nginx Plus: not with the
/// hash methods nor `random`).
fn allows_slow_start(b: &Balancer) -> bool {
    allows_backup(b)
}

/// `balancing method does not support parameter "slow_start=30s"`: nginx names the parameter
/// as written.
fn no_slow_start(d: &Directive, param: &str) -> ConfigError {
    err(
        d,
        format!("balancing method does not support parameter \"{param}\""),
    )
}

/// Reads an `upstream` block; `zones` holds the zones of the upstreams read before it.
pub(crate) fn upstream_block(
    d: &Directive,
    host: &dyn Host,
    zones: &mut Vec<Zone>,
) -> Result<Upstream, ConfigError> {
    let mut servers = Vec::new();
    let mut keepalive = None;
    let mut keepalive_timeout = None;
    let mut keepalive_requests = None;
    let mut keepalive_time = None;
    let mut balancer = Balancer::RoundRobin;
    let mut zone = None;
    let mut all_failed = None;
    let mut passive_health = None;
    let mut tengine = TengineRaw::default();
    let mut sticky = None;
    let mut resolver = crate::resolver::ResolverLevel::default();
    let mut state: Option<Directive> = None;
    // The first `slow_start=` parameter as written, for a balancing method that comes after.
    let mut slow_start: Option<String> = None;
    for_each(d.children(), UPSTREAM, |c| {
        let arg = c.arg(0);
        match c.name.as_str() {
            "server" => {
                let (s, ss) = server(c, host, &balancer)?;
                if slow_start.is_none() {
                    slow_start = ss;
                }
                servers.push(s);
            }
            "keepalive" => {
                // 0 turns ringfront's default pool off (nginx refuses 0; it has no default).
                let n = parse_number(arg)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        err(
                            c,
                            format!("invalid value \"{arg}\" in \"keepalive\" directive"),
                        )
                    })?;
                set_once(&mut keepalive, n, c)?;
            }
            "keepalive_timeout" => set_once(&mut keepalive_timeout, msec(c, arg)?, c)?,
            "keepalive_requests" => set_once(&mut keepalive_requests, number(c, arg)?, c)?,
            "keepalive_time" => set_once(&mut keepalive_time, msec(c, arg)?, c)?,
            // A second method replaces the first: nginx warns ("load balancing method
            // redefined") and goes on; ringfront has no warnings, so it just goes on.
            "ip_hash" | "least_conn" | "hash" | "random" | "least_time" | "fair" => {
                balancer = balancing_method(c)?;
                // A method written after a `slow_start=` server is refused at its own line.
                if let (false, Some(param)) = (allows_slow_start(&balancer), &slow_start) {
                    return Err(no_slow_start(c, param));
                }
            }
            "zone" => zone = Some(zone_line(c, zones)?),
            "state" => set_once(&mut state, c.clone(), c)?,
            "all_failed" => {
                let policy = match arg {
                    "reject" => AllFailed::Reject,
                    "revive" => AllFailed::Revive,
                    _ => {
                        return Err(err(
                            c,
                            format!(
                                "invalid value \"{arg}\" in \"all_failed\" directive, \
                                 it must be \"reject\" or \"revive\""
                            ),
                        ));
                    }
                };
                set_once(&mut all_failed, policy, c)?;
            }
            "passive_health" => {
                let policy = match arg {
                    "nginx" => PassiveHealth::Nginx,
                    "confirm" => PassiveHealth::Confirm,
                    _ => {
                        return Err(err(
                            c,
                            format!(
                                "invalid value \"{arg}\" in \"passive_health\" directive, \
                                 it must be \"nginx\" or \"confirm\""
                            ),
                        ));
                    }
                };
                set_once(&mut passive_health, policy, c)?;
            }
            "sticky" => set_once(&mut sticky, crate::sticky::sticky(c)?, c)?,
            _ if tengine.apply(c)? => {}
            _ if resolver.apply(c)? => {}
            _ => return Err(unhandled(c)),
        }
        Ok(())
    })?;
    if let Some(st) = &state {
        crate::upstream_state::check(d, st, &servers, zone.is_some())?;
        servers = crate::upstream_state::load(st, host, |c| Ok(server(c, host, &balancer)?.0))?;
    } else if servers.is_empty() {
        return Err(ConfigError::at("no servers are inside upstream", &d.end()));
    }
    let checks: Vec<_> = tengine.finish()?.into_iter().collect();
    if !checks.is_empty() && servers.iter().any(|s| s.unix.is_some()) {
        return Err(err(d, UNIX_CHECKS));
    }
    Ok(Upstream {
        name: d.arg(0).to_string(),
        servers,
        keepalive: keepalive.unwrap_or(DEFAULT_KEEPALIVE),
        keepalive_timeout: keepalive_timeout.unwrap_or(DEFAULT_KEEPALIVE_TIMEOUT),
        keepalive_requests: keepalive_requests.unwrap_or(DEFAULT_KEEPALIVE_REQUESTS),
        keepalive_time: keepalive_time.unwrap_or(DEFAULT_KEEPALIVE_TIME),
        implicit: false,
        implicit_tls: false,
        origin: d.origin.clone(),
        balancer,
        zone,
        all_failed: all_failed.unwrap_or_default(),
        passive_health: passive_health.unwrap_or_default(),
        checks,
        sticky,
        // Merged with the http block's once it is read (`resolver::finish_upstreams`).
        resolver: Some(resolver.finish_raw()),
        state: state.map(|st| std::path::PathBuf::from(st.arg(0))),
    })
}

/// `ip_hash`, `least_conn`, `hash KEY [consistent]`, `random [two [least_conn]]`,
/// `least_time header|last_byte [inflight]`, `fair`; the argument counts are already checked.
fn balancing_method(d: &Directive) -> Result<Balancer, ConfigError> {
    let invalid = |param: &str| err(d, format!("invalid parameter \"{param}\""));
    let param = d.args.get(1).map(String::as_str);
    Ok(match d.name.as_str() {
        "ip_hash" => Balancer::IpHash,
        "least_conn" => Balancer::LeastConn,
        "hash" => {
            // nginx checks the parameter at once and unknown variables only at the end.
            let consistent = match param {
                None => false,
                Some("consistent") => true,
                Some(other) => return Err(invalid(other)),
            };
            let key = template(d, d.arg(0))?;
            Balancer::Hash { key, consistent }
        }
        "random" => {
            let two = match d.args.first().map(String::as_str) {
                None => false,
                Some("two") => true,
                Some(other) => return Err(invalid(other)),
            };
            let least_conn = match param {
                None => false,
                Some("least_conn") => true,
                Some(other) => return Err(invalid(other)),
            };
            Balancer::Random { two, least_conn }
        }
        "least_time" => {
            let last_byte = match d.arg(0) {
                "header" => false,
                "last_byte" => true,
                other => return Err(invalid(other)),
            };
            let inflight = match param {
                None => false,
                Some("inflight") => true,
                Some(other) => return Err(invalid(other)),
            };
            Balancer::LeastTime {
                last_byte,
                inflight,
            }
        }
        "fair" => Balancer::LeastTime {
            last_byte: false,
            inflight: false,
        },
        _ => return Err(unhandled(d)),
    })
}

/// `zone NAME [SIZE]`, registered in `zones` with nginx's checks and messages.
fn zone_line(d: &Directive, zones: &mut Vec<Zone>) -> Result<String, ConfigError> {
    let name = d.arg(0);
    if name.is_empty() {
        return Err(err(d, "invalid zone name \"\""));
    }
    let size = match d.args.get(1) {
        None => 0,
        Some(text) => {
            let size =
                parse_size(text).ok_or_else(|| err(d, format!("invalid zone size \"{text}\"")))?;
            if size < MIN_ZONE_SIZE {
                return Err(err(d, format!("zone \"{name}\" is too small")));
            }
            size
        }
    };
    match zones.iter_mut().find(|z| z.name == name) {
        Some(z) if z.size == 0 => z.size = size,
        Some(z) if size != 0 && size != z.size => {
            return Err(err(
                d,
                format!(
                    "the size {size} of shared memory zone \"{name}\" conflicts with \
                     already declared size {}",
                    z.size
                ),
            ));
        }
        Some(_) => {}
        None => zones.push(Zone {
            name: name.to_string(),
            size,
        }),
    }
    Ok(name.to_string())
}

/// nginx's `NGX_HTTP_UPSTREAM_SID_LEN`: a route is at most an MD5 in hex long.
const MAX_ROUTE: usize = 32;

/// An upstream server with nginx's defaults (the implicit `proxy_pass` groups use it too).
pub(crate) fn default_server(
    text: &str,
    addrs: Vec<std::net::SocketAddr>,
    origin: &Origin,
) -> UpstreamServer {
    UpstreamServer {
        text: text.to_string(),
        addrs,
        unix: None,
        weight: 1,
        max_fails: 1,
        fail_timeout: DEFAULT_FAIL_TIMEOUT,
        backup: false,
        down: false,
        drain: false,
        max_conns: 0,
        slow_start: Duration::ZERO,
        route: None,
        origin: origin.clone(),
        resolve: None,
    }
}

/// The path of `unix:PATH` (`unix:` in any case, as nginx's `ngx_parse_url`).
pub(crate) fn unix_path(text: &str) -> Option<&str> {
    text.get(..5)
        .filter(|p| p.eq_ignore_ascii_case("unix:"))
        .map(|_| &text[5..])
}

/// A server on a unix-domain socket (`server unix:/path`, or the implicit group of
/// `proxy_pass http://unix:/path`).
pub(crate) fn unix_server(
    text: &str,
    path: &str,
    origin: &Origin,
) -> Result<UpstreamServer, crate::address::AddrError> {
    if path.is_empty() {
        return Err(crate::address::AddrError::NoPath);
    }
    let mut s = default_server(text, Vec::new(), origin);
    s.unix = Some(path.into());
    Ok(s)
}

/// `server ADDR [params]`; the address defaults to port 80. `balancer`: the balancing method
/// written so far (`backup` and `slow_start=` are refused with some). Also returns the
/// `slow_start=` parameter as written, if any.
fn server(
    d: &Directive,
    host: &dyn Host,
    balancer: &Balancer,
) -> Result<(UpstreamServer, Option<String>), ConfigError> {
    let backup_ok = allows_backup(balancer);
    let mut slow_start = None;
    let text = d.arg(0);
    let addr_err =
        |e: crate::address::AddrError| err(d, format!("{} in upstream \"{text}\"", e.as_str()));
    let spec = crate::resolver::resolve_param(d)?;
    let mut s = match unix_path(text) {
        Some(path) => unix_server(text, path, &d.origin).map_err(addr_err)?,
        None => {
            let hp = split_host_port(text).map_err(addr_err)?;
            match crate::resolver::template(d, &hp, spec)? {
                Some(r) => {
                    let mut s = default_server(text, Vec::new(), &d.origin);
                    s.resolve = Some(r);
                    s
                }
                None => {
                    let addrs = resolve(&hp.host, hp.port.unwrap_or(80), host).map_err(addr_err)?;
                    default_server(text, addrs, &d.origin)
                }
            }
        }
    };
    for param in d.args.iter().skip(1) {
        let invalid = || err(d, format!("invalid parameter \"{param}\""));
        let (key, value) = match param.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (param.as_str(), None),
        };
        let num = |v: Option<&str>| v.and_then(parse_number).and_then(|n| u32::try_from(n).ok());
        match (key, value) {
            ("weight", v) => s.weight = num(v).filter(|&w| w >= 1).ok_or_else(invalid)?,
            ("max_fails", v) => s.max_fails = num(v).ok_or_else(invalid)?,
            ("fail_timeout", Some(v)) => {
                s.fail_timeout = parse_time_mode(v, TimeMode::Sec).ok_or_else(invalid)?;
            }
            ("max_conns", v) => {
                // nginx takes any number up to its integer size; u32::MAX is as unlimited.
                let n = v.and_then(parse_number).ok_or_else(invalid)?;
                s.max_conns = u32::try_from(n).unwrap_or(u32::MAX);
            }
            ("backup", None) if !backup_ok => {
                return Err(err(
                    d,
                    "balancing method does not support parameter \"backup\"",
                ));
            }
            ("backup", None) => s.backup = true,
            ("down", None) => (s.down, s.drain) = (true, false),
            ("drain", None) => (s.down, s.drain) = (false, true),
            ("slow_start", _) if !allows_slow_start(balancer) => {
                return Err(no_slow_start(d, param));
            }
            // nginx Plus reads whole seconds; ringfront keeps what is written (`500ms` too).
            ("slow_start", Some(v)) => {
                s.slow_start = parse_time_mode(v, TimeMode::Msec).ok_or_else(invalid)?;
                slow_start = Some(param.clone());
            }
            ("route", Some(v)) => {
                if v.is_empty() {
                    return Err(err(d, "route is empty"));
                }
                if v.len() > MAX_ROUTE {
                    return Err(err(d, format!("route is longer than {MAX_ROUTE}")));
                }
                s.route = Some(v.to_string());
            }
            ("resolve", None) => {}
            ("service", Some(_)) => {}
            _ => return Err(invalid()),
        }
    }
    Ok((s, slow_start))
}
