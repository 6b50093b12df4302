//! Log directives: `log_format` (with nginx's predefined `combined`), `access_log` and
//! `error_log`.

use std::path::Path;

use crate::error::ConfigError;
use crate::handlers::Scope;
use crate::model::{AccessLog, ErrorLog, LogEscape, LogFormat, LogLevel};
use crate::settings::Level;
use crate::tree::Directive;
use crate::units::{parse_size, parse_time_mode, TimeMode};
use crate::values::{err, path, template};

/// nginx's built-in format.
pub(crate) const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" \
                                   $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";

pub(crate) fn combined() -> LogFormat {
    LogFormat {
        name: "combined".to_string(),
        // The constant only names known variables.
        format: crate::template::parse_template(COMBINED).unwrap_or_default(),
        escape: LogEscape::Default,
    }
}

/// nginx's log module reads `$1` as a variable named `1`, which does not exist: regex
/// captures are not available in `log_format` (`unknown "1" variable`).
fn no_captures(
    d: &Directive,
    t: crate::model::Template,
) -> Result<crate::model::Template, ConfigError> {
    for part in &t.parts {
        if let crate::model::TemplatePart::Var(crate::model::Variable::Capture(n)) = part {
            return Err(err(d, format!("unknown \"{n}\" variable")));
        }
    }
    Ok(t)
}

/// `log_format NAME [escape=default|json|none] STRING...`: the strings are concatenated.
pub(crate) fn log_format(d: &Directive, formats: &mut Vec<LogFormat>) -> Result<(), ConfigError> {
    let name = d.arg(0);
    if formats.iter().any(|f| f.name == name) {
        return Err(err(d, format!("duplicate \"log_format\" name \"{name}\"")));
    }
    let mut strings = d.args.get(1..).unwrap_or_default();
    let mut escape = LogEscape::Default;
    if let Some(e) = strings.first().and_then(|s| s.strip_prefix("escape=")) {
        escape = match e {
            "default" => LogEscape::Default,
            "json" => LogEscape::Json,
            "none" => LogEscape::None,
            _ => return Err(err(d, format!("unknown log format escaping \"{e}\""))),
        };
        strings = &strings[1..];
    }
    formats.push(LogFormat {
        name: name.to_string(),
        format: no_captures(d, template(d, &strings.concat())?)?,
        escape,
    });
    Ok(())
}

/// `access_log off` | `access_log FILE [FORMAT [buffer=SIZE] [flush=TIME]]`. Several at one
/// level all log; `off` at a level wins over the others there (as nginx's `off` flag does),
/// so `Off` is always alone in the list.
pub(crate) fn access_log(
    level: &mut Level,
    d: &Directive,
    scope: &Scope<'_>,
) -> Result<(), ConfigError> {
    let first = d.arg(0);
    let logs = level.access_log.get_or_insert_with(Vec::new);
    if first == "off" {
        if let Some(extra) = d.args.get(1) {
            return Err(err(d, format!("invalid parameter \"{extra}\"")));
        }
        *logs = vec![AccessLog::Off];
        return Ok(());
    }
    if first.starts_with("syslog:") || first.contains('$') {
        return Err(err(
            d,
            format!("access_log \"{first}\" is not supported yet"),
        ));
    }
    let format = d.args.get(1).map(String::as_str).unwrap_or("combined");
    if !scope.formats.iter().any(|f| f.name == format) {
        return Err(err(d, format!("unknown log format \"{format}\"")));
    }
    let mut condition = None;
    for param in d.args.iter().skip(2) {
        if let Some(v) = param.strip_prefix("if=") {
            condition = Some(crate::values::template(d, v)?);
        } else if let Some(v) = param.strip_prefix("buffer=") {
            // ringfront's log writer thread buffers on its own.
            if !matches!(parse_size(v), Some(n) if n > 0) {
                return Err(err(d, format!("invalid buffer size \"{v}\"")));
            }
        } else if let Some(v) = param.strip_prefix("flush=") {
            if !matches!(parse_time_mode(v, TimeMode::Msec), Some(t) if !t.is_zero()) {
                return Err(err(d, format!("invalid flush time \"{v}\"")));
            }
        } else if param == "gzip" || param.starts_with("gzip=") {
            return Err(err(
                d,
                format!("access_log parameter \"{param}\" is not supported yet"),
            ));
        } else {
            return Err(err(d, format!("invalid parameter \"{param}\"")));
        }
    }
    if logs.first() != Some(&AccessLog::Off) {
        logs.push(AccessLog::File {
            path: path(scope.prefix, first),
            format: format.to_string(),
            condition,
        });
    }
    Ok(())
}

fn log_level(word: &str) -> Option<LogLevel> {
    Some(match word {
        "debug" => LogLevel::Debug,
        "info" => LogLevel::Info,
        "notice" => LogLevel::Notice,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        "crit" => LogLevel::Crit,
        "alert" => LogLevel::Alert,
        "emerg" => LogLevel::Emerg,
        _ => return None,
    })
}

/// `error_log FILE|stderr [LEVEL]`, level `error` by default.
pub(crate) fn error_log(d: &Directive, prefix: &Path) -> Result<ErrorLog, ConfigError> {
    let target = d.arg(0);
    if target.starts_with("syslog:") || target.starts_with("memory:") {
        return Err(err(
            d,
            format!("error_log \"{target}\" is not supported yet"),
        ));
    }
    let level = match d.args.get(1) {
        None => LogLevel::Error,
        Some(word) => {
            log_level(word).ok_or_else(|| err(d, format!("invalid log level \"{word}\"")))?
        }
    };
    if let Some(extra) = d.args.get(2) {
        return Err(err(d, format!("duplicate log level \"{extra}\"")));
    }
    Ok(ErrorLog {
        path: (target != "stderr").then(|| path(prefix, target)),
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_is_all_known_variables() {
        let parsed = crate::template::parse_template(COMBINED).expect("combined parses");
        assert_eq!(combined().format, parsed);
        assert_eq!(parsed.parts.len(), 16);
    }
}
