//! The location-level directives (also valid at http and server level): each one read into
//! the [`Level`] being built, with nginx's checks and messages.

use std::path::Path;

use crate::address::split_host_port;
use crate::error::ConfigError;
use crate::logs;
use crate::model::{AccessRule, BindTo, LogFormat, NextUpstream, ProxyBind, TemplatePart};
use crate::settings::{Level, PassRaw};
use crate::tree::Directive;
use crate::units::parse_number;
use crate::values::{err, flag, msec, number, sec, set_once, size, template};

/// What the handlers need to know about where they are.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// The main configuration file's folder.
    pub prefix: &'a Path,
    /// `log_format`s defined so far (nginx needs them defined before `access_log` uses them).
    pub formats: &'a [LogFormat],
    /// Inside a regex location, where `proxy_pass` may not have a URI part.
    pub regex_location: bool,
    /// Inside a location (not `http` or `server`).
    pub location: bool,
    /// The length of the location's prefix, which `alias` replaces (`None` outside a
    /// location and in a regex one).
    pub alias_len: Option<usize>,
    /// The loader's resolver (`set_real_ip_from HOST`).
    pub host: &'a dyn crate::host::Host,
}

/// Reads `d` into `level` if it is a location-level directive; `Ok(false)` if it is not one.
pub(crate) fn apply(
    level: &mut Level,
    d: &Directive,
    scope: &Scope<'_>,
) -> Result<bool, ConfigError> {
    let arg = d.arg(0);
    match d.name.as_str() {
        "proxy_pass" => set_once(&mut level.proxy_pass, proxy_pass(d, scope)?, d)?,
        "proxy_set_header" => {
            let value = template(d, d.arg(1))?;
            let headers = level.proxy_set_header.get_or_insert_with(Vec::new);
            headers.push((arg.to_string(), value));
        }
        "proxy_method" => set_once(&mut level.proxy_method, template(d, arg)?, d)?,
        "proxy_bind" => set_once(&mut level.proxy_bind, proxy_bind(d)?, d)?,
        "proxy_pass_request_headers" => {
            set_once(&mut level.proxy_pass_request_headers, flag(d)?, d)?
        }
        "proxy_pass_request_body" => set_once(&mut level.proxy_pass_request_body, flag(d)?, d)?,
        "proxy_ignore_client_abort" => set_once(&mut level.proxy_ignore_client_abort, flag(d)?, d)?,
        "proxy_set_body" => set_once(&mut level.proxy_set_body, template(d, arg)?, d)?,
        "proxy_http_version" => {
            if !matches!(arg, "1.0" | "1.1") {
                return Err(err(d, format!("invalid value \"{arg}\"")));
            }
            set_once(&mut level.proxy_http_version, arg.to_string(), d)?;
        }
        "proxy_connect_timeout" => set_once(&mut level.proxy_connect_timeout, msec(d, arg)?, d)?,
        "proxy_read_timeout" => set_once(&mut level.proxy_read_timeout, msec(d, arg)?, d)?,
        "proxy_send_timeout" => set_once(&mut level.proxy_send_timeout, msec(d, arg)?, d)?,
        "proxy_next_upstream" => next_upstream(level, d)?,
        "proxy_next_upstream_tries" => {
            set_once(&mut level.proxy_next_upstream_tries, number(d, arg)?, d)?;
        }
        "proxy_next_upstream_budget" => set_once(
            &mut level.proxy_next_upstream_budget,
            crate::retry_budget::retry_budget(d)?,
            d,
        )?,
        "proxy_next_upstream_timeout" => {
            set_once(&mut level.proxy_next_upstream_timeout, msec(d, arg)?, d)?;
        }
        "access_log" => logs::access_log(level, d, scope)?,
        // Only the main level's error_log is used; below it the directive is checked and
        // ignored (ringfront has one error log).
        "error_log" => {
            logs::error_log(d, scope.prefix)?;
        }
        "keepalive_timeout" => {
            let timeout = msec(d, arg)?;
            set_once(&mut level.keepalive_timeout, timeout, d)?;
            if d.args.len() == 2 {
                level.keepalive_header = Some(sec(d, d.arg(1))?.as_secs());
            }
        }
        "keepalive_requests" => set_once(&mut level.keepalive_requests, number(d, arg)?, d)?,
        "keepalive_disable" => {
            let set = level.keepalive_disable.unwrap_or_default();
            level.keepalive_disable = Some(keepalive_disable(d, set)?);
        }
        "keepalive_time" => set_once(&mut level.keepalive_time, msec(d, arg)?, d)?,
        "client_max_body_size" => set_once(&mut level.client_max_body_size, size(d, arg)?, d)?,
        "client_header_timeout" => set_once(&mut level.client_header_timeout, msec(d, arg)?, d)?,
        "client_body_timeout" => set_once(&mut level.client_body_timeout, msec(d, arg)?, d)?,
        "send_timeout" => set_once(&mut level.send_timeout, msec(d, arg)?, d)?,
        "large_client_header_buffers" => {
            let invalid = || crate::values::directive_err(d, "invalid value");
            let count = parse_number(arg)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0);
            let bytes = crate::units::parse_size(d.arg(1))
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0);
            let value = (count.ok_or_else(invalid)?, bytes.ok_or_else(invalid)?);
            set_once(&mut level.large_client_header_buffers, value, d)?;
        }
        "allow" | "deny" => {
            let rules = level.access_rules.get_or_insert_with(Vec::new);
            rules.push(access_rule(d)?);
        }
        "add_header" | "add_trailer" => crate::response_headers::add_header(level, d)?,
        "chunked_transfer_encoding" => set_once(&mut level.chunked_transfer_encoding, flag(d)?, d)?,
        "underscores_in_headers" => set_once(&mut level.underscores_in_headers, flag(d)?, d)?,
        "ignore_invalid_headers" => set_once(&mut level.ignore_invalid_headers, flag(d)?, d)?,
        "max_headers" => set_once(&mut level.max_headers, number(d, arg)?, d)?,
        "merge_slashes" => set_once(&mut level.merge_slashes, flag(d)?, d)?,
        "proxy_socket_keepalive" => set_once(&mut level.proxy_socket_keepalive, flag(d)?, d)?,
        "lingering_close" => {
            let v = match arg {
                "off" => crate::model::LingeringClose::Off,
                "on" => crate::model::LingeringClose::On,
                "always" => crate::model::LingeringClose::Always,
                _ => return Err(crate::values::err(d, format!("invalid value \"{arg}\""))),
            };
            set_once(&mut level.lingering_close, v, d)?;
        }
        "lingering_time" => set_once(&mut level.lingering_time, msec(d, arg)?, d)?,
        "lingering_timeout" => set_once(&mut level.lingering_timeout, msec(d, arg)?, d)?,
        "server_tokens" => crate::response_headers::server_tokens(level, d)?,
        _ if crate::files::apply(level, d, scope.prefix, scope.alias_len)? => {}
        _ if crate::error_pages::apply(level, d)? => {}
        _ if crate::limit_rate::apply(level, d)? => {}
        _ if crate::limit_except::apply(level, d, scope)? => {}
        _ if crate::rewrite::apply(level, d, scope)? => {}
        _ if level.ssl.apply(d, scope.prefix)? => {}
        _ if level.proxy_ssl.apply(d, scope.prefix)? => {}
        _ if level.gzip.apply(d)? => {}
        _ if level.limits.apply(d)? => {}
        _ if level.realip.apply(d, scope.host)? => {}
        _ if level.access.apply(d, scope.prefix)? => {}
        _ if level.resolver.apply(d)? => {}
        _ if level.request_body.apply(d, scope.prefix)? => {}
        _ if crate::proxy_headers::apply(level, d)? => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// `allow | deny ADDRESS | CIDR | all` (nginx's access module).
fn access_rule(d: &Directive) -> Result<AccessRule, ConfigError> {
    let arg = d.arg(0);
    let allow = d.name == "allow";
    if arg == "all" || arg == "unix:" {
        let unix = arg == "unix:";
        return Ok(AccessRule {
            allow,
            net: None,
            unix,
        });
    }
    let net = crate::cidr::Cidr::parse(arg)
        .ok_or_else(|| err(d, format!("invalid parameter \"{arg}\"")))?;
    Ok(AccessRule {
        allow,
        net: Some(net),
        unix: false,
    })
}

/// `proxy_pass http://NAME[:PORT][/URI]`, or a URL with variables, which nginx checks only
/// when it evaluates it (no scheme check, a URI part allowed anywhere).
fn proxy_pass(d: &Directive, scope: &Scope<'_>) -> Result<PassRaw, ConfigError> {
    let url = d.arg(0);
    if url.contains('$') {
        let t = template(d, url)?;
        if t.parts.iter().any(|p| matches!(p, TemplatePart::Var(_))) {
            return Ok(PassRaw {
                host: String::new(),
                port: None,
                authority: String::new(),
                uri: None,
                tls: url
                    .get(..8)
                    .is_some_and(|s| s.eq_ignore_ascii_case("https://")),
                vars: Some(t),
                origin: d.origin.clone(),
            });
        }
    }
    let scheme = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let tls = scheme == "https://";
    let rest = if scheme.starts_with("http://") {
        url.get(7..).unwrap_or_default()
    } else if tls {
        url.get(8..).unwrap_or_default()
    } else {
        return Err(err(d, "invalid URL prefix"));
    };
    let (authority, uri) = split_authority(rest);
    let hp = match crate::upstream::unix_path(authority) {
        Some(path) if !path.is_empty() => {
            if tls {
                return Err(err(
                    d,
                    "\"proxy_pass https://unix:\" is not supported by ringfront",
                ));
            }
            crate::address::HostPort {
                host: path.to_string(),
                port: None,
            }
        }
        _ => split_host_port(authority)
            .map_err(|e| err(d, format!("{} in upstream \"{authority}\"", e.as_str())))?,
    };
    if uri.is_some() && scope.regex_location {
        return Err(err(
            d,
            "\"proxy_pass\" cannot have URI part in location given by regular expression, or \
             inside named location, or inside \"if\" statement, or inside \"limit_except\" block",
        ));
    }
    Ok(PassRaw {
        host: hp.host,
        port: hp.port,
        authority: authority.to_string(),
        uri,
        tls,
        vars: None,
        origin: d.origin.clone(),
    })
}

/// `HOST[:PORT][/URI]` -> (authority, URI); `unix:PATH[:URI]` splits at the first `:` after
/// the path's start, as nginx's `ngx_parse_unix_domain_url`.
fn split_authority(rest: &str) -> (&str, Option<String>) {
    if let Some(path) = crate::upstream::unix_path(rest) {
        return match path.find(':') {
            Some(i) => (&rest[..5 + i], Some(path[i + 1..].to_string())),
            None => (rest, None),
        };
    }
    match rest.find('/') {
        Some(i) => (&rest[..i], Some(rest[i..].to_string())),
        None => (rest, None),
    }
}

/// `proxy_bind ADDR[:PORT] [transparent] | off` (variables allowed); `transparent` sets
/// `IP_TRANSPARENT` (it needs `CAP_NET_ADMIN`, and routing set up by the operator, for a
/// non-local address).
fn proxy_bind(d: &Directive) -> Result<Option<ProxyBind>, ConfigError> {
    let arg = d.arg(0);
    let transparent = match d.args.get(1).map(String::as_str) {
        None => false,
        Some("transparent") => true,
        Some(p) => return Err(err(d, format!("invalid parameter \"{p}\""))),
    };
    if d.args.len() == 1 && arg == "off" {
        return Ok(None);
    }
    let t = template(d, arg)?;
    let to = if t.parts.iter().any(|p| matches!(p, TemplatePart::Var(_))) {
        BindTo::Vars(t)
    } else {
        crate::address::parse_addr_port(arg)
            .map(BindTo::Addr)
            .ok_or_else(|| err(d, format!("invalid address \"{arg}\"")))?
    };
    Ok(Some(ProxyBind { to, transparent }))
}

/// `proxy_next_upstream FLAG...`; flags are case-insensitive, several lines at one level add
/// up, a repeated flag is accepted (nginx only warns: `duplicate value "error"`), and `off`
/// anywhere means off alone (nginx's merge does the same).
fn next_upstream(level: &mut Level, d: &Directive) -> Result<(), ConfigError> {
    let none = NextUpstream {
        error: false,
        timeout: false,
        ..NextUpstream::default()
    };
    let flags = level.proxy_next_upstream.get_or_insert(none);
    for word in &d.args {
        let slot = match word.to_ascii_lowercase().as_str() {
            "error" => &mut flags.error,
            "timeout" => &mut flags.timeout,
            "invalid_header" => &mut flags.invalid_header,
            "http_500" => &mut flags.http_500,
            "http_502" => &mut flags.http_502,
            "http_503" => &mut flags.http_503,
            "http_504" => &mut flags.http_504,
            "http_403" => &mut flags.http_403,
            "http_404" => &mut flags.http_404,
            "http_429" => &mut flags.http_429,
            "non_idempotent" => &mut flags.non_idempotent,
            "off" => &mut flags.off,
            // Only meaningful with proxy_cache, which ringfront does not have.
            "updating" => continue,
            _ => return Err(err(d, format!("invalid value \"{word}\""))),
        };
        *slot = true;
    }
    if flags.off {
        *flags = NextUpstream { off: true, ..none };
    }
    Ok(())
}

/// `keepalive_disable none | msie6 | safari ...` added to `set` (nginx's bitmask slot: the
/// directive adds up within a level, an unknown value is an error).
fn keepalive_disable(
    d: &Directive,
    mut set: crate::model::KeepaliveDisable,
) -> Result<crate::model::KeepaliveDisable, ConfigError> {
    for arg in &d.args {
        match arg.as_str() {
            "none" => {}
            "msie6" => set.msie6 = true,
            "safari" => set.safari = true,
            other => return Err(err(d, format!("invalid value \"{other}\""))),
        }
    }
    Ok(set)
}
