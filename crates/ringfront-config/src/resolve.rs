//! After the whole file is read: `proxy_pass` targets looked up (an upstream defined later
//! works, an unknown `host[:port]` becomes an implicit upstream as in nginx), settings merged
//! http -> server -> location, and `listen` addresses checked across servers.

use std::net::SocketAddr;

use crate::address::resolve;
use crate::build::Env;
use crate::error::ConfigError;
use crate::http::HttpRaw;
use crate::location::{LocRaw, OwnRaw};
use crate::model::{
    AllFailed, Balancer, Expect, HttpConf, Listen, Location, LocationSettings, Match,
    PassiveHealth, ProxyPass, ProxyTarget, Server, Upstream,
};
use crate::server::{ListenRaw, ServerRaw};
use crate::settings::{Level, PassRaw};
use crate::upstream::{
    check_primary, default_server, DEFAULT_KEEPALIVE, DEFAULT_KEEPALIVE_REQUESTS,
    DEFAULT_KEEPALIVE_TIME, DEFAULT_KEEPALIVE_TIMEOUT,
};

/// Upstream groups by name: the explicit blocks, then implicit ones in order of first use.
struct Targets<'e> {
    explicit: Vec<Upstream>,
    implicit: Vec<Upstream>,
    /// (lower-cased host, port) of each implicit upstream, which nginx shares between every
    /// `proxy_pass` naming the same address.
    implicit_keys: Vec<(String, u16)>,
    /// `match` blocks by name, for `health_check match=NAME`.
    matches: Vec<Match>,
    env: &'e Env<'e>,
}

impl Targets<'_> {
    fn target(&mut self, p: &PassRaw) -> Result<ProxyPass, ConfigError> {
        let at = |message: String| ConfigError::at(message, &p.origin);
        if let Some(t) = &p.vars {
            return Ok(ProxyPass {
                target: ProxyTarget::Variables(t.clone()),
                uri: None,
                tls: p.tls,
            });
        }
        let uri = p.uri.clone();
        if let Some(path) = crate::upstream::unix_path(&p.authority) {
            return self.unix_target(p, path, uri);
        }
        if let Some(u) = self
            .explicit
            .iter()
            .find(|u| u.name.eq_ignore_ascii_case(&p.host))
        {
            if let Some(port) = p.port {
                return Err(at(format!(
                    "upstream \"{}\" may not have port {port}",
                    u.name
                )));
            }
            return Ok(ProxyPass {
                target: ProxyTarget::Upstream(u.name.clone()),
                uri,
                tls: p.tls,
            });
        }
        let port = p.port.unwrap_or(if p.tls { 443 } else { 80 });
        let key = (p.host.to_ascii_lowercase(), port);
        if let Some(i) = self.implicit_keys.iter().position(|k| *k == key) {
            let name = self
                .implicit
                .get(i)
                .map(|u| u.name.clone())
                .unwrap_or_default();
            return Ok(ProxyPass {
                target: ProxyTarget::Upstream(name),
                uri,
                tls: p.tls,
            });
        }
        if self
            .explicit
            .iter()
            .chain(&self.implicit)
            .any(|u| u.name.eq_ignore_ascii_case(&p.authority))
        {
            return Err(at(format!("duplicate upstream \"{}\"", p.authority)));
        }
        // nginx resolves implicit upstreams when it initialises them and names the host only.
        let addrs = resolve(&p.host, port, self.env.host)
            .map_err(|e| at(format!("{} in upstream \"{}\"", e.as_str(), p.host)))?;
        self.implicit_keys.push(key);
        self.implicit.push(Upstream {
            name: p.authority.clone(),
            servers: vec![default_server(&p.authority, addrs, &p.origin)],
            keepalive: DEFAULT_KEEPALIVE,
            keepalive_timeout: DEFAULT_KEEPALIVE_TIMEOUT,
            keepalive_requests: DEFAULT_KEEPALIVE_REQUESTS,
            keepalive_time: DEFAULT_KEEPALIVE_TIME,
            implicit: true,
            state: None,
            implicit_tls: p.tls,
            origin: p.origin.clone(),
            balancer: Balancer::RoundRobin,
            zone: None,
            all_failed: AllFailed::Reject,
            passive_health: PassiveHealth::Nginx,
            checks: Vec::new(),
            sticky: None,
            resolver: None,
        });
        Ok(ProxyPass {
            target: ProxyTarget::Upstream(p.authority.clone()),
            uri,
            tls: p.tls,
        })
    }

    /// `proxy_pass http://unix:PATH[:URI]`: the implicit group of that socket, shared by
    /// every `proxy_pass` naming it (nginx's host is the path, its port 0).
    fn unix_target(
        &mut self,
        p: &PassRaw,
        path: &str,
        uri: Option<String>,
    ) -> Result<ProxyPass, ConfigError> {
        let key = (path.to_string(), 0);
        if !self.implicit_keys.contains(&key) {
            let server =
                crate::upstream::unix_server(&p.authority, path, &p.origin).map_err(|e| {
                    ConfigError::at(
                        format!("{} in upstream \"{}\"", e.as_str(), p.authority),
                        &p.origin,
                    )
                })?;
            self.implicit_keys.push(key);
            self.implicit.push(Upstream {
                name: p.authority.clone(),
                servers: vec![server],
                keepalive: DEFAULT_KEEPALIVE,
                keepalive_timeout: DEFAULT_KEEPALIVE_TIMEOUT,
                keepalive_requests: DEFAULT_KEEPALIVE_REQUESTS,
                keepalive_time: DEFAULT_KEEPALIVE_TIME,
                implicit: true,
                state: None,
                implicit_tls: false,
                origin: p.origin.clone(),
                balancer: Balancer::RoundRobin,
                zone: None,
                all_failed: AllFailed::Reject,
                passive_health: PassiveHealth::Nginx,
                checks: Vec::new(),
                sticky: None,
                resolver: None,
            });
        }
        let name = self
            .implicit
            .iter()
            .find(|u| crate::upstream::unix_path(&u.name) == Some(path))
            .map(|u| u.name.clone())
            .unwrap_or_default();
        Ok(ProxyPass {
            target: ProxyTarget::Upstream(name),
            uri,
            tls: false,
        })
    }

    /// A location with everything inherited from `outer` (its enclosing location, server and
    /// http levels, already merged). Nested locations recurse through here: the frame keeps
    /// only boxes, the work is in `merged_level` and `finish_location`.
    fn location(&mut self, loc: &LocRaw, outer: &Level) -> Result<Location, ConfigError> {
        let merged = merged_level(loc, outer);
        let mut nested = Vec::with_capacity(loc.locations.len());
        for inner in &loc.locations {
            nested.push(self.location(inner, &merged)?);
        }
        self.finish_location(loc, merged, nested)
    }

    #[inline(never)]
    fn finish_location(
        &mut self,
        loc: &LocRaw,
        merged: Box<Level>,
        nested: Vec<Location>,
    ) -> Result<Location, ConfigError> {
        let proxy_pass = match &loc.settings.proxy_pass {
            Some(p) => Some(self.target(p)?),
            None => None,
        };
        let mut if_settings = Vec::with_capacity(merged.if_levels.len());
        for il in &merged.if_levels {
            // nginx's `if` inherits the location's `proxy_pass` unless it has its own.
            let pass = match &il.proxy_pass {
                Some(p) => Some(self.target(p)?),
                None => proxy_pass.clone(),
            };
            let mut level = il.inherit(&merged);
            // An `if` with its own `proxy_pass` gets its `proxy_redirect default` too.
            crate::proxy_headers::settle(&mut level, &loc.matcher);
            if_settings.push(level.finish(self.env.prefix, pass)?);
        }
        let limit_except = match &merged.limit_except {
            Some(l) => {
                let pass = match &l.level.proxy_pass {
                    Some(p) => Some(self.target(p)?),
                    None => proxy_pass.clone(),
                };
                let settings = l.level.inherit(&merged).finish(self.env.prefix, pass)?;
                Some(Box::new(crate::model::LimitExcept {
                    methods: l.methods.clone(),
                    settings,
                }))
            }
            None => None,
        };
        let mut settings = merged.finish(self.env.prefix, proxy_pass)?;
        settings.if_settings = if_settings;
        settings.limit_except = limit_except;
        check_handlers(loc)?;
        self.attach_checks(&loc.own, &settings)?;
        settings.check_status = loc.own.check_status.as_ref().map(|(f, _)| *f);
        settings.api = loc.own.api.is_some();
        settings.api_write = loc.own.api_write;
        settings.stub_status = loc.own.stub_status.is_some();
        settings.internal = loc.own.internal.is_some();
        Ok(Location {
            matcher: loc.matcher.clone(),
            settings,
            locations: nested,
            origin: loc.origin.clone(),
        })
    }

    /// Every `health_check` of a location becomes a check of the group its `proxy_pass`
    /// names, with the location's proxy timeouts.
    fn attach_checks(
        &mut self,
        own: &OwnRaw,
        settings: &LocationSettings,
    ) -> Result<(), ConfigError> {
        for hc in &own.health_checks {
            let Some(pass) = &settings.proxy_pass else {
                return Err(ConfigError::at(
                    "\"health_check\" requires \"proxy_pass\" in the same location",
                    &hc.origin,
                ));
            };
            let expect = match &hc.match_name {
                None => Expect::Default,
                Some(name) => match self.matches.iter().find(|m| m.name == *name) {
                    Some(m) => Expect::Match(m.clone()),
                    None => {
                        return Err(ConfigError::at(
                            format!("match \"{name}\" not found"),
                            &hc.origin,
                        ));
                    }
                },
            };
            let mut check = hc.to_check(
                expect,
                settings.proxy_connect_timeout,
                settings.proxy_read_timeout,
            );
            // nginx Plus probes a TLS upstream with its location's proxy_ssl_* settings.
            check.tls = pass.tls.then(|| settings.proxy_ssl.clone());
            let ProxyTarget::Upstream(name) = &pass.target else {
                return Err(ConfigError::at(
                    "\"health_check\" with variables in \"proxy_pass\" is not supported by ringfront",
                    &hc.origin,
                ));
            };
            let group = self
                .explicit
                .iter_mut()
                .chain(self.implicit.iter_mut())
                .find(|u| u.name == *name);
            match group {
                Some(u) if u.servers.iter().any(|s| s.unix.is_some()) => {
                    return Err(ConfigError::at(crate::upstream::UNIX_CHECKS, &hc.origin));
                }
                Some(u) => u.checks.push(check),
                None => {
                    return Err(ConfigError::at(
                        format!(
                            "internal error: upstream \"{name}\" of \"health_check\" is missing"
                        ),
                        &hc.origin,
                    ));
                }
            }
        }
        Ok(())
    }

    fn server(&mut self, s: &ServerRaw, http: &Level) -> Result<Server, ConfigError> {
        let merged = s.settings.inherit(http);
        let mut locations = Vec::with_capacity(s.locations.len());
        for loc in &s.locations {
            locations.push(self.location(loc, &merged)?);
        }
        // The deprecated `ssl on` makes every address of the server a TLS one.
        let all_ssl = s.settings.ssl.enable == Some(true);
        if let Some(l) = s
            .listens
            .iter()
            .find(|l| all_ssl && l.listen.unix.is_some())
        {
            let msg = "\"ssl\" parameter of the \"listen\" directive is not supported yet on unix:";
            return Err(ConfigError::at(msg, &l.origin));
        }
        let ssl = merged.ssl.clone().finish()?;
        Ok(Server {
            listens: s
                .listens
                .iter()
                .map(|l| Listen {
                    ssl: l.listen.ssl || all_ssl,
                    ..l.listen.clone()
                })
                .collect(),
            server_names: s.names.clone(),
            locations,
            settings: merged.finish(self.env.prefix, None)?,
            ssl,
            origin: s.origin.clone(),
        })
    }
}

/// `check_status` and `api` answer every request of their location themselves, so they may
/// not share it with `proxy_pass`, `return` or each other (nginx has one content handler per
/// location; ringfront refuses what would be silently overridden).
fn check_handlers(loc: &LocRaw) -> Result<(), ConfigError> {
    let own = &loc.own;
    let pages = [
        ("check_status", own.check_status.as_ref().map(|(_, o)| o)),
        ("api", own.api.as_ref()),
        ("stub_status", own.stub_status.as_ref()),
    ];
    for (page, origin) in pages {
        let Some(origin) = origin else { continue };
        let other = if loc.settings.proxy_pass.is_some() {
            "proxy_pass"
        } else if loc
            .settings
            .rewrite
            .iter()
            .any(|op| matches!(op, crate::rewrite_model::RewriteOp::Return(_)))
        {
            "return"
        } else if page != "check_status" && own.check_status.is_some() {
            "check_status"
        } else if page == "stub_status" && own.api.is_some() {
            "api"
        } else {
            continue;
        };
        return Err(ConfigError::at(
            format!(
                "\"{page}\" and \"{other}\" cannot be in the same location: \
                 only one of them can answer its requests"
            ),
            origin,
        ));
    }
    Ok(())
}

/// nginx's checks when it adds listen addresses: one `default_server` per address, one
/// server setting socket options per address, and no address twice in one server.
fn check_listens(servers: &[ServerRaw]) -> Result<(), ConfigError> {
    let mut seen: Vec<(SocketAddr, usize, &ListenRaw)> = Vec::new();
    for (index, server) in servers.iter().enumerate() {
        for l in &server.listens {
            let addr = l.listen.addr;
            let name = l.listen.name();
            for (_, other_server, other) in seen.iter().filter(|(a, _, _)| *a == addr) {
                let message = if *other_server == index {
                    format!("a duplicate listen {name}")
                } else if l.listen.default_server && other.listen.default_server {
                    format!("a duplicate default server for {name}")
                } else if l.sockopts && other.sockopts {
                    format!("duplicate listen options for {name}")
                } else {
                    continue;
                };
                return Err(ConfigError::at(message, &l.origin));
            }
            seen.push((addr, index, l));
        }
    }
    check_http2(servers)
}

/// `listen ... http2` is accepted only on an address that speaks TLS (`ssl` on one of its
/// `listen`s, or the deprecated `ssl on`): clients there negotiate HTTP/1.1 through ALPN.
/// Without TLS nginx would speak HTTP/2 with prior knowledge only, which no HTTP/1.1 client
/// can talk to, so it stays an error.
fn check_http2(servers: &[ServerRaw]) -> Result<(), ConfigError> {
    let tls = |addr: SocketAddr| {
        servers.iter().any(|s| {
            let all = s.settings.ssl.enable == Some(true);
            s.listens
                .iter()
                .any(|l| l.listen.addr == addr && (all || l.listen.ssl))
        })
    };
    let plain = servers
        .iter()
        .flat_map(|s| &s.listens)
        .find(|l| l.listen.http2 && !tls(l.listen.addr));
    match plain {
        Some(l) => Err(ConfigError::at(
            "\"http2\" parameter of the \"listen\" directive without \"ssl\" is not \
             supported by ringfront (HTTP/2 with prior knowledge only; ringfront speaks HTTP/1.1)",
            &l.origin,
        )),
        None => Ok(()),
    }
}

/// `proxy_protocol` belongs to the address as `ssl` does (nginx ORs it over the address's
/// `listen`s).
fn proxy_protocol_addresses(servers: &mut [Server]) {
    let on: Vec<SocketAddr> = servers
        .iter()
        .flat_map(|s| {
            s.listens
                .iter()
                .filter(|l| l.proxy_protocol)
                .map(|l| l.addr)
        })
        .collect();
    for l in servers.iter_mut().flat_map(|s| s.listens.iter_mut()) {
        l.proxy_protocol |= on.contains(&l.addr);
    }
}

/// nginx's `ssl` flag belongs to the address: one `listen ... ssl` makes every server's
/// connections to that address TLS. The address's default server must then have a
/// certificate, or `ssl_reject_handshake on` (reported at its `server` line, as nginx).
fn tls_addresses(servers: &mut [Server]) -> Result<(), ConfigError> {
    let tls: Vec<SocketAddr> = servers
        .iter()
        .flat_map(|s| s.listens.iter().filter(|l| l.ssl).map(|l| l.addr))
        .collect();
    proxy_protocol_addresses(servers);
    for addr in &tls {
        for l in servers.iter_mut().flat_map(|s| s.listens.iter_mut()) {
            l.ssl |= l.addr == *addr;
        }
        let on = |s: &&Server, default: bool| {
            s.listens
                .iter()
                .any(|l| l.addr == *addr && (l.default_server || !default))
        };
        let default = servers
            .iter()
            .find(|s| on(s, true))
            .or_else(|| servers.iter().find(|s| on(s, false)));
        if let Some(s) = default {
            if s.ssl.certificates.is_empty() && !s.ssl.reject_handshake {
                return Err(ConfigError::at(
                    "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive",
                    &s.origin,
                ));
            }
        }
    }
    Ok(())
}

/// Turns the http block as written into the model the proxy uses.
pub(crate) fn finish_http(raw: HttpRaw, env: &Env<'_>) -> Result<HttpConf, ConfigError> {
    for u in &raw.upstreams {
        check_primary(u)?;
    }
    let mut targets = Targets {
        explicit: raw.upstreams,
        implicit: Vec::new(),
        implicit_keys: Vec::new(),
        matches: raw.matches,
        env,
    };
    let mut servers = Vec::with_capacity(raw.servers.len());
    for s in &raw.servers {
        servers.push(targets.server(s, &raw.settings)?);
    }
    check_listens(&raw.servers)?;
    tls_addresses(&mut servers)?;
    let mut upstreams = targets.explicit;
    upstreams.extend(targets.implicit);
    Ok(HttpConf {
        upstreams,
        servers,
        maps: raw.maps,
        splits: raw.splits,
        geos: raw.geos,
        log_formats: raw.log_formats,
        variables: raw.variables,
        variable_set: raw.variable_set,
        captures: raw.captures,
        uses: raw.uses,
        limit_zones: raw.limit_zones,
    })
}

/// The location's own settings over `outer`'s, `proxy_redirect default` settled.
#[inline(never)]
fn merged_level(loc: &LocRaw, outer: &Level) -> Box<Level> {
    let mut merged = Box::new(loc.settings.inherit(outer));
    crate::proxy_headers::settle(&mut merged, &loc.matcher);
    merged
}
