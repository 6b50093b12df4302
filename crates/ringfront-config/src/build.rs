//! From text to [`Config`]: the block tree is read (includes expanded), the main level walked
//! through the directive table, then `proxy_pass` targets resolved and settings merged.

use std::path::{Path, PathBuf};

use crate::address::Resolver;
use crate::error::ConfigError;
use crate::http::HttpRaw;
use crate::main_conf::main_block;
use crate::model::Config;
use crate::resolve::finish_http;
use crate::tree::Reader;
use crate::upstream::check_zones;

/// What every reader of the tree needs: where relative paths start, and how host names are
/// resolved.
pub(crate) struct Env<'a> {
    pub prefix: &'a Path,
    pub resolver: Resolver<'a>,
}

/// An absolute form of `path` without touching the file system (nginx prints full paths).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Builds a configuration from the main file's text; `path` must already be absolute.
pub(crate) fn build(
    text: &[u8],
    path: &Path,
    resolver: Resolver<'_>,
) -> Result<Config, ConfigError> {
    let prefix = path.parent().unwrap_or(Path::new("/"));
    let tree = Reader::new(prefix).parse_main(text, path)?;
    let env = Env { prefix, resolver };
    let main = main_block(&tree, &env)?;
    let raw = main.http.unwrap_or_else(HttpRaw::empty);
    let zones = raw.zones.clone();
    let http = finish_http(raw, &env)?;
    // nginx checks these after the whole configuration was read, without a place, and the
    // shared memory zones last.
    if !main.events {
        return Err(ConfigError::new("no \"events\" section in configuration"));
    }
    check_zones(&zones)?;
    Ok(Config {
        path: path.to_path_buf(),
        main: main.conf,
        http,
    })
}
