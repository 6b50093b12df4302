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
    Ok(vars)
}

fn post_inc(n: &mut usize) -> usize {
    *n += 1;
    *n - 1
}
