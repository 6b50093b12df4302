//! `if (CONDITION) { ... }` in a server or location: the condition read as
//! `ngx_http_rewrite_if_condition` reads it (the parentheses may stand alone or touch the
//! first and last words), and the block's rewrite directives.

use crate::directives::{for_each, IF, LOCATION};
use crate::error::ConfigError;
use crate::handlers::Scope;
use crate::model::Variable;
use crate::rewrite_model::{Condition, FileTest, If, RewriteOp};
use crate::settings::Level;
use crate::tree::Directive;
use crate::values::{check_regex, err, template};

/// Directives of a location's `if` that make the block a configuration of its own: when
/// the condition holds, the request is answered with it (nginx switches `r->loc_conf`).
const CONFIG: &[&str] = &[
    "proxy_pass",
    "add_header",
    "add_trailer",
    "root",
    "access_log",
    "error_page",
    "limit_rate",
    "limit_rate_after",
];

/// Directives nginx allows inside a location's `if` that ringfront does not have there.
const LOCATION_IF: &[&str] = &[
    "add_trailer",
    "expires",
    "sendfile",
    "aio",
    "directio",
    "internal",
    "log_not_found",
    "gzip",
    "charset",
    "proxy_cache",
    "limit_except",
];

/// Reads an `if` block of `level` (a server's or a location's, as `scope` says). In a
/// location, its configuration directives go into a level of its own, kept in
/// `level.if_levels`.
pub(crate) fn if_block(
    d: &Directive,
    level: &mut Level,
    scope: &Scope<'_>,
) -> Result<RewriteOp, ConfigError> {
    let condition = condition(d)?;
    let mut body = Vec::new();
    let mut own: Option<Level> = None;
    // nginx: `proxy_pass` inside `if` may not have a URI part.
    let inner = Scope {
        prefix: scope.prefix,
        formats: scope.formats,
        regex_location: true,
        location: true,
        alias_len: scope.alias_len,
        host: scope.host,
    };
    for c in d.children() {
        let name = c.name.as_str();
        if scope.location && CONFIG.contains(&name) {
            crate::directives::check(c, LOCATION)?;
            let own = own.get_or_insert_with(Level::default);
            if !crate::handlers::apply(own, c, &inner)? {
                return Err(crate::directives::unhandled(c));
            }
            continue;
        }
        if scope.location && LOCATION_IF.contains(&name) {
            return Err(err(
                c,
                format!("\"{name}\" directive inside \"if\" is not supported yet"),
            ));
        }
        for_each(std::slice::from_ref(c), IF, |c| {
            crate::rewrite::apply_in_if(&mut body, c, scope)
        })?;
    }
    let config = own.map(|own| {
        level.if_levels.push(own);
        level.if_levels.len() - 1
    });
    Ok(RewriteOp::If(Box::new(If {
        condition,
        body,
        config,
    })))
}

fn invalid(d: &Directive, word: &str) -> ConfigError {
    err(d, format!("invalid condition \"{word}\""))
}

/// The words between the parentheses, which may stand alone or touch the first and last
/// words (`( $a = b )`, `($a = b)`, `($a)`), checked in nginx's order.
fn words(d: &Directive) -> Result<Vec<&str>, ConfigError> {
    let mut words: Vec<&str> = d.args.iter().map(String::as_str).collect();
    let first = words.first().copied().unwrap_or_default();
    let Some(rest) = first.strip_prefix('(') else {
        return Err(invalid(d, first));
    };
    if rest.is_empty() {
        words.remove(0);
    } else {
        words[0] = rest;
    }
    let last = words.last().copied().unwrap_or("(");
    let Some(rest) = last.strip_suffix(')') else {
        return Err(invalid(d, last));
    };
    if rest.is_empty() {
        words.pop();
    } else if let Some(w) = words.last_mut() {
        *w = rest;
    }
    Ok(words)
}

fn condition(d: &Directive) -> Result<Condition, ConfigError> {
    let words = words(d)?;
    let cur = words.first().copied().unwrap_or_default();
    if cur.len() > 1 && cur.starts_with('$') {
        let var = variable(d, &cur[1..])?;
        return match words.len() {
            1 => Ok(Condition::Set(var)),
            3 => compare(d, var, words[1], words[2]),
            _ => Err(invalid(d, cur)),
        };
    }
    let file_test =
        (cur.len() == 2 && cur.starts_with('-')) || (cur.len() == 3 && cur.starts_with("!-"));
    if !file_test || words.len() != 2 {
        return Err(invalid(d, cur));
    }
    let path = template(d, words[1])?;
    let test = match cur.trim_start_matches('!') {
        "-f" => FileTest::Plain,
        "-d" => FileTest::Dir,
        "-e" => FileTest::Exists,
        "-x" => FileTest::Exec,
        _ => return Err(invalid(d, cur)),
    };
    Ok(Condition::File {
        test,
        path,
        negate: cur.starts_with('!'),
    })
}

fn variable(d: &Directive, name: &str) -> Result<Variable, ConfigError> {
    crate::template::variable(name).ok_or_else(|| {
        err(
            d,
            format!("unknown \"{}\" variable", name.to_ascii_lowercase()),
        )
    })
}

fn compare(d: &Directive, var: Variable, op: &str, value: &str) -> Result<Condition, ConfigError> {
    match op {
        "=" | "!=" => Ok(Condition::Equals {
            var,
            value: template(d, value)?,
            negate: op == "!=",
        }),
        "~" | "~*" | "!~" | "!~*" => {
            let case_insensitive = op.ends_with('*');
            let regex = check_regex(d, value, case_insensitive)?;
            Ok(Condition::Matches {
                var,
                regex,
                case_insensitive,
                negate: op.starts_with('!'),
            })
        }
        _ => Err(err(d, format!("unexpected \"{op}\" in condition"))),
    }
}
