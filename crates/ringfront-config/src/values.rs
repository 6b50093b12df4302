//! Reading one argument into a typed value, with the message nginx's slot functions give
//! (`"proxy_read_timeout" directive invalid value`, `"x" directive is duplicate`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::directives::flag_error;
use crate::error::ConfigError;
use crate::model::Template;
use crate::template::parse_template;
use crate::tree::Directive;
use crate::units::{parse_number, parse_size, parse_time_mode, TimeMode};

/// An error at directive `d`.
pub(crate) fn err(d: &Directive, message: impl Into<String>) -> ConfigError {
    ConfigError::at(message, &d.origin)
}

/// nginx's `"%s" directive %s` form, e.g. `"proxy_read_timeout" directive invalid value`.
pub(crate) fn directive_err(d: &Directive, what: &str) -> ConfigError {
    err(d, format!("\"{}\" directive {what}", d.name))
}

/// Stores a value that may be written once per level (`"x" directive is duplicate`).
pub(crate) fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    d: &Directive,
) -> Result<(), ConfigError> {
    if slot.is_some() {
        return Err(directive_err(d, "is duplicate"));
    }
    *slot = Some(value);
    Ok(())
}

/// `on` / `off`, any case (`ngx_conf_set_flag_slot` compares with `ngx_strcasecmp`).
pub(crate) fn flag(d: &Directive) -> Result<bool, ConfigError> {
    match parse_flag(d.arg(0)) {
        Some(on) => Ok(on),
        None => Err(flag_error(d, d.arg(0))),
    }
}

/// `on` -> true, `off` -> false, case-insensitive as nginx; anything else is not a flag.
pub(crate) fn parse_flag(word: &str) -> Option<bool> {
    if word.eq_ignore_ascii_case("on") {
        Some(true)
    } else if word.eq_ignore_ascii_case("off") {
        Some(false)
    } else {
        None
    }
}

/// A millisecond-slot time (`ngx_conf_set_msec_slot`).
pub(crate) fn msec(d: &Directive, text: &str) -> Result<Duration, ConfigError> {
    parse_time_mode(text, TimeMode::Msec).ok_or_else(|| directive_err(d, "invalid value"))
}

/// A second-slot time (`ngx_conf_set_sec_slot`).
pub(crate) fn sec(d: &Directive, text: &str) -> Result<Duration, ConfigError> {
    parse_time_mode(text, TimeMode::Sec).ok_or_else(|| directive_err(d, "invalid value"))
}

/// A size (`ngx_conf_set_size_slot` / `ngx_conf_set_off_slot`).
pub(crate) fn size(d: &Directive, text: &str) -> Result<u64, ConfigError> {
    parse_size(text).ok_or_else(|| directive_err(d, "invalid value"))
}

/// A number (`ngx_conf_set_num_slot`), converted to the model's integer type.
pub(crate) fn number<T: TryFrom<u64>>(d: &Directive, text: &str) -> Result<T, ConfigError> {
    parse_number(text)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| directive_err(d, "invalid number"))
}

/// A string with variables.
pub(crate) fn template(d: &Directive, text: &str) -> Result<Template, ConfigError> {
    parse_template(text).map_err(|m| err(d, m))
}

/// A regular expression that must compile (`invalid regular expression "RE": REASON`, the
/// reason as the `regex` crate words it); the pattern in `regex` syntax (`pcre.rs`).
pub(crate) fn check_regex(
    d: &Directive,
    pattern: &str,
    case_insensitive: bool,
) -> Result<String, ConfigError> {
    let translated = crate::pcre::translate(pattern);
    match regex::RegexBuilder::new(&translated)
        .case_insensitive(case_insensitive)
        .build()
    {
        Ok(_) => Ok(translated.into_owned()),
        Err(e) => {
            let text = e.to_string();
            let reason = text
                .lines()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or(text.lines().last().unwrap_or_default());
            Err(err(
                d,
                format!("invalid regular expression \"{pattern}\": {reason}"),
            ))
        }
    }
}

/// A file path: relative ones are taken from the main configuration file's folder (nginx
/// takes them from its prefix; ringfront has no separate prefix).
pub(crate) fn path(prefix: &Path, text: &str) -> PathBuf {
    prefix.join(text)
}
