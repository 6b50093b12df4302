//! The static module's directives at one level — `alias`, `index`, `types {}`,
//! `default_type`, `try_files`, and the headers module's `expires` — and their merge (`root` itself is a [`Level`] field of its own, which
//! `alias` shares, as nginx's `clcf->root`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::ConfigError;
use crate::files_model::{default_types, Expires, Files, IfModifiedSince, TryFiles, TryLast};
use crate::settings::Level;
use crate::tree::Directive;
use crate::values::{err, path};

/// What one level wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct FilesLevel {
    /// Written with `root` (`Some(None)`) or `alias` (`Some(Some(prefix length))`, the
    /// inner `None` in a regex location).
    pub alias: Option<Option<Option<usize>>>,
    pub index: Option<Vec<crate::model::Template>>,
    pub types: Option<HashMap<String, String>>,
    pub default_type: Option<String>,
    pub expires: Option<Expires>,
    pub try_files: Option<TryFiles>,
    pub if_modified_since: Option<IfModifiedSince>,
    pub log_not_found: Option<bool>,
    pub etag: Option<bool>,
    pub max_ranges: Option<u64>,
}

/// Reads `d` into `level` if it is one of these directives; `Ok(false)` if not.
pub(crate) fn apply(
    level: &mut Level,
    d: &Directive,
    prefix: &Path,
    alias_len: Option<usize>,
) -> Result<bool, ConfigError> {
    let arg = d.arg(0);
    match d.name.as_str() {
        "root" | "alias" => {
            if let Some(was) = level.files.alias {
                let first = if was.is_some() { "alias" } else { "root" };
                return Err(err(
                    d,
                    format!(
                        "\"{}\" directive is duplicate, \"{first}\" directive was specified earlier",
                        d.name
                    ),
                ));
            }
            level.files.alias = Some((d.name == "alias").then_some(alias_len));
            level.root = Some(path(prefix, arg));
        }
        "index" => {
            let list = level.files.index.get_or_insert_with(Vec::new);
            for name in &d.args {
                if name.is_empty() {
                    return Err(err(d, "index \"\" in \"index\" directive is invalid"));
                }
                list.push(crate::values::template(d, name)?);
            }
        }
        "default_type" => {
            if level.files.default_type.is_some() {
                return Err(crate::values::directive_err(d, "is duplicate"));
            }
            level.files.default_type = Some(arg.to_string());
        }
        "types" => {
            let types = level.files.types.get_or_insert_with(HashMap::new);
            for t in d.block.as_deref().unwrap_or_default() {
                if t.block.is_some() {
                    return Err(err(d, "unexpected \"{\" in \"types\" block"));
                }
                for ext in &t.args {
                    // nginx: a repeated extension takes the later type (with a warning).
                    types.insert(ext.to_ascii_lowercase(), t.name.clone());
                }
            }
        }
        "expires" => {
            if level.files.expires.is_some() {
                return Err(crate::values::directive_err(d, "is duplicate"));
            }
            level.files.expires = Some(expires(d)?);
        }
        "if_modified_since" => {
            let v = match arg {
                "off" => IfModifiedSince::Off,
                "exact" => IfModifiedSince::Exact,
                "before" => IfModifiedSince::Before,
                _ => {
                    return Err(err(d, format!("invalid value \"{arg}\"")));
                }
            };
            crate::values::set_once(&mut level.files.if_modified_since, v, d)?;
        }
        "etag" => crate::values::set_once(&mut level.files.etag, crate::values::flag(d)?, d)?,
        "max_ranges" => {
            let n = crate::units::parse_number(arg)
                .ok_or_else(|| crate::values::directive_err(d, "invalid number"))?;
            crate::values::set_once(&mut level.files.max_ranges, n, d)?;
        }
        "log_not_found" => {
            crate::values::set_once(&mut level.files.log_not_found, crate::values::flag(d)?, d)?;
        }
        "try_files" => {
            if level.files.try_files.is_some() {
                return Err(crate::values::directive_err(d, "is duplicate"));
            }
            level.files.try_files = Some(try_files(d)?);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `try_files FILE ... URI | =CODE | @NAME` (named locations not supported yet).
fn try_files(d: &Directive) -> Result<TryFiles, ConfigError> {
    let Some((last, files)) = d.args.split_last() else {
        return Err(err(
            d,
            "invalid number of arguments in \"try_files\" directive",
        ));
    };
    let files = files
        .iter()
        .map(|f| match f.strip_suffix('/') {
            Some(dir) => Ok((crate::values::template(d, dir)?, true)),
            None => Ok((crate::values::template(d, f)?, false)),
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let last = if let Some(code) = last.strip_prefix('=') {
        let n = crate::units::parse_number(code)
            .filter(|&n| n <= 999)
            .ok_or_else(|| err(d, format!("invalid code \"{last}\"")))?;
        TryLast::Code(n as u16)
    } else if last.starts_with('@') {
        TryLast::Named(last.clone())
    } else {
        TryLast::Uri(crate::values::template(d, last)?)
    };
    Ok(TryFiles { files, last })
}

/// `expires [modified] TIME | @TIME | epoch | max | off`, or a value with variables read
/// for each response (nginx's `ngx_http_headers_expires`).
fn expires(d: &Directive) -> Result<Expires, ConfigError> {
    let (value, modified) = match d.args.as_slice() {
        [one] => (one.as_str(), false),
        [m, t] if m == "modified" => (t.as_str(), true),
        _ => return Err(crate::values::directive_err(d, "invalid value")),
    };
    if value.contains('$') {
        let value = crate::values::template(d, value)?;
        return Ok(Expires::Var { value, modified });
    }
    Expires::parse(value, modified).map_err(|why| crate::values::directive_err(d, why))
}

impl FilesLevel {
    /// This level over `outer` (`alias` goes with `root`: both are set by the level that
    /// wrote either).
    pub(crate) fn inherit(&self, outer: &FilesLevel) -> FilesLevel {
        FilesLevel {
            alias: self.alias.or(outer.alias),
            index: self.index.clone().or_else(|| outer.index.clone()),
            types: self.types.clone().or_else(|| outer.types.clone()),
            default_type: self
                .default_type
                .clone()
                .or_else(|| outer.default_type.clone()),
            expires: self.expires.clone().or_else(|| outer.expires.clone()),
            try_files: self.try_files.clone(),
            if_modified_since: self.if_modified_since.or(outer.if_modified_since),
            log_not_found: self.log_not_found.or(outer.log_not_found),
            etag: self.etag.or(outer.etag),
            max_ranges: self.max_ranges.or(outer.max_ranges),
        }
    }

    pub(crate) fn finish(self) -> Files {
        let d = Files::default();
        Files {
            alias: self.alias.flatten(),
            index: self.index.unwrap_or(d.index),
            types: Arc::new(self.types.unwrap_or_else(default_types)),
            default_type: self.default_type.unwrap_or(d.default_type),
            expires: self.expires.unwrap_or(d.expires),
            try_files: self.try_files,
            if_modified_since: self.if_modified_since.unwrap_or(d.if_modified_since),
            log_not_found: self.log_not_found.unwrap_or(d.log_not_found),
            etag: self.etag.unwrap_or(d.etag),
            max_ranges: self.max_ranges,
        }
    }
}
