//! Helpers shared by the integration tests: a resolver that needs no DNS and temp folders.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use ringfront_config::{parse_str_with, Config, ConfigError};

/// A fixed table instead of DNS: `backend.test` has one address, `multi.test` two.
pub fn dns(host_port: &str) -> std::io::Result<Vec<SocketAddr>> {
    let (host, port) = host_port.rsplit_once(':').unwrap_or((host_port, "80"));
    let port: u16 = port.parse().map_err(std::io::Error::other)?;
    let ips: &[&str] = match host {
        "backend.test" | "localhost" => &["127.0.0.1"],
        "multi.test" => &["10.0.0.1", "10.0.0.2"],
        _ => return Err(std::io::Error::other("not in the test table")),
    };
    Ok(ips
        .iter()
        .map(|ip| SocketAddr::new(ip.parse().unwrap(), port))
        .collect())
}

pub const FILE: &str = "/t/conf/x.conf";

pub fn parse(text: &str) -> Result<Config, ConfigError> {
    parse_str_with(text, Path::new(FILE), &dns)
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
