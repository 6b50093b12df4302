//! From text to [`Config`]: the block tree is read (includes expanded), the main level walked
//! through the directive table, then `proxy_pass` targets resolved and settings merged.

use std::path::{Path, PathBuf};

use crate::error::{ConfigError, COMMAND_LINE};
use crate::host::Host;
use crate::http::HttpRaw;
use crate::main_conf::main_block;
use crate::model::Config;
use crate::options::LoadOptions;
use crate::resolve::finish_http;
use crate::tree::Reader;
use crate::upstream::check_zones;

/// What every reader of the tree needs: where relative paths start, the host that
/// resolves names, and the error log when the main level names none (`-e`).
pub(crate) struct Env<'a> {
    pub prefix: &'a Path,
    pub host: &'a dyn Host,
    pub default_error_log: Option<&'a Path>,
}

/// An absolute form of `path` (nginx prints full paths): `.` components dropped, and a
/// relative path taken from the current folder — the one place the loader reads process
/// state, so only [`crate::load`] calls it.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `absolute` without the current folder: a relative path stays as written.
pub(crate) fn cleaned(path: &Path) -> PathBuf {
    if path.is_absolute() {
        absolute(path)
    } else {
        path.to_path_buf()
    }
}

/// Builds a configuration from the main file's text; every file beyond it and every host
/// name comes through `host`.
pub(crate) fn build(
    text: &[u8],
    path: &Path,
    host: &dyn Host,
    opts: &LoadOptions,
) -> Result<Config, ConfigError> {
    let conf_prefix = path.parent().unwrap_or(Path::new("/"));
    let mut reader = Reader::new(host, conf_prefix);
    // nginx reads `-g` before the file, so a directive in both is a duplicate at the file's.
    let mut tree = match &opts.globals {
        Some(g) => reader.parse_main(g.as_bytes(), Path::new(COMMAND_LINE))?,
        None => Vec::new(),
    };
    tree.extend(reader.parse_main(text, path)?);
    let env = Env {
        prefix: opts.prefix.as_deref().unwrap_or(conf_prefix),
        host,
        default_error_log: opts.error_log.as_deref(),
    };
    let main = main_block(&tree, &env)?;
    let raw = main.http.unwrap_or_else(HttpRaw::empty);
    let zones = raw.zones.clone();
    let limit_zones = raw.limit_zones.clone();
    let http = finish_http(raw, &env)?;
    // nginx checks these after the whole configuration was read, without a place, and the
    // shared memory zones last.
    if !main.events {
        return Err(ConfigError::new("no \"events\" section in configuration"));
    }
    check_zones(&zones)?;
    crate::limits::check_sizes(&limit_zones)?;
    Ok(Config {
        path: path.to_path_buf(),
        main: main.conf,
        http,
    })
}
