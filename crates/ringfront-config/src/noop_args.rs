//! Argument checks of the no-op directives whose values are more than a flag, number or size
//! (`worker_priority`, `thread_pool`, `open_log_file_cache`), with nginx's messages, so a typo
//! there is reported though the directive changes nothing.

use crate::error::ConfigError;
use crate::tree::Directive;
use crate::units::{parse_number, parse_time_mode, TimeMode};
use crate::values::{directive_err, err};

/// `worker_priority [-|+]N` (`ngx_set_priority`).
pub(crate) fn priority(d: &Directive) -> Result<(), ConfigError> {
    let v = d.arg(0);
    let digits = v.strip_prefix(['-', '+']).unwrap_or(v);
    match parse_number(digits) {
        Some(_) => Ok(()),
        None => Err(directive_err(d, "invalid number")),
    }
}

/// `thread_pool NAME threads=N [max_queue=N]` (`ngx_thread_pool`); unknown words are
/// skipped as nginx skips them.
pub(crate) fn thread_pool(d: &Directive) -> Result<(), ConfigError> {
    let mut threads = false;
    for a in &d.args[1..] {
        if let Some(n) = a.strip_prefix("threads=") {
            if !matches!(parse_number(n), Some(n) if n > 0) {
                return Err(err(d, format!("invalid threads value \"{a}\"")));
            }
            threads = true;
        } else if let Some(n) = a.strip_prefix("max_queue=") {
            if parse_number(n).is_none() {
                return Err(err(d, format!("invalid max_queue value \"{a}\"")));
            }
        }
    }
    if !threads {
        return Err(err(
            d,
            format!("\"{}\" must have \"threads\" parameter", d.name),
        ));
    }
    Ok(())
}

/// `open_log_file_cache off | max=N [inactive=T] [min_uses=N] [valid=T]`
/// (`ngx_http_log_open_file_cache`).
pub(crate) fn open_log_file_cache(d: &Directive) -> Result<(), ConfigError> {
    let time = |t: &str| parse_time_mode(t, TimeMode::Sec).is_some();
    let mut max = false;
    let mut off = false;
    for a in &d.args {
        let ok = if let Some(n) = a.strip_prefix("max=") {
            max = parse_number(n).is_some();
            max
        } else if let Some(t) = a.strip_prefix("inactive=") {
            time(t)
        } else if let Some(n) = a.strip_prefix("min_uses=") {
            parse_number(n).is_some()
        } else if let Some(t) = a.strip_prefix("valid=") {
            time(t)
        } else {
            off = a == "off";
            off
        };
        if !ok {
            return Err(err(
                d,
                format!("invalid \"open_log_file_cache\" parameter \"{a}\""),
            ));
        }
    }
    if !max && !off {
        return Err(err(
            d,
            "\"open_log_file_cache\" must have \"max\" parameter",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;

    fn dir(name: &str, args: &[&str]) -> Directive {
        Directive {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            block: None,
            origin: Origin {
                file: "/c/x.conf".into(),
                line: 3,
            },
            end_line: 3,
        }
    }

    fn msg(r: Result<(), ConfigError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn priority_takes_a_signed_number() {
        assert!(priority(&dir("worker_priority", &["-5"])).is_ok());
        assert!(priority(&dir("worker_priority", &["+3"])).is_ok());
        assert!(priority(&dir("worker_priority", &["10"])).is_ok());
        assert_eq!(
            msg(priority(&dir("worker_priority", &["high"]))),
            "\"worker_priority\" directive invalid number in /c/x.conf:3"
        );
    }

    #[test]
    fn thread_pool_needs_threads() {
        assert!(thread_pool(&dir("thread_pool", &["p", "threads=4"])).is_ok());
        assert!(thread_pool(&dir("thread_pool", &["p", "threads=4", "max_queue=0"])).is_ok());
        assert_eq!(
            msg(thread_pool(&dir("thread_pool", &["p", "threads=0"]))),
            "invalid threads value \"threads=0\" in /c/x.conf:3"
        );
        assert_eq!(
            msg(thread_pool(&dir(
                "thread_pool",
                &["p", "threads=2", "max_queue=x"]
            ))),
            "invalid max_queue value \"max_queue=x\" in /c/x.conf:3"
        );
        assert_eq!(
            msg(thread_pool(&dir("thread_pool", &["p", "max_queue=9"]))),
            "\"thread_pool\" must have \"threads\" parameter in /c/x.conf:3"
        );
    }

    #[test]
    fn open_log_file_cache_parameters() {
        let c = |a: &[&str]| open_log_file_cache(&dir("open_log_file_cache", a));
        assert!(c(&["off"]).is_ok());
        assert!(c(&["max=1000", "inactive=20s", "valid=1m", "min_uses=2"]).is_ok());
        assert_eq!(
            msg(c(&["max=10", "inactive=soon"])),
            "invalid \"open_log_file_cache\" parameter \"inactive=soon\" in /c/x.conf:3"
        );
        assert_eq!(
            msg(c(&["inactive=20s"])),
            "\"open_log_file_cache\" must have \"max\" parameter in /c/x.conf:3"
        );
    }
}
