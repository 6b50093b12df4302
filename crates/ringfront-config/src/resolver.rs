//! `resolver ADDR[:PORT] ... [valid=TIME] [ipv4=on|off] [ipv6=on|off] [status_zone=NAME]`
//! and `resolver_timeout TIME` (nginx's core module, `ngx_resolver_create`): the name
//! servers `proxy_pass` with variables and `server NAME resolve` ask. A level that does not
//! write `resolver` uses the one around it (one resolver, one cache, as nginx); the timeout
//! merges the same way (default 30 s).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::address::split_host_port;
use crate::error::ConfigError;
use crate::tree::Directive;
use crate::units::{parse_time_mode, TimeMode};
use crate::values::{err, msec, set_once};

/// One `resolver` line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resolver {
    /// The name servers, asked in turn (port 53 unless written).
    pub servers: Vec<SocketAddr>,
    /// `valid=TIME`: overrides every answer's TTL.
    pub valid: Option<Duration>,
    /// `ipv4=off`: no A queries (nginx 1.23.1).
    pub ipv4: bool,
    /// `ipv6=off`: no AAAA queries.
    pub ipv6: bool,
}

/// The merged settings of a location (or an upstream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverSettings {
    /// `None`: no resolver defined.
    pub resolver: Option<Arc<Resolver>>,
    /// `resolver_timeout` (default 30 s): how long one name may take.
    pub timeout: Duration,
}

impl Default for ResolverSettings {
    fn default() -> Self {
        ResolverSettings {
            resolver: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What one level wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResolverLevel {
    resolver: Option<Arc<Resolver>>,
    timeout: Option<Duration>,
}

impl ResolverLevel {
    /// Reads `d` if it is `resolver` or `resolver_timeout`; `Ok(false)` if not.
    pub(crate) fn apply(&mut self, d: &Directive) -> Result<bool, ConfigError> {
        match d.name.as_str() {
            "resolver" => set_once(&mut self.resolver, Arc::new(parse(d)?), d)?,
            "resolver_timeout" => set_once(&mut self.timeout, msec(d, d.arg(0))?, d)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// This level over `outer`.
    pub(crate) fn inherit(&self, outer: &ResolverLevel) -> ResolverLevel {
        ResolverLevel {
            resolver: self.resolver.clone().or_else(|| outer.resolver.clone()),
            timeout: self.timeout.or(outer.timeout),
        }
    }

    /// What this level wrote, unmerged (the upstream's, merged later with the http block's).
    pub(crate) fn finish_raw(&self) -> ResolverSettings {
        ResolverSettings {
            resolver: self.resolver.clone(),
            timeout: self.timeout.unwrap_or(Duration::ZERO),
        }
    }

    pub(crate) fn finish(&self) -> ResolverSettings {
        ResolverSettings {
            resolver: self.resolver.clone(),
            timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
        }
    }
}

/// The arguments of one `resolver` line, with `ngx_resolver_create`'s messages.
pub(crate) fn parse(d: &Directive) -> Result<Resolver, ConfigError> {
    let mut r = Resolver {
        servers: Vec::new(),
        valid: None,
        ipv4: true,
        ipv6: true,
    };
    for arg in &d.args {
        let bad = || err(d, format!("invalid parameter: {arg}"));
        if let Some(t) = arg.strip_prefix("valid=") {
            r.valid = Some(parse_time_mode(t, TimeMode::Sec).ok_or_else(bad)?);
        } else if let Some(v) = arg.strip_prefix("ipv6=") {
            r.ipv6 = on_off(v).ok_or_else(bad)?;
        } else if let Some(v) = arg.strip_prefix("ipv4=") {
            r.ipv4 = on_off(v).ok_or_else(bad)?;
        } else if let Some(zone) = arg.strip_prefix("status_zone=") {
            if zone.is_empty() {
                return Err(bad());
            }
        } else {
            r.servers.push(server(d, arg)?);
        }
    }
    if !r.ipv4 && !r.ipv6 {
        return Err(err(d, "\"ipv4\" and \"ipv6\" cannot both be \"off\""));
    }
    if r.servers.is_empty() {
        return Err(err(d, "no name servers defined"));
    }
    Ok(r)
}

/// `on` / `off`, written exactly (nginx compares with `ngx_strcmp`).
fn on_off(v: &str) -> Option<bool> {
    match v {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// `ADDR[:PORT]`; ringfront takes IP addresses only (a host name is refused, see the
/// configuration reference).
fn server(d: &Directive, text: &str) -> Result<SocketAddr, ConfigError> {
    let msg = |what: &str| err(d, format!("{what} in resolver \"{text}\""));
    let hp = split_host_port(text).map_err(|e| msg(e.as_str()))?;
    let ip = hp
        .host
        .parse::<std::net::IpAddr>()
        .map_err(|_| msg("host not found"))?;
    Ok(SocketAddr::new(ip, hp.port.unwrap_or(53)))
}

/// `server NAME resolve [service=NAME]`: what the resolver is asked at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolveSpec {
    pub host: String,
    /// The port of every address (`service=`: each SRV record's own).
    pub port: u16,
    /// `service=NAME`: SRV records of `_NAME._tcp.HOST` (or of `NAME.HOST` when the name
    /// starts with `_`), as nginx 1.27.3.
    pub service: Option<String>,
}

impl ResolveSpec {
    /// The name asked: the host, or the SRV name of `service=`.
    pub fn query_name(&self) -> String {
        match &self.service {
            None => self.host.clone(),
            Some(s) if s.starts_with('_') => format!("{s}.{}", self.host),
            Some(s) => format!("_{s}._tcp.{}", self.host),
        }
    }
}

/// The `resolve` / `service=` parameters of a `server` line: `Some(service)` when `resolve`
/// is written.
pub(crate) fn resolve_param(d: &Directive) -> Result<Option<Option<String>>, ConfigError> {
    let resolve = d.args.iter().skip(1).any(|a| a == "resolve");
    let service = d
        .args
        .iter()
        .skip(1)
        .find_map(|a| a.strip_prefix("service="));
    match (resolve, service) {
        (_, Some("")) => Err(err(d, "service is empty")),
        (false, Some(_)) => Err(err(
            d,
            format!(
                "service upstream \"{}\" requires \"resolve\" parameter",
                d.arg(0)
            ),
        )),
        (true, s) => Ok(Some(s.map(str::to_string))),
        (false, None) => Ok(None),
    }
}

/// The template of a `resolve` server with a host name (`None`: resolve as usual, for an
/// address or a line without `resolve`).
pub(crate) fn template(
    d: &Directive,
    hp: &crate::address::HostPort,
    spec: Option<Option<String>>,
) -> Result<Option<ResolveSpec>, ConfigError> {
    let Some(service) = spec else {
        return Ok(None);
    };
    let literal = hp.host.parse::<std::net::IpAddr>().is_ok();
    if service.is_some() && hp.port.is_some() {
        let msg = format!("service upstream \"{}\" may not have port", d.arg(0));
        return Err(err(d, msg));
    }
    if service.is_some() && literal {
        let msg = format!("service upstream \"{}\" requires domain name", d.arg(0));
        return Err(err(d, msg));
    }
    if literal {
        return Ok(None);
    }
    Ok(Some(ResolveSpec {
        host: hp.host.clone(),
        port: hp.port.unwrap_or(80),
        service,
    }))
}

/// After the http block is read: each upstream with a `resolve` server gets its resolver
/// (its own, else the http block's) or nginx's errors; the others keep none.
pub(crate) fn finish_upstreams(
    ups: &mut [crate::model::Upstream],
    http: &ResolverLevel,
) -> Result<(), ConfigError> {
    let http = http.finish();
    for u in ups.iter_mut() {
        let own = u.resolver.take().unwrap_or_default();
        if !u.servers.iter().any(|s| s.resolve.is_some()) {
            continue;
        }
        let at = format!(
            "upstream \"{}\" in {}:{}",
            u.name,
            u.origin.file.display(),
            u.origin.line
        );
        if u.zone.is_none() {
            let msg = format!("resolving names at run time requires {at} to be in shared memory");
            return Err(ConfigError::new(msg));
        }
        let resolver = own.resolver.or(http.resolver.clone());
        if resolver.is_none() {
            let msg = format!("no resolver defined to resolve names at run time in {at}");
            return Err(ConfigError::new(msg));
        }
        let timeout = match own.timeout {
            Duration::ZERO => http.timeout,
            t => t,
        };
        u.resolver = Some(ResolverSettings { resolver, timeout });
    }
    Ok(())
}
