//! nginx-syntax configuration for ringfront: a lexer and block tree with nginx's quoting and
//! `include`, a directive table with nginx's contexts and messages, and the typed, merged
//! [`model`] the proxy consumes. Pure: no sockets, no clock; host names are resolved through
//! the resolver the caller passes ([`load`] uses the system's).

mod address;
mod build;
mod directives;
mod error;
mod handlers;
mod http;
mod lexer;
mod location;
mod logs;
mod main_conf;
pub mod model;
mod resolve;
mod server;
mod settings;
mod table;
mod template;
mod tree;
mod units;
mod upstream;
mod values;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;

pub use address::Resolver;
pub use error::ConfigError;
pub use model::*;
pub use table::NOOP_DIRECTIVES;
pub use template::{parse_template, variable};
pub use units::{parse_size, parse_time};

/// Resolves `host:port` with the system resolver (`getaddrinfo`).
fn system_resolver(host_port: &str) -> std::io::Result<Vec<SocketAddr>> {
    Ok(host_port.to_socket_addrs()?.collect())
}

/// Loads the configuration at `path`, resolving host names with the system resolver.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with(path, &system_resolver)
}

/// Loads the configuration at `path`, resolving host names (given as `host:port`) with
/// `resolver`. Literal IP addresses never reach the resolver.
pub fn load_with(
    path: &Path,
    resolver: &dyn Fn(&str) -> std::io::Result<Vec<SocketAddr>>,
) -> Result<Config, ConfigError> {
    let path = build::absolute(path);
    let text = std::fs::read(&path)
        .map_err(|e| ConfigError::new(error::os_failure("open()", &path, &e)))?;
    build::build(&text, &path, resolver)
}

/// Parses configuration text as if it were the file `path` (includes and relative paths are
/// taken from its folder); host names use the system resolver.
pub fn parse_str(text: &str, path: &Path) -> Result<Config, ConfigError> {
    build::build(text.as_bytes(), &build::absolute(path), &system_resolver)
}

/// Like [`parse_str`], resolving host names with `resolver`.
pub fn parse_str_with(
    text: &str,
    path: &Path,
    resolver: &dyn Fn(&str) -> std::io::Result<Vec<SocketAddr>>,
) -> Result<Config, ConfigError> {
    build::build(text.as_bytes(), &build::absolute(path), resolver)
}

impl Config {
    /// The upstream group a [`ProxyTarget::Upstream`] names.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.http.upstreams.iter().find(|u| u.name == name)
    }
}
