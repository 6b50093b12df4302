//! nginx's response rate limits: `limit_rate` and `limit_rate_after` (sizes that may hold
//! variables, nginx 1.17.0+'s `ngx_http_set_complex_value_size_slot`, evaluated per request)
//! and `proxy_limit_rate` (a plain size: the upstream read rate).

use crate::model::SizeValue;
use crate::settings::Level;
use crate::tree::Directive;
use crate::values::{set_once, size, template};
use crate::ConfigError;

/// Applies one of the rate directives to `level`; `false` when `d` is none of them.
pub(crate) fn apply(level: &mut Level, d: &Directive) -> Result<bool, ConfigError> {
    let arg = d.arg(0);
    match d.name.as_str() {
        "limit_rate" => set_once(&mut level.limit_rate, size_value(d, arg)?, d)?,
        "limit_rate_after" => set_once(&mut level.limit_rate_after, size_value(d, arg)?, d)?,
        "proxy_limit_rate" => set_once(&mut level.proxy_limit_rate, size(d, arg)?, d)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// A size, or a template giving one per request; a constant is checked here (`invalid
/// value`), as nginx checks it at load.
fn size_value(d: &Directive, text: &str) -> Result<SizeValue, ConfigError> {
    let value = template(d, text)?;
    if value
        .parts
        .iter()
        .all(|p| matches!(p, crate::model::TemplatePart::Literal(_)))
    {
        return Ok(SizeValue::Fixed(size(d, text)?));
    }
    Ok(SizeValue::Vars(value))
}
