//! What loading a configuration needs from the machine — reading files, expanding `include`
//! globs, resolving host names — behind one trait the caller passes, so parsing itself is pure.

mod memory;
mod os;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use memory::MemoryHost;
pub use os::OsHost;

/// glob(3) as nginx calls it: `*` never crosses a `/` nor matches a leading `.`.
const MATCH_OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: true,
};

/// The loader's only way to the outside world. [`OsHost`] is the machine's file system and
/// resolver; [`MemoryHost`] is a table of files and names for tests and fuzzing.
pub trait Host {
    /// The whole content of the file at `path`.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// The paths matching `pattern` as glob(3) matches them for nginx: `/` and a leading `.`
    /// only matched literally, case sensitive. Any order (the loader sorts).
    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, GlobError>;

    /// The addresses of host `name` (never a literal address) with `port`; an empty list or
    /// an error both read as "host not found".
    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>>;

    /// One key per file, whatever path leads to it (symlinks followed), to find include
    /// cycles. The path itself unless the host knows better.
    fn file_key(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }
}

/// Why a glob could not be expanded.
#[derive(Debug)]
pub enum GlobError {
    /// The pattern is not a glob; the glob crate's words for why.
    Pattern(&'static str),
    /// A folder on the way could not be read.
    Read { path: PathBuf, error: io::Error },
}
