//! The real machine: `std::fs`, the `glob` crate and the system resolver (`getaddrinfo`).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use super::{GlobError, Host, MATCH_OPTIONS};

/// Reads the machine's files and resolves names with the system resolver; what
/// [`crate::load`] uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsHost;

impl Host for OsHost {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        let paths =
            glob::glob_with(pattern, MATCH_OPTIONS).map_err(|e| GlobError::Pattern(e.msg))?;
        paths
            .map(|entry| {
                entry.map_err(|e| GlobError::Read {
                    path: e.path().to_path_buf(),
                    error: e.into(),
                })
            })
            .collect()
    }

    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok((name, port).to_socket_addrs()?.collect())
    }

    fn file_key(&self, path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    }
}
