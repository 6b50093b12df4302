//! `map SOURCE $name { ... }` (ngx_http_map_module): a variable whose value is chosen by the
//! value of SOURCE. Strings match ignoring case; with `hostnames`, `*.example.com` /
//! `.example.com` (prefix masks) and `www.example.*` (suffix masks) too; `~` / `~*` regexes
//! in order; `default` (else ""). Priority as nginx: exact, longest prefix mask, longest
//! suffix mask, first regex, default. A key naming a special parameter is escaped with `\`.
//! Map names are known before the rest of `http` is read (`custom_vars.rs`), so a map may
//! be used before it is defined.

use crate::error::ConfigError;
use crate::model::{MapBlock, MapKey, Template};
use crate::tree::Directive;
use crate::values::{check_regex, err, template};

/// Reads one `map` block (its variable was registered by [`names`]).
pub(crate) fn map_block(d: &Directive) -> Result<MapBlock, ConfigError> {
    let mut m = MapBlock {
        name: d.arg(1).trim_start_matches('$').to_ascii_lowercase(),
        source: template(d, d.arg(0))?,
        default: Template::default(),
        hostnames: false,
        volatile: false,
        entries: Vec::new(),
    };
    let mut default_seen = false;
    for c in d.children() {
        let value = || -> Result<Template, ConfigError> {
            match c.args.as_slice() {
                [v] => template(c, v),
                _ => Err(err(c, "invalid number of the map parameters")),
            }
        };
        match c.name.as_str() {
            "hostnames" if c.args.is_empty() => m.hostnames = true,
            "volatile" if c.args.is_empty() => m.volatile = true,
            "default" => {
                if std::mem::replace(&mut default_seen, true) {
                    return Err(err(c, "duplicate default map parameter"));
                }
                m.default = value()?;
            }
            key => {
                let key = key.strip_prefix('\\').unwrap_or(key);
                let entry = (self::key(c, key, m.hostnames)?, value()?);
                if m.entries.iter().any(|(k, _)| *k == entry.0) {
                    return Err(err(c, format!("conflicting parameter \"{key}\"")));
                }
                m.entries.push(entry);
            }
        }
    }
    Ok(m)
}

fn key(c: &Directive, key: &str, hostnames: bool) -> Result<MapKey, ConfigError> {
    if let Some(p) = key.strip_prefix("~*") {
        return Ok(MapKey::Regex {
            pattern: check_regex(c, p, true)?,
            case_insensitive: true,
        });
    }
    if let Some(p) = key.strip_prefix('~') {
        return Ok(MapKey::Regex {
            pattern: check_regex(c, p, false)?,
            case_insensitive: false,
        });
    }
    let lower = key.to_ascii_lowercase();
    if hostnames {
        if let Some(rest) = lower.strip_prefix("*.") {
            return Ok(MapKey::Subdomains(rest.to_string()));
        }
        if let Some(rest) = lower.strip_prefix('.') {
            return Ok(MapKey::DomainAndSubdomains(rest.to_string()));
        }
        if let Some(rest) = lower.strip_suffix(".*") {
            return Ok(MapKey::Prefix(format!("{rest}.")));
        }
    }
    Ok(MapKey::Exact(lower))
}
