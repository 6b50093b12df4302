//! Helpers shared by the integration tests: hosts that need no DNS, and temp folders.

#![allow(dead_code)]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use ringfront_config::{parse_str, Config, ConfigError, GlobError, Host, MemoryHost, OsHost};

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|ip| ip.parse().unwrap()).collect()
}

/// A fixed table instead of DNS, and no files: `backend.test` and `localhost` have one
/// address, `multi.test` two.
pub fn dns() -> MemoryHost {
    MemoryHost::new()
        .name("backend.test", &ips(&["127.0.0.1"]))
        .name("localhost", &ips(&["127.0.0.1"]))
        .name("multi.test", &ips(&["10.0.0.1", "10.0.0.2"]))
}

/// This machine's files with the [`dns`] table for names.
pub struct Disk(MemoryHost);

/// The disk, for the tests that write real files.
pub fn disk() -> Disk {
    Disk(dns())
}

impl Host for Disk {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        OsHost.read(path)
    }

    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        OsHost.glob(pattern)
    }

    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.0.resolve(name, port)
    }

    fn file_key(&self, path: &Path) -> PathBuf {
        OsHost.file_key(path)
    }
}

pub const FILE: &str = "/t/conf/x.conf";

pub fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_str(text, Path::new(FILE), &dns())
}

/// Parses `http { BODY }` with an events block.
pub fn http(body: &str) -> Config {
    match parse(&format!("events {{}}\nhttp {{\n{body}\n}}\n")) {
        Ok(c) => c,
        Err(e) => panic!("config should load: {e}"),
    }
}

/// A fresh, empty folder under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringfront-config-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}
