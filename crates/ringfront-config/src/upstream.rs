//! `upstream NAME { server ADDR [weight=N] [max_fails=N] [fail_timeout=T] [backup] [down];
//! keepalive N; keepalive_timeout T; keepalive_requests N; }`, host names resolved as nginx
//! does when it reads the `server` line.

use std::time::Duration;

use crate::address::{resolve, split_host_port, Resolver};
use crate::directives::{for_each, unhandled, UPSTREAM};
use crate::error::ConfigError;
use crate::model::{Upstream, UpstreamServer};
use crate::tree::Directive;
use crate::units::{parse_number, parse_time_mode, TimeMode};
use crate::values::{err, msec, number, set_once};

/// ringfront keeps idle upstream connections by default (nginx needs `keepalive N`).
pub(crate) const DEFAULT_KEEPALIVE: usize = 32;
pub(crate) const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const DEFAULT_KEEPALIVE_REQUESTS: u64 = 1000;
pub(crate) const DEFAULT_FAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads an `upstream` block.
pub(crate) fn upstream_block(
    d: &Directive,
    resolver: Resolver<'_>,
) -> Result<Upstream, ConfigError> {
    let mut servers = Vec::new();
    let mut keepalive = None;
    let mut keepalive_timeout = None;
    let mut keepalive_requests = None;
    for_each(d.children(), UPSTREAM, |c| {
        let arg = c.arg(0);
        match c.name.as_str() {
            "server" => servers.push(server(c, resolver)?),
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
            _ => return Err(unhandled(c)),
        }
        Ok(())
    })?;
    if servers.is_empty() {
        return Err(ConfigError::at("no servers are inside upstream", &d.end()));
    }
    Ok(Upstream {
        name: d.arg(0).to_string(),
        servers,
        keepalive: keepalive.unwrap_or(DEFAULT_KEEPALIVE),
        keepalive_timeout: keepalive_timeout.unwrap_or(DEFAULT_KEEPALIVE_TIMEOUT),
        keepalive_requests: keepalive_requests.unwrap_or(DEFAULT_KEEPALIVE_REQUESTS),
        implicit: false,
        origin: d.origin.clone(),
    })
}

/// nginx Plus and later-issue parameters: refused until implemented.
const NOT_YET: &[&str] = &[
    "max_conns",
    "slow_start",
    "resolve",
    "service",
    "route",
    "drain",
];

/// `server ADDR [params]`; the address defaults to port 80.
fn server(d: &Directive, resolver: Resolver<'_>) -> Result<UpstreamServer, ConfigError> {
    let text = d.arg(0);
    let addr_err =
        |e: crate::address::AddrError| err(d, format!("{} in upstream \"{text}\"", e.as_str()));
    let hp = split_host_port(text).map_err(addr_err)?;
    let addrs = resolve(&hp.host, hp.port.unwrap_or(80), resolver).map_err(addr_err)?;
    let mut s = UpstreamServer {
        text: text.to_string(),
        addrs,
        weight: 1,
        max_fails: 1,
        fail_timeout: DEFAULT_FAIL_TIMEOUT,
        backup: false,
        down: false,
        origin: d.origin.clone(),
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
            ("backup", None) => s.backup = true,
            ("down", None) => s.down = true,
            (k, _) if NOT_YET.contains(&k) => {
                return Err(err(d, format!("\"{k}\" parameter is not supported yet")));
            }
            _ => return Err(invalid()),
        }
    }
    Ok(s)
}
