//! The variables `http` blocks define themselves (`map`, `split_clients`, `geo`), registered in a
//! first pass over the block so that any template in it may use them, even before the
//! block that defines them (as nginx allows).

use crate::error::ConfigError;
use crate::model::Variable;
use crate::tree::Directive;
use crate::values::err;

/// Every `map` and `split_clients` variable of an `http` block, with what it means:
/// `Variable::Map(i)` is the `i`th map, `Variable::Split(i)` the `i`th split_clients.
pub(crate) fn collect(http: &[Directive]) -> Result<Vec<(String, Variable)>, ConfigError> {
    let mut vars: Vec<(String, Variable)> = Vec::new();
    let (mut maps, mut splits, mut geos) = (0, 0, 0);
    for d in http {
        let (meaning, var) = match d.name.as_str() {
            "map" => (Variable::Map(post_inc(&mut maps)), d.args.get(1)),
            "split_clients" => (Variable::Split(post_inc(&mut splits)), d.args.get(1)),
            // `geo $name` or `geo $address $name`.
            "geo" => (Variable::Geo(post_inc(&mut geos)), d.args.last()),
            _ => continue,
        };
        let Some(name) = var.and_then(|a| a.strip_prefix('$')) else {
            let shown = var.map_or("", String::as_str);
            return Err(err(d, format!("invalid variable name \"{shown}\"")));
        };
        let name = name.to_ascii_lowercase();
        if name.is_empty()
            || vars.iter().any(|(n, _)| *n == name)
            || crate::template::builtin(&name)
        {
            return Err(err(d, format!("the duplicate \"{name}\" variable")));
        }
        vars.push((name, meaning));
    }
    collect_user(http, &mut vars);
    Ok(vars)
}

fn post_inc(n: &mut usize) -> usize {
    *n += 1;
    *n - 1
}

/// The rewrite module's variables of an `http` block, appended to `vars` as
/// `Variable::User(i)` in order of first appearance: every `set $name` and every named
/// capture of a regex (`location ~`, `rewrite`, `if (... ~ ...)`, `server_name ~`). nginx
/// knows them all before it checks any variable's use, so a `set` anywhere makes the name
/// valid everywhere in the block.
pub(crate) fn collect_user(http: &[Directive], vars: &mut Vec<(String, Variable)>) {
    let mut next = 0;
    let mut add = |name: &str, vars: &mut Vec<(String, Variable)>| {
        let name = name.to_ascii_lowercase();
        let taken = name.is_empty()
            || crate::template::builtin(&name)
            || vars.iter().any(|(n, _)| *n == name);
        if !taken {
            vars.push((name, Variable::User(post_inc(&mut next))));
        }
    };
    walk(http, &mut |d| {
        if d.name == "set" {
            if let Some(name) = d.args.first().and_then(|a| a.strip_prefix('$')) {
                add(name, vars);
            }
        }
        for pattern in regexes(d) {
            if let Ok(re) = regex::Regex::new(&crate::pcre::translate(pattern)) {
                for name in re.capture_names().flatten() {
                    add(name, vars);
                }
            }
        }
    });
}

/// The (lower-cased) names some `set` in `http` gives a value: unlike a named capture's,
/// such a variable reads as empty, never as "not found" (`-` in logs), before it has one
/// (nginx's rewrite module handler).
pub(crate) fn set_names(http: &[Directive]) -> Vec<String> {
    let mut names = Vec::new();
    walk(http, &mut |d| {
        if d.name == "set" {
            if let Some(name) = d.args.first().and_then(|a| a.strip_prefix('$')) {
                names.push(name.to_ascii_lowercase());
            }
        }
    });
    names
}

/// Calls `f` on every directive of `block`, nested blocks included.
fn walk(block: &[Directive], f: &mut dyn FnMut(&Directive)) {
    for d in block {
        f(d);
        walk(d.children(), f);
    }
}

/// The regexes a directive is written with.
fn regexes(d: &Directive) -> Vec<&str> {
    let args: Vec<&str> = d.args.iter().map(String::as_str).collect();
    match (d.name.as_str(), args.as_slice()) {
        ("location", ["~" | "~*", re]) => vec![re],
        ("location", [re]) => re
            .strip_prefix("~*")
            .or_else(|| re.strip_prefix('~'))
            .into_iter()
            .collect(),
        ("rewrite", [re, ..]) => vec![re],
        ("if", [.., op, re]) if op.trim_start_matches('(').contains('~') => {
            re.strip_suffix(')').into_iter().collect()
        }
        ("server_name", names) => names.iter().filter_map(|n| n.strip_prefix('~')).collect(),
        // A map's regex keys are its entries' names.
        ("map", _) => d
            .children()
            .iter()
            .filter_map(|e| {
                e.name
                    .strip_prefix("~*")
                    .or_else(|| e.name.strip_prefix('~'))
            })
            .collect(),
        _ => Vec::new(),
    }
}
