//! `server { listen ...; server_name ...; location ... }` inside `http`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::address::{listen_addrs, AddrError};
use crate::build::Env;
use crate::directives::{for_each, unhandled, SERVER};
use crate::error::ConfigError;
use crate::handlers::{apply, Scope};
use crate::host::Host;
use crate::location::{check_duplicates, location_block, LocRaw};
use crate::model::{KeepAlive, Listen, LogFormat, Origin, SocketOptions};
use crate::settings::Level;
use crate::tree::Directive;
use crate::units::parse_number;
use crate::values::err;

/// nginx's default `backlog` on Linux.
pub(crate) const DEFAULT_BACKLOG: i32 = 511;

/// One `listen` address; `sockopts` when it sets socket options (nginx lets only one server
/// per address do that).
#[derive(Debug, Clone)]
pub(crate) struct ListenRaw {
    pub listen: Listen,
    pub sockopts: bool,
    pub origin: Origin,
}

/// A server block as written, before inheritance.
#[derive(Debug, Clone)]
pub(crate) struct ServerRaw {
    pub settings: Level,
    pub listens: Vec<ListenRaw>,
    pub names: Vec<String>,
    pub locations: Vec<LocRaw>,
    pub origin: Origin,
}

/// Listen parameters that would change behaviour ringfront does not have yet.
const NOT_YET: &[&str] = &["quic", "spdy", "accept_filter", "setfib"];

/// `listen ADDR[:PORT]|PORT [default_server] [reuseport] [backlog=N]`; one entry per
/// address a host name resolves to.
fn listen(d: &Directive, host: &dyn Host) -> Result<Vec<ListenRaw>, ConfigError> {
    let text = d.arg(0);
    let unix = unix_path(text);
    let addrs = match &unix {
        Some(Ok(path)) => Ok(vec![crate::unix_addr::listen_key(path)]),
        Some(Err(e)) => Err(*e),
        None => listen_addrs(text, host),
    }
    .map_err(|e| {
        err(
            d,
            format!("{} in \"{text}\" of the \"listen\" directive", e.as_str()),
        )
    })?;
    let unix = unix.and_then(Result::ok);
    let mut default_server = false;
    let mut reuseport = false;
    let mut backlog = DEFAULT_BACKLOG;
    let mut sockopts = false;
    let mut ssl = false;
    let mut proxy_protocol = false;
    let mut http2 = false;
    let mut options = SocketOptions::default();
    for param in d.args.iter().skip(1) {
        let key = param.split_once('=').map_or(param.as_str(), |(k, _)| k);
        match param.as_str() {
            "default_server" | "default" => default_server = true,
            "ssl" => ssl = true,
            "proxy_protocol" => proxy_protocol = true,
            "http2" => http2 = true,
            "reuseport" => {
                reuseport = true;
                sockopts = true;
            }
            // ringfront binds every address it listens on, and defers nothing.
            "bind" | "deferred" => sockopts = true,
            p if p.starts_with("ipv6only=o") => {
                options.ipv6only = Some(match &p[10..] {
                    "n" => true,
                    "ff" => false,
                    _ => {
                        let flags = &p[9..];
                        return Err(err(d, format!("invalid ipv6only flags \"{flags}\"")));
                    }
                });
                sockopts = true;
            }
            p if p.starts_with("fastopen=") => {
                let n = parse_number(&p[9..])
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| err(d, format!("invalid fastopen \"{p}\"")))?;
                options.fastopen = Some(n);
                sockopts = true;
            }
            p if p.starts_with("backlog=") => {
                let v = &p["backlog=".len()..];
                backlog = parse_number(v)
                    .and_then(|n| i32::try_from(n).ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| err(d, format!("invalid backlog \"{p}\"")))?;
                sockopts = true;
            }
            p if matches!(key, "rcvbuf" | "sndbuf" | "so_keepalive") => {
                socket_option(d, p, &mut options)?;
                sockopts = true;
            }
            p if NOT_YET.contains(&p) || NOT_YET.contains(&key) => {
                return Err(err(
                    d,
                    format!("\"{key}\" parameter of the \"listen\" directive is not supported yet"),
                ));
            }
            p => return Err(err(d, format!("invalid parameter \"{p}\""))),
        }
    }
    if ssl && unix.is_some() {
        let msg = "\"ssl\" parameter of the \"listen\" directive is not supported yet on unix:";
        return Err(err(d, msg.to_string()));
    }
    Ok(addrs
        .into_iter()
        .map(|addr| ListenRaw {
            listen: Listen {
                addr,
                default_server,
                reuseport,
                backlog,
                options,
                ssl,
                proxy_protocol,
                http2,
                unix: unix.clone(),
            },
            sockopts,
            origin: d.origin.clone(),
        })
        .collect())
}

/// `unix:PATH` (`None` for any other address), as nginx's `ngx_parse_unix_domain_url`:
/// a path that fits `sun_path` with its final NUL.
fn unix_path(text: &str) -> Option<Result<std::path::PathBuf, AddrError>> {
    let prefix = text.get(..5).filter(|p| p.eq_ignore_ascii_case("unix:"))?;
    let path = &text[prefix.len()..];
    Some(match path.len() {
        0 => Err(AddrError::NoPath),
        n if n >= 108 => Err(AddrError::LongPath),
        _ => Ok(path.into()),
    })
}

/// `rcvbuf=SIZE`, `sndbuf=SIZE`, `so_keepalive=on|off|[idle]:[interval]:[count]` (nginx's
/// words for a bad value).
fn socket_option(d: &Directive, p: &str, o: &mut SocketOptions) -> Result<(), ConfigError> {
    let (key, v) = p.split_once('=').unwrap_or((p, ""));
    match key {
        "rcvbuf" | "sndbuf" => {
            let size = crate::units::parse_size(v)
                .ok_or_else(|| err(d, format!("invalid {key} \"{v}\"")))?;
            if key == "rcvbuf" {
                o.rcvbuf = Some(size);
            } else {
                o.sndbuf = Some(size);
            }
        }
        _ => {
            o.keepalive = Some(
                keepalive(v)
                    .ok_or_else(|| err(d, format!("invalid so_keepalive value: \"{v}\"")))?,
            )
        }
    }
    Ok(())
}

fn keepalive(v: &str) -> Option<KeepAlive> {
    match v {
        "on" => return Some(KeepAlive::On),
        "off" => return Some(KeepAlive::Off),
        _ => {}
    }
    let mut parts = v.split(':');
    let (idle, interval, count) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let secs = |s: &str| -> Option<Option<Duration>> {
        if s.is_empty() {
            return Some(None);
        }
        let t = crate::units::parse_time_mode(s, crate::units::TimeMode::Sec)?;
        (!t.is_zero()).then_some(Some(t))
    };
    let count = if count.is_empty() {
        None
    } else {
        Some(count.parse::<u32>().ok().filter(|&n| n > 0)?)
    };
    let tuned = KeepAlive::Tuned {
        idle: secs(idle)?,
        interval: secs(interval)?,
        count,
    };
    (tuned
        != KeepAlive::Tuned {
            idle: None,
            interval: None,
            count: None,
        })
    .then_some(tuned)
}

/// Reads a `server` block of `http`.
pub(crate) fn server_block(
    d: &Directive,
    env: &Env<'_>,
    formats: &[LogFormat],
) -> Result<ServerRaw, ConfigError> {
    let scope = Scope {
        prefix: env.prefix,
        formats,
        regex_location: false,
        location: false,
        alias_len: None,
        host: env.host,
    };
    let mut settings = Level::default();
    let mut listens = Vec::new();
    let mut names = Vec::new();
    let mut locations = Vec::new();
    for_each(d.children(), SERVER, |c| {
        match c.name.as_str() {
            "listen" => listens.extend(listen(c, env.host)?),
            // nginx matches server names case-insensitively and stores them lower-cased;
            // a regex is kept as written (`\D` is not `\d`) and compiled case-insensitive.
            "server_name" => names.extend(c.args.iter().map(|n| {
                if n.starts_with('~') {
                    n.clone()
                } else {
                    n.to_ascii_lowercase()
                }
            })),
            "location" => locations.push(location_block(c, None, env, formats)?),
            _ if apply(&mut settings, c, &scope)? => {}
            _ => return Err(unhandled(c)),
        }
        Ok(())
    })?;
    check_duplicates(&locations)?;
    if listens.is_empty() {
        // nginx (run as root) listens on *:80 when a server has no `listen`.
        listens.push(ListenRaw {
            listen: Listen {
                addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 80),
                default_server: false,
                reuseport: false,
                backlog: DEFAULT_BACKLOG,
                options: SocketOptions::default(),
                ssl: false,
                proxy_protocol: false,
                http2: false,
                unix: None,
            },
            sockopts: false,
            origin: d.origin.clone(),
        });
    }
    Ok(ServerRaw {
        settings,
        listens,
        names,
        locations,
        origin: d.origin.clone(),
    })
}
