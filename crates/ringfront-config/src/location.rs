//! `location [=|^~|~|~*] URI { ... }`, nested locations included, with nginx's checks: a
//! valid modifier and regex, nesting rules, no duplicate locations among siblings.

use crate::build::Env;
use crate::directives::{for_each, unhandled, LOCATION};
use crate::error::ConfigError;
use crate::handlers::{apply, Scope};
use crate::health::{api, check_status, health_check, stub_status, HealthCheckRaw};
use crate::model::{LocationMatch, LogFormat, Origin, StatusFormat};
use crate::settings::Level;
use crate::tree::Directive;
use crate::values::{check_regex, err, set_once};

/// A location as written, before inheritance.
#[derive(Debug, Clone)]
pub(crate) struct LocRaw {
    pub matcher: LocationMatch,
    /// Boxed, as `own`: nested locations recurse, and these are large.
    pub settings: Box<Level>,
    pub locations: Vec<LocRaw>,
    pub origin: Origin,
    /// Location-only directives that are never inherited.
    pub own: Box<OwnRaw>,
}

/// What a location writes for itself alone: nginx Plus `health_check` and `api`, Tengine
/// `check_status`. Each with the place it was written, for the checks made later.
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnRaw {
    pub health_checks: Vec<HealthCheckRaw>,
    pub check_status: Option<(StatusFormat, Origin)>,
    pub api: Option<Origin>,
    /// `api write=on`.
    pub api_write: bool,
    pub stub_status: Option<Origin>,
    pub internal: Option<Origin>,
}

impl OwnRaw {
    /// Reads `d` if it is one of these directives; `Ok(false)` otherwise.
    fn apply(&mut self, d: &Directive) -> Result<bool, ConfigError> {
        match d.name.as_str() {
            "health_check" => self.health_checks.push(health_check(d)?),
            "check_status" => set_once(
                &mut self.check_status,
                (check_status(d)?, d.origin.clone()),
                d,
            )?,
            "api" => {
                let write = api(d)?;
                set_once(&mut self.api, d.origin.clone(), d)?;
                self.api_write = write;
            }
            "internal" => set_once(&mut self.internal, d.origin.clone(), d)?,
            "stub_status" => {
                stub_status(d)?;
                set_once(&mut self.stub_status, d.origin.clone(), d)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The URI (or regex) a matcher is written with, as nginx names locations in messages.
fn name(m: &LocationMatch) -> &str {
    match m {
        LocationMatch::Exact(u)
        | LocationMatch::PrefixNoRegex(u)
        | LocationMatch::Prefix(u)
        | LocationMatch::Named(u) => u,
        LocationMatch::Regex { pattern, .. } => pattern,
    }
}

fn regex(
    d: &Directive,
    pattern: &str,
    case_insensitive: bool,
) -> Result<LocationMatch, ConfigError> {
    let pattern = check_regex(d, pattern, case_insensitive)?;
    Ok(LocationMatch::Regex {
        pattern,
        case_insensitive,
    })
}

fn matcher(d: &Directive) -> Result<LocationMatch, ConfigError> {
    if d.args.len() == 2 {
        let uri = d.arg(1);
        return match d.arg(0) {
            "=" => Ok(LocationMatch::Exact(uri.to_string())),
            "^~" => Ok(LocationMatch::PrefixNoRegex(uri.to_string())),
            "~" => regex(d, uri, false),
            "~*" => regex(d, uri, true),
            other => Err(err(d, format!("invalid location modifier \"{other}\""))),
        };
    }
    let written = d.arg(0);
    if let Some(uri) = written.strip_prefix('=') {
        Ok(LocationMatch::Exact(uri.to_string()))
    } else if let Some(pattern) = written.strip_prefix("~*") {
        regex(d, pattern, true)
    } else if let Some(pattern) = written.strip_prefix('~') {
        regex(d, pattern, false)
    } else if written.starts_with('@') {
        Ok(LocationMatch::Named(written.to_string()))
    } else {
        Ok(LocationMatch::Prefix(written.to_string()))
    }
}

/// nginx's nesting rules (`ngx_http_core_location`).
fn check_nesting(
    d: &Directive,
    own: &LocationMatch,
    parent: &LocationMatch,
) -> Result<(), ConfigError> {
    let (child, outer) = (name(own), name(parent));
    if matches!(own, LocationMatch::Named(_)) {
        return Err(err(
            d,
            format!("named location \"{child}\" can be on the server level only"),
        ));
    }
    if matches!(parent, LocationMatch::Named(_)) {
        return Err(err(
            d,
            format!("location \"{child}\" cannot be inside the named location \"{outer}\""),
        ));
    }
    if matches!(parent, LocationMatch::Exact(_)) {
        return Err(err(
            d,
            format!("location \"{child}\" cannot be inside the exact location \"{outer}\""),
        ));
    }
    let is_regex = matches!(own, LocationMatch::Regex { .. });
    if !is_regex && !child.starts_with(outer) {
        return Err(err(
            d,
            format!("location \"{child}\" is outside location \"{outer}\""),
        ));
    }
    Ok(())
}

/// Two exact, or two prefix (`^~` or not), locations with the same URI among siblings.
pub(crate) fn check_duplicates(locations: &[LocRaw]) -> Result<(), ConfigError> {
    let key = |l: &LocRaw| match &l.matcher {
        LocationMatch::Exact(u) => Some((true, u.clone())),
        LocationMatch::Prefix(u) | LocationMatch::PrefixNoRegex(u) => Some((false, u.clone())),
        // nginx accepts two named locations of one name.
        LocationMatch::Regex { .. } | LocationMatch::Named(_) => None,
    };
    for (i, loc) in locations.iter().enumerate() {
        let Some(k) = key(loc) else { continue };
        if locations[..i]
            .iter()
            .any(|other| key(other).as_ref() == Some(&k))
        {
            return Err(ConfigError::at(
                format!("duplicate location \"{}\"", k.1),
                &loc.origin,
            ));
        }
    }
    Ok(())
}

/// Reads a `location` block (and its nested ones).
pub(crate) fn location_block(
    d: &Directive,
    parent: Option<&LocationMatch>,
    env: &Env<'_>,
    formats: &[LogFormat],
) -> Result<LocRaw, ConfigError> {
    let matcher = matcher(d)?;
    if let Some(parent) = parent {
        check_nesting(d, &matcher, parent)?;
    }
    let scope = Scope {
        prefix: env.prefix,
        formats,
        // nginx refuses a proxy_pass URI part in named locations as in regex ones.
        regex_location: matches!(
            matcher,
            LocationMatch::Regex { .. } | LocationMatch::Named(_)
        ),
        location: true,
        alias_len: match &matcher {
            LocationMatch::Regex { .. } | LocationMatch::Named(_) => None,
            LocationMatch::Exact(p)
            | LocationMatch::Prefix(p)
            | LocationMatch::PrefixNoRegex(p) => Some(p.len()),
        },
        host: env.host,
    };
    let mut settings = Box::<Level>::default();
    let mut locations = Vec::new();
    let mut own = Box::<OwnRaw>::default();
    for_each(d.children(), LOCATION, |c| {
        if c.name == "location" {
            locations.push(location_block(c, Some(&matcher), env, formats)?);
        } else if !own.apply(c)? && !apply(&mut settings, c, &scope)? {
            return Err(unhandled(c));
        }
        Ok(())
    })?;
    check_duplicates(&locations)?;
    Ok(LocRaw {
        matcher,
        settings,
        locations,
        origin: d.origin.clone(),
        own,
    })
}
