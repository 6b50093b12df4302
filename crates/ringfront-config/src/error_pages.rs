//! nginx's error handling and redirect settings: `error_page` (core module),
//! `recursive_error_pages`, `proxy_intercept_errors`, and how a relative `Location` is made
//! absolute (`absolute_redirect`, `port_in_redirect`, `server_name_in_redirect`).

use crate::error::ConfigError;
use crate::model::{ErrorPage, ErrorRules};
use crate::settings::Level;
use crate::tree::Directive;
use crate::units::parse_number;
use crate::values::{err, flag, set_once, template};

/// What one level wrote of [`ErrorRules`]; `None`: not written here.
#[derive(Debug, Clone, Default)]
pub(crate) struct ErrorLevel {
    pub recursive_error_pages: Option<bool>,
    pub proxy_intercept_errors: Option<bool>,
    pub absolute_redirect: Option<bool>,
    pub port_in_redirect: Option<bool>,
    pub server_name_in_redirect: Option<bool>,
}

impl ErrorLevel {
    /// This level with what it did not write taken from `outer`.
    pub(crate) fn inherit(&self, outer: &ErrorLevel) -> ErrorLevel {
        ErrorLevel {
            recursive_error_pages: self.recursive_error_pages.or(outer.recursive_error_pages),
            proxy_intercept_errors: self.proxy_intercept_errors.or(outer.proxy_intercept_errors),
            absolute_redirect: self.absolute_redirect.or(outer.absolute_redirect),
            port_in_redirect: self.port_in_redirect.or(outer.port_in_redirect),
            server_name_in_redirect: self
                .server_name_in_redirect
                .or(outer.server_name_in_redirect),
        }
    }

    /// nginx's defaults for what no level wrote.
    pub(crate) fn finish(&self) -> ErrorRules {
        let d = ErrorRules::default();
        ErrorRules {
            recursive_error_pages: self
                .recursive_error_pages
                .unwrap_or(d.recursive_error_pages),
            proxy_intercept_errors: self
                .proxy_intercept_errors
                .unwrap_or(d.proxy_intercept_errors),
            absolute_redirect: self.absolute_redirect.unwrap_or(d.absolute_redirect),
            port_in_redirect: self.port_in_redirect.unwrap_or(d.port_in_redirect),
            server_name_in_redirect: self
                .server_name_in_redirect
                .unwrap_or(d.server_name_in_redirect),
        }
    }
}

/// Reads `d` into `level` if it is one of these directives; `Ok(false)` if it is not.
pub(crate) fn apply(level: &mut Level, d: &Directive) -> Result<bool, ConfigError> {
    let e = &mut level.errors;
    let slot = match d.name.as_str() {
        "error_page" => {
            let pages = level.error_pages.get_or_insert_with(Vec::new);
            pages.push(error_page(d)?);
            return Ok(true);
        }
        "recursive_error_pages" => &mut e.recursive_error_pages,
        "proxy_intercept_errors" => &mut e.proxy_intercept_errors,
        "absolute_redirect" => &mut e.absolute_redirect,
        "port_in_redirect" => &mut e.port_in_redirect,
        "server_name_in_redirect" => &mut e.server_name_in_redirect,
        _ => return Ok(false),
    };
    set_once(slot, flag(d)?, d)?;
    Ok(true)
}

/// `error_page CODE ... [=[RESPONSE]] URI | @name | URL`, checked as
/// `ngx_http_core_error_page`: codes 300..=599 but 499, `=` not right after the name.
fn error_page(d: &Directive) -> Result<ErrorPage, ConfigError> {
    let n = d.args.len();
    let invalid = |v: &str| err(d, format!("invalid value \"{v}\""));
    // The table guarantees two arguments at least.
    let last_code = &d.args[n - 2];
    let (overwrite, codes) = match last_code.strip_prefix('=') {
        Some(_) if n == 2 => return Err(invalid(last_code)),
        Some("") => (Some(0), &d.args[..n - 2]),
        Some(code) => {
            let code = parse_number(code)
                .and_then(|c| u16::try_from(c).ok())
                .ok_or_else(|| invalid(last_code))?;
            (Some(code), &d.args[..n - 2])
        }
        None => (None, &d.args[..n - 1]),
    };
    let written = &d.args[n - 1];
    let target = template(d, written)?;
    // A URI without variables splits off its arguments now; one with variables when it is
    // evaluated.
    let literal = target
        .parts
        .iter()
        .all(|p| matches!(p, crate::model::TemplatePart::Literal(_)));
    let (target, args) = match written.split_once('?') {
        Some((uri, args)) if literal && written.starts_with('/') => {
            (template(d, uri)?, Some(args.to_string()))
        }
        _ => (target, None),
    };
    let mut out = Vec::with_capacity(codes.len());
    for text in codes {
        let code = parse_number(text)
            .filter(|&c| c != 499)
            .ok_or_else(|| invalid(text))?;
        if !(300..=599).contains(&code) {
            return Err(err(
                d,
                format!("value \"{text}\" must be between 300 and 599"),
            ));
        }
        out.push(code as u16);
    }
    Ok(ErrorPage {
        codes: out,
        overwrite,
        target,
        args,
    })
}
