//! The rewrite module's directives read into a level's list (`set`, `rewrite`, `return`,
//! `break`, `if`, `rewrite_log`), with the checks and words of `ngx_http_rewrite_module.c`.

use crate::error::ConfigError;
use crate::handlers::Scope;
use crate::model::{Return, Variable};
use crate::rewrite_model::{Rewrite, RewriteFlag, RewriteOp};
use crate::settings::Level;
use crate::tree::Directive;
use crate::units::parse_number;
use crate::values::{check_regex, err, flag, set_once, template};

/// Reads `d` into `level` if it is a rewrite module directive; `Ok(false)` if it is not.
pub(crate) fn apply(
    level: &mut Level,
    d: &Directive,
    scope: &Scope<'_>,
) -> Result<bool, ConfigError> {
    let op = match d.name.as_str() {
        "set" => set(d)?,
        "rewrite" => RewriteOp::Rewrite(Box::new(rewrite(d)?)),
        "return" => RewriteOp::Return(return_(d)?),
        "break" => RewriteOp::Break,
        "if" => crate::rewrite_if::if_block(d, level, scope)?,
        "rewrite_log" => {
            set_once(&mut level.rewrite_log, flag(d)?, d)?;
            return Ok(true);
        }
        _ => return Ok(false),
    };
    level.rewrite.push(op);
    Ok(true)
}

/// Reads a rewrite directive of an `if` block (already checked against the table) into
/// `ops`.
pub(crate) fn apply_in_if(
    ops: &mut Vec<RewriteOp>,
    d: &Directive,
    scope: &Scope<'_>,
) -> Result<(), ConfigError> {
    let mut level = Level::default();
    // `rewrite_log` inside `if` is accepted and changes nothing: nginx logs with the
    // enclosing level's setting.
    if !apply(&mut level, d, scope)? {
        return Err(crate::directives::unhandled(d));
    }
    ops.append(&mut level.rewrite);
    Ok(())
}

/// `set $name VALUE`.
fn set(d: &Directive) -> Result<RewriteOp, ConfigError> {
    let Some(name) = d.arg(0).strip_prefix('$') else {
        return Err(err(d, format!("invalid variable name \"{}\"", d.arg(0))));
    };
    if name.is_empty() {
        return Err(err(d, "invalid variable name \"$\""));
    }
    let lower = name.to_ascii_lowercase();
    let value = template(d, d.arg(1))?;
    if lower == "args" {
        return Ok(RewriteOp::SetArgs(value));
    }
    if lower == "limit_rate" {
        return Ok(RewriteOp::SetLimitRate(value));
    }
    if crate::template::builtin(&lower) {
        return Err(err(d, format!("the duplicate \"{lower}\" variable")));
    }
    match crate::template::variable(&lower) {
        Some(Variable::User(var)) => Ok(RewriteOp::Set { var, value }),
        Some(Variable::Map(_) | Variable::Geo(_) | Variable::Split(_)) => Err(err(
            d,
            format!("\"set\" of the \"{lower}\" variable of a map, geo or split_clients is not supported yet"),
        )),
        _ => Err(err(
            d,
            format!("internal error: variable \"{lower}\" was not registered"),
        )),
    }
}

/// `rewrite REGEX REPLACEMENT [last|break|redirect|permanent]`.
fn rewrite(d: &Directive) -> Result<Rewrite, ConfigError> {
    let written = d.arg(1);
    if written.is_empty() {
        return Err(err(d, "empty replacement"));
    }
    let regex = check_regex(d, d.arg(0), false)?;
    // The last "?" drops the original arguments.
    let (replacement, add_args) = match written.strip_suffix('?') {
        Some(r) => (r, false),
        None => (written, true),
    };
    let absolute = ["http://", "https://", "$scheme"]
        .iter()
        .any(|p| replacement.starts_with(p));
    let mut redirect = absolute.then_some(302);
    let flag = match d.args.get(2).map(String::as_str) {
        None => {
            if absolute {
                RewriteFlag::Redirect
            } else {
                RewriteFlag::None
            }
        }
        Some("last") => RewriteFlag::Last,
        Some("break") => RewriteFlag::Break,
        Some("redirect") => {
            redirect = Some(302);
            RewriteFlag::Redirect
        }
        Some("permanent") => {
            redirect = Some(301);
            RewriteFlag::Permanent
        }
        Some(other) => return Err(err(d, format!("invalid parameter \"{other}\""))),
    };
    Ok(Rewrite {
        regex,
        replacement: template(d, replacement)?,
        flag,
        redirect,
        add_args,
        has_args: replacement.contains('?'),
        origin: d.origin.clone(),
    })
}

/// `return CODE [TEXT|URL]` or `return URL` (302).
pub(crate) fn return_(d: &Directive) -> Result<Return, ConfigError> {
    let first = d.arg(0);
    let is_url = ["http://", "https://", "$scheme"]
        .iter()
        .any(|p| first.starts_with(p));
    let code = parse_number(first);
    if code.is_none() && d.args.len() == 1 && is_url {
        return Ok(Return {
            code: 302,
            text: Some(template(d, first)?),
        });
    }
    let code = code
        .filter(|&n| n <= 999)
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| err(d, format!("invalid return code \"{first}\"")))?;
    let text = match d.args.get(1) {
        Some(text) => Some(template(d, text)?),
        None => None,
    };
    Ok(Return { code, text })
}
