//! Checking a directive against the [table](crate::table) in the order `ngx_conf_handler`
//! does, so that the errors read the same (`unknown directive`, `is not allowed here`,
//! `has no opening "{"`, `invalid number of arguments`), and walking blocks with it.

use crate::error::ConfigError;
use crate::nginx_names::is_nginx_directive;
use crate::table::{Block, Spec, MANY, TABLE};
pub(crate) use crate::table::{Check, Kind, EVENTS, HTTP, IF, LOCATION, MAIN, SERVER, UPSTREAM};
use crate::tree::Directive;
use crate::units::{parse_number, parse_size};
use crate::values::parse_flag;

fn at(d: &Directive, message: String) -> ConfigError {
    ConfigError::at(message, &d.origin)
}

/// Finds the table row for `d` in context `ctx` and checks its shape, with nginx's messages.
pub(crate) fn check(d: &Directive, ctx: u16) -> Result<&'static Spec, ConfigError> {
    let mut found = false;
    for spec in TABLE.iter().filter(|s| s.name == d.name) {
        found = true;
        if spec.ctx & ctx == 0 {
            continue;
        }
        match (spec.block, d.block.is_some()) {
            (Block::No, true) => {
                return Err(at(
                    d,
                    format!("directive \"{}\" is not terminated by \";\"", d.name),
                ));
            }
            (Block::Yes, false) => {
                return Err(at(
                    d,
                    format!("directive \"{}\" has no opening \"{{\"", d.name),
                ));
            }
            _ => {}
        }
        let n = d.args.len();
        if n < usize::from(spec.min) || (spec.max != MANY && n > usize::from(spec.max)) {
            return Err(at(
                d,
                format!("invalid number of arguments in \"{}\" directive", d.name),
            ));
        }
        return Ok(spec);
    }
    if found {
        Err(at(
            d,
            format!("\"{}\" directive is not allowed here", d.name),
        ))
    } else if is_nginx_directive(&d.name) {
        Err(unsupported_error(d))
    } else {
        Err(at(d, format!("unknown directive \"{}\"", d.name)))
    }
}

/// `"proxy_cache" directive is not supported by ringfront`: stock nginx has it, ringfront
/// does not implement it (never `unknown directive`, which reads as a typo).
pub(crate) fn unsupported_error(d: &Directive) -> ConfigError {
    at(
        d,
        format!("\"{}\" directive is not supported by ringfront", d.name),
    )
}

/// The message nginx gives for a bad `on|off` value.
pub(crate) fn flag_error(d: &Directive, value: &str) -> ConfigError {
    at(
        d,
        format!(
            "invalid value \"{value}\" in \"{}\" directive, it must be \"on\" or \"off\"",
            d.name
        ),
    )
}

/// Walks a block in context `ctx`: checks every directive against the table, checks and
/// skips no-ops, refuses unsupported ones, and hands the rest to `handle`.
pub(crate) fn for_each(
    block: &[Directive],
    ctx: u16,
    mut handle: impl FnMut(&Directive) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    for d in block {
        match check(d, ctx)?.kind {
            Kind::Handled => handle(d)?,
            Kind::NoOp(c) => check_noop(d, c)?,
            Kind::Unsupported => return Err(unsupported_error(d)),
        }
    }
    Ok(())
}

/// A table row with no handler in its context: a bug in this crate, reported, not panicked.
pub(crate) fn unhandled(d: &Directive) -> ConfigError {
    at(
        d,
        format!(
            "internal error: directive \"{}\" has no handler here",
            d.name
        ),
    )
}

/// Checks a no-op directive's arguments, so a typo there is still reported.
pub(crate) fn check_noop(d: &Directive, check: Check) -> Result<(), ConfigError> {
    let value = d.arg(0);
    let ok = match check {
        Check::Any => true,
        Check::Flag => parse_flag(value).is_some(),
        Check::OffOnly if parse_flag(value) == Some(true) => {
            return Err(at(d, format!("\"{} on\" is not supported yet", d.name)));
        }
        Check::OffOnly => parse_flag(value) == Some(false),
        Check::Only(words) if d.args.iter().all(|a| words.contains(&a.as_str())) => true,
        Check::Only(_) => {
            return Err(at(
                d,
                format!(
                    "\"{}\" with \"{}\" is not supported yet",
                    d.name,
                    d.args.join(" ")
                ),
            ));
        }
        Check::Number => parse_number(value).is_some(),
        Check::Size => parse_size(value).is_some(),
        Check::TempPath => temp_path_levels_ok(&d.args[1..]),
        Check::Templates => {
            for a in &d.args {
                crate::values::template(d, a)?;
            }
            true
        }
        Check::Msec => crate::values::msec(d, value).is_ok(),
        Check::Priority => return crate::noop_args::priority(d),
        Check::ThreadPool => return crate::noop_args::thread_pool(d),
        Check::LogFileCache => return crate::noop_args::open_log_file_cache(d),
    };
    match (ok, check) {
        (true, _) => Ok(()),
        (false, Check::Flag | Check::OffOnly) => Err(flag_error(d, value)),
        (false, Check::Number) => Err(at(d, format!("\"{}\" directive invalid number", d.name))),
        (false, _) => Err(at(d, format!("\"{}\" directive invalid value", d.name))),
    }
}

/// `*_temp_path PATH [L1 [L2 [L3]]]`: each level a number from 1, all together at most 10
/// digits (`ngx_conf_set_path_slot`).
fn temp_path_levels_ok(levels: &[String]) -> bool {
    let mut sum = 0;
    for l in levels {
        match parse_number(l) {
            Some(n) if n > 0 => sum += n,
            _ => return false,
        }
    }
    sum <= 10
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;
    use crate::table::NOOP_DIRECTIVES;

    fn dir(name: &str, args: &[&str], block: bool) -> Directive {
        Directive {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            block: block.then(Vec::new),
            origin: Origin {
                file: "/c/x.conf".into(),
                line: 7,
            },
            end_line: 7,
        }
    }

    fn msg(name: &str, args: &[&str], block: bool, ctx: u16) -> String {
        check(&dir(name, args, block), ctx).unwrap_err().to_string()
    }

    #[test]
    fn noop_list_matches_table() {
        let mut from_table: Vec<&str> = TABLE
            .iter()
            .filter(|s| matches!(s.kind, Kind::NoOp(_)))
            .map(|s| s.name)
            .collect();
        let mut listed = NOOP_DIRECTIVES.to_vec();
        from_table.sort_unstable();
        listed.sort_unstable();
        assert_eq!(from_table, listed);
    }

    #[test]
    fn shape_errors_read_like_nginx() {
        assert_eq!(
            msg("foo", &[], false, HTTP),
            "unknown directive \"foo\" in /c/x.conf:7"
        );
        assert_eq!(
            msg("proxy_pass", &["http://a"], false, SERVER),
            "\"proxy_pass\" directive is not allowed here in /c/x.conf:7"
        );
        assert_eq!(
            msg("listen", &[], false, SERVER),
            "invalid number of arguments in \"listen\" directive in /c/x.conf:7"
        );
        assert_eq!(
            msg("http", &[], false, MAIN),
            "directive \"http\" has no opening \"{\" in /c/x.conf:7"
        );
        assert_eq!(
            msg("listen", &["80"], true, SERVER),
            "directive \"listen\" is not terminated by \";\" in /c/x.conf:7"
        );
    }

    #[test]
    fn same_name_in_two_contexts() {
        assert!(check(&dir("server", &[], true), HTTP).is_ok());
        assert!(check(&dir("server", &["a:1"], false), UPSTREAM).is_ok());
        assert!(check(&dir("keepalive_timeout", &["5s", "5"], false), SERVER).is_ok());
        assert!(check(&dir("keepalive_timeout", &["5s", "5"], false), UPSTREAM).is_err());
    }

    #[test]
    fn noop_values_are_checked() {
        assert!(check_noop(&dir("sendfile", &["on"], false), Check::Flag).is_ok());
        assert_eq!(
            check_noop(&dir("sendfile", &["yes"], false), Check::Flag)
                .unwrap_err()
                .message,
            "invalid value \"yes\" in \"sendfile\" directive, it must be \"on\" or \"off\""
        );
        assert_eq!(
            check_noop(&dir("autoindex", &["on"], false), Check::OffOnly)
                .unwrap_err()
                .message,
            "\"autoindex on\" is not supported yet"
        );
        assert!(check_noop(&dir("proxy_buffer_size", &["4x"], false), Check::Size).is_err());
    }
}
