//! The variables `http` blocks define themselves (`map`, `split_clients`), registered in a
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
    let (mut maps, mut splits) = (0, 0);
    for d in http {
        let meaning = match d.name.as_str() {
            "map" => Variable::Map(post_inc(&mut maps)),
            "split_clients" => Variable::Split(post_inc(&mut splits)),
            _ => continue,
        };
        let Some(name) = d.args.get(1).and_then(|a| a.strip_prefix('$')) else {
            return Err(err(d, format!("invalid variable name \"{}\"", d.arg(1))));
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
