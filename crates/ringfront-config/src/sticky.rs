//! `sticky cookie NAME [expires=T|max] [domain=D] [httponly] [samesite=strict|lax|none]
//! [secure] [path=P] [secret=KEY]` (`secret=` is ringfront's own), `sticky route $var ...` and `sticky learn create=$v lookup=$v
//! zone=NAME:SIZE [timeout=T] [header] [sync]` in an `upstream` block: nginx Plus's session
//! persistence, in open nginx since 1.29.6 (`ngx_http_upstream_sticky_module.c`), with its
//! checks and messages.

use std::time::Duration;

use crate::error::ConfigError;
use crate::model::Template;
use crate::tree::Directive;
use crate::units::{parse_size, parse_time_mode, TimeMode};
use crate::values::{directive_err, err, template};

/// nginx's smallest learn zone: 8 pages of 4 KiB.
const MIN_ZONE_SIZE: u64 = 8 * 4096;
/// `sticky learn`'s default `timeout`: 10 minutes.
pub const DEFAULT_LEARN_TIMEOUT: Duration = Duration::from_secs(600);

/// One group's `sticky` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sticky {
    pub mode: StickyMode,
    /// The variables read for the server id (cookie, route) or the session id (learn's
    /// `lookup=`): the first one that is not empty counts.
    pub lookup: Vec<Template>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StickyMode {
    Cookie(StickyCookie),
    Route,
    Learn(StickyLearn),
}

/// `sticky cookie`: the cookie set on every proxied response, naming its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StickyCookie {
    pub name: String,
    pub expires: Option<CookieExpires>,
    pub domain: Option<Template>,
    pub path: Option<String>,
    pub httponly: bool,
    pub secure: bool,
    /// `samesite=`: a value with variables is checked per response (an invalid one becomes
    /// `strict`, as nginx).
    pub samesite: Option<Template>,
    /// `secret=` (ringfront only): the key of the server ids' hash.
    pub secret: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieExpires {
    /// `expires=max`: nginx's fixed `Thu, 31-Dec-37 23:55:55 GMT; max-age=315360000`.
    Max,
    After(Duration),
}

/// `sticky learn`: sessions the upstream creates, remembered in a zone shared by workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StickyLearn {
    /// `create=`: read from the response, first non-empty wins.
    pub create: Vec<Template>,
    pub zone: String,
    pub size: u64,
    pub timeout: Duration,
    /// `header`: learn when the response head arrives (else when the request ends).
    pub header: bool,
    /// `sync`: accepted (nginx Plus's zone_sync); a single instance has nothing to sync.
    pub sync: bool,
}

impl Sticky {
    /// The key of the server ids' hash: `sticky cookie ... secret=`, else none.
    pub fn secret(&self) -> &[u8] {
        match &self.mode {
            StickyMode::Cookie(StickyCookie {
                secret: Some(s), ..
            }) => s.as_bytes(),
            _ => &[],
        }
    }
}

/// Reads a `sticky` line (argument counts are checked by the table: 2 or more).
pub(crate) fn sticky(d: &Directive) -> Result<Sticky, ConfigError> {
    match d.arg(0) {
        "cookie" => cookie(d),
        "route" => route(d),
        "learn" => learn(d),
        other => Err(err(d, format!("unknown parameter \"{other}\""))),
    }
}

/// A variable named in a parameter (`$name`), compiled as a one-variable template.
fn variable(d: &Directive, text: &str) -> Result<Template, ConfigError> {
    template(d, text)
}

fn route(d: &Directive) -> Result<Sticky, ConfigError> {
    let mut lookup = Vec::new();
    for a in d.args.iter().skip(1) {
        if !a.starts_with('$') {
            return Err(err(d, format!("invalid variable name \"{a}\"")));
        }
        lookup.push(variable(d, a)?);
    }
    Ok(Sticky {
        mode: StickyMode::Route,
        lookup,
    })
}

fn dup(d: &Directive, what: &str) -> ConfigError {
    directive_err(d, &format!("parameter \"{what}\" is duplicate"))
}

fn cookie(d: &Directive) -> Result<Sticky, ConfigError> {
    let name = d.arg(1);
    if name.is_empty() {
        return Err(directive_err(d, "empty cookie name"));
    }
    let mut c = StickyCookie {
        name: name.to_string(),
        expires: None,
        domain: None,
        path: None,
        httponly: false,
        secure: false,
        samesite: None,
        secret: None,
    };
    for a in d.args.iter().skip(2) {
        if let Some(v) = a.strip_prefix("domain=") {
            if c.domain.is_some() {
                return Err(dup(d, "domain"));
            }
            if v.is_empty() {
                return Err(directive_err(d, "no value for \"domain\""));
            }
            c.domain = Some(template(d, v)?);
        } else if let Some(v) = a.strip_prefix("path=") {
            if c.path.is_some() {
                return Err(dup(d, "path"));
            }
            if v.is_empty() {
                return Err(directive_err(d, "no value for \"path\""));
            }
            c.path = Some(v.to_string());
        } else if let Some(v) = a.strip_prefix("expires=") {
            if c.expires.is_some() {
                return Err(dup(d, "expires"));
            }
            c.expires = Some(match v {
                "max" => CookieExpires::Max,
                _ => CookieExpires::After(
                    parse_time_mode(v, TimeMode::Sec)
                        .ok_or_else(|| directive_err(d, "invalid \"expires\" parameter value"))?,
                ),
            });
        } else if a == "httponly" {
            if c.httponly {
                return Err(dup(d, "httponly"));
            }
            c.httponly = true;
        } else if a == "secure" {
            if c.secure {
                return Err(dup(d, "secure"));
            }
            c.secure = true;
        } else if let Some(v) = a.strip_prefix("secret=") {
            if c.secret.is_some() {
                return Err(dup(d, "secret"));
            }
            if v.is_empty() {
                return Err(directive_err(d, "no value for \"secret\""));
            }
            c.secret = Some(v.to_string());
        } else if let Some(v) = a.strip_prefix("samesite=") {
            if c.samesite.is_some() {
                return Err(dup(d, "samesite"));
            }
            if !v.contains('$') && samesite_value(v).is_none() {
                return Err(directive_err(d, "invalid \"samesite\" parameter value"));
            }
            c.samesite = Some(template(d, v)?);
        } else {
            return Err(err(d, format!("unknown parameter \"{a}\"")));
        }
    }
    let lookup = vec![variable(d, &format!("$cookie_{name}"))?];
    Ok(Sticky {
        mode: StickyMode::Cookie(c),
        lookup,
    })
}

/// `strict`, `lax` or `none` in any case (nginx compares with `ngx_strncasecmp`).
pub fn samesite_value(v: &str) -> Option<&str> {
    ["strict", "lax", "none"]
        .into_iter()
        .find(|s| s.eq_ignore_ascii_case(v))
        .map(|_| v)
}

fn learn(d: &Directive) -> Result<Sticky, ConfigError> {
    let mut create = Vec::new();
    let mut lookup = Vec::new();
    let mut zone: Option<(String, u64)> = None;
    let mut timeout = None;
    let mut header = false;
    let mut sync = false;
    let what = |m: &str| directive_err(d, m);
    for a in d.args.iter().skip(1) {
        if let Some(v) = a.strip_prefix("zone=") {
            if zone.is_some() {
                return Err(what("duplicate zone"));
            }
            let (name, size) = v
                .split_once(':')
                .ok_or_else(|| what("zone size is not specified"))?;
            if name.is_empty() {
                return Err(what("zone name is not specified"));
            }
            let size = parse_size(size).ok_or_else(|| what("invalid zone size"))?;
            if size < MIN_ZONE_SIZE {
                return Err(what("zone is too small"));
            }
            zone = Some((name.to_string(), size));
        } else if let Some(v) = a.strip_prefix("timeout=") {
            if timeout.is_some() {
                return Err(what("duplicate timeout"));
            }
            let t = parse_time_mode(v, TimeMode::Msec)
                .filter(|t| !t.is_zero())
                .ok_or_else(|| what("invalid timeout"))?;
            timeout = Some(t);
        } else if let Some(v) = a.strip_prefix("create=") {
            if !v.starts_with('$') {
                return Err(what("missing variable in the \"create\" parameter"));
            }
            create.push(variable(d, v)?);
        } else if let Some(v) = a.strip_prefix("lookup=") {
            if !v.starts_with('$') {
                return Err(what("missing variable in the \"lookup\" parameter"));
            }
            lookup.push(variable(d, v)?);
        } else if a == "header" {
            header = true;
        } else if a == "sync" {
            sync = true;
        } else {
            return Err(err(d, format!("unknown parameter \"{a}\"")));
        }
    }
    if lookup.is_empty() {
        return Err(what("\"lookup\" parameter is not specified"));
    }
    if create.is_empty() {
        return Err(what("\"create\" parameter is not specified"));
    }
    let (zone, size) = zone.ok_or_else(|| what("\"zone\" parameter is not specified"))?;
    Ok(Sticky {
        mode: StickyMode::Learn(StickyLearn {
            create,
            zone,
            size,
            timeout: timeout.unwrap_or(DEFAULT_LEARN_TIMEOUT),
            header,
            sync,
        }),
        lookup,
    })
}
