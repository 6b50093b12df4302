//! A machine made of two tables, for tests and fuzzing: files by path and addresses by host
//! name. Nothing outside them exists, so a load through it never touches the disk or DNS.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use super::{GlobError, Host, MATCH_OPTIONS};

/// `errno` for "No such file or directory" (Linux and the BSDs alike).
const ENOENT: i32 = 2;

/// Files and host names held in memory. A path or name not added is not found, the way the
/// real machine reports it (`ENOENT`, "host not found"); a name added with no address
/// resolves to nothing.
#[derive(Debug, Clone, Default)]
pub struct MemoryHost {
    files: BTreeMap<PathBuf, Vec<u8>>,
    names: BTreeMap<String, Vec<IpAddr>>,
}

impl MemoryHost {
    /// No files and no names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the file at `path`, which should be absolute.
    pub fn file(mut self, path: impl Into<PathBuf>, text: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), text.into());
        self
    }

    /// Adds (or replaces) host `name` with its addresses, in resolver order.
    pub fn name(mut self, name: &str, addrs: &[IpAddr]) -> Self {
        self.names.insert(name.to_string(), addrs.to_vec());
        self
    }
}

impl Host for MemoryHost {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from_raw_os_error(ENOENT))
    }

    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        let pattern = glob::Pattern::new(pattern).map_err(|e| GlobError::Pattern(e.msg))?;
        Ok(self
            .files
            .keys()
            .filter(|path| pattern.matches_path_with(path, MATCH_OPTIONS))
            .cloned()
            .collect())
    }

    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        match self.names.get(name) {
            Some(ips) => Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "host not found")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_enoent() {
        let err = MemoryHost::new()
            .read(Path::new("/etc/hostname"))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(err.raw_os_error(), Some(2));
    }

    #[test]
    fn glob_matches_as_glob3() {
        let host = MemoryHost::new()
            .file("/c/a.conf", "")
            .file("/c/.b.conf", "")
            .file("/c/sub/c.conf", "")
            .file("/c/D.CONF", "");
        let got = host.glob("/c/*.conf").unwrap();
        assert_eq!(got, [PathBuf::from("/c/a.conf")]);
        assert_eq!(host.glob("/c/*/*.conf").unwrap().len(), 1);
        assert!(matches!(host.glob("/c/[.conf"), Err(GlobError::Pattern(_))));
    }

    #[test]
    fn names_resolve_with_the_port() {
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let host = MemoryHost::new().name("a", &[ip]);
        assert_eq!(host.resolve("a", 81).unwrap(), [SocketAddr::new(ip, 81)]);
        assert!(host.resolve("b", 81).is_err());
    }
}
