//! `limit_except METHOD ... { ... }` (nginx's core module): requests with a method not
//! listed (GET implies HEAD) are answered with the block's configuration — the location's
//! with the block's `allow`, `deny`, `proxy_pass` and `access_log` on top, as nginx allows
//! there. Nested locations do not inherit it, as in nginx.

use crate::directives::for_each;
use crate::error::ConfigError;
use crate::handlers::Scope;
use crate::settings::Level;
use crate::table::LIMIT;
use crate::tree::Directive;
use crate::values::{directive_err, err};

/// The methods `limit_except` may name (nginx's `ngx_methods_names`).
const METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "MKCOL",
    "COPY",
    "MOVE",
    "OPTIONS",
    "PROPFIND",
    "PROPPATCH",
    "LOCK",
    "UNLOCK",
    "PATCH",
];

/// A `limit_except` as written: the methods let through, and the block's own level.
#[derive(Debug, Clone)]
pub(crate) struct LimitLevel {
    pub methods: Vec<String>,
    pub level: Level,
}

/// Reads `d` into `level` if it is `limit_except`; `Ok(false)` if it is not.
pub(crate) fn apply(
    level: &mut Level,
    d: &Directive,
    scope: &Scope<'_>,
) -> Result<bool, ConfigError> {
    if d.name != "limit_except" {
        return Ok(false);
    }
    if level.limit_except.is_some() {
        return Err(directive_err(d, "is duplicate"));
    }
    let mut methods = Vec::with_capacity(d.args.len() + 1);
    for m in &d.args {
        if !METHODS.contains(&m.as_str()) {
            return Err(err(d, format!("invalid method \"{m}\"")));
        }
        methods.push(m.clone());
    }
    if methods.iter().any(|m| m == "GET") && !methods.iter().any(|m| m == "HEAD") {
        methods.push("HEAD".to_string());
    }
    // nginx: a `proxy_pass` here may not have a URI part.
    let inner = Scope {
        regex_location: true,
        ..*scope
    };
    let mut own = Level::default();
    for_each(d.children(), LIMIT, |c| {
        match crate::handlers::apply(&mut own, c, &inner)? {
            true => Ok(()),
            false => Err(crate::directives::unhandled(c)),
        }
    })?;
    level.limit_except = Some(Box::new(LimitLevel {
        methods,
        level: own,
    }));
    Ok(true)
}
