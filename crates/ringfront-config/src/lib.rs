//! nginx-syntax configuration for ringfront: a lexer and block tree with nginx's quoting and
//! `include`, a directive table with nginx's contexts and messages, and the typed, merged
//! [`model`] the proxy consumes. Pure: no sockets, no clock; files, `include` globs and host
//! names come through the [`Host`] the caller passes ([`load`] uses [`OsHost`], tests and
//! the fuzzer a [`MemoryHost`]).
//!
//! Errors read as nginx's `[emerg]` lines (`unknown directive "foo" in /etc/x.conf:12`);
//! checked against nginx 1.22 with the same files. Where ringfront differs on purpose:
//!
//! - Relative paths (`include`, `root`, `pid`, logs) start at the main file's folder unless a
//!   prefix is given ([`LoadOptions`], nginx's `-p`); `include` always starts there.
//! - A missing `include ...mime.types` is skipped (the Debian layout keeps that file outside
//!   the folder relative includes start at); `types` then holds what the rest wrote.
//! - No access log unless one is written (nginx writes `logs/access.log`).
//! - `keepalive 0` is accepted (none kept, the default; nginx refuses 0).
//! - Variables are checked where they are written, with a place, even if unused.
//! - Accepted and checked, then ignored: [`NOOP_DIRECTIVES`], `error_log` below the main
//!   level, `log_format ... escape=`, `access_log ... buffer= flush=`, the second argument of
//!   `keepalive_timeout`, `listen ... bind deferred`, `proxy_next_upstream
//!   updating`.
//! - Beyond nginx 1.22: `sticky` and `server ... route=` (nginx 1.29.6 / Plus, `sticky.rs`),
//!   `least_time` (nginx Plus), `fair` (third-party, read as `least_time
//!   header`), `all_failed reject|revive` and `passive_health nginx|confirm` (ringfront's
//!   own) in `upstream`; active health checks in nginx Plus syntax (`health_check`, `match`,
//!   `slow_start=`, `api`) and Tengine's (`check`, `check_http_send`,
//!   `check_http_expect_alive`, `check_status`), see `health.rs`. `zone` is checked as nginx
//!   checks it and changes nothing (peer state is always shared); `health_check` does not
//!   need it.
//! - Refused rather than ignored (`"NAME" directive is not supported by ringfront` for a
//!   directive of stock nginx, see `nginx_directives.txt`; "not supported yet" for
//!   parameters and forms):
//!   `resolve`, `service=`, directives inside `if` other than the rewrite module's and
//!   `proxy_pass`/`add_header`/`root`/`access_log`/`error_page`,
//!   `set` of a map/geo/split_clients variable, `listen ... http2` without `ssl`, `listen unix:... ssl`,
//!   `gzip_static on|always`, `worker_cpu_affinity auto MASK`; `worker_processes 0` is
//!   refused.
//! - Include cycles and nesting deeper than 100 levels are errors (nginx would recurse).

mod address;
pub mod auth_basic;
mod build;
mod cidr;
mod custom_vars;
mod directives;
mod error;
mod error_pages;
mod expires;
mod files;
pub mod files_model;
mod geo;
pub mod geo_ranges;
pub mod gzip;
mod handlers;
mod health;
mod host;
mod http;
mod lexer;
mod limit_except;
mod limit_rate;
mod limits;
pub mod limits_model;
mod location;
mod logs;
mod main_conf;
mod map;
pub mod model;
mod nginx_names;
mod noop_args;
mod options;
pub mod pcre;
mod proxy_headers;
pub mod proxy_headers_model;
pub mod realip;
pub mod request_body;
mod resolve;
pub mod resolver;
mod response_headers;
pub mod retry_budget;
mod rewrite;
mod rewrite_if;
pub mod rewrite_model;
mod server;
mod settings;
mod split_clients;
mod ssl;
pub mod ssl_model;
pub mod sticky;
mod table;
mod template;
mod tree;
mod units;
pub mod unix_addr;
mod upstream;
mod upstream_state;
mod values;

use std::path::Path;

pub use address::parse_addr_port;
pub use cidr::Cidr;
pub use error::ConfigError;
pub use files_model::{Expires, Files, IfModifiedSince, TryFiles, TryLast};
pub use gzip::{Gzip, GzipProxied, GzipTypes};
pub use host::{GlobError, Host, MemoryHost, OsHost};
pub use limits_model::*;
pub use model::*;
pub use options::LoadOptions;
pub use proxy_headers_model::*;
pub use realip::{RealIp, RealIpHeader, Trusted};
pub use request_body::{InFileOnly, RequestBody, TempPath};
pub use rewrite_model::*;
pub use ssl_model::*;
pub use table::NOOP_DIRECTIVES;
pub use template::{parse_template, variable, Uses};
pub use units::{parse_size, parse_time};

/// Loads the configuration at `path` from this machine: its files, its resolver, and its
/// current folder for a relative `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with(&build::absolute(path), &OsHost)
}

/// Loads the configuration at `path`, reading it, its includes and host names through
/// `host`. Literal IP addresses never reach the host's resolver.
pub fn load_with(path: &Path, host: &dyn Host) -> Result<Config, ConfigError> {
    load_with_options(path, host, &LoadOptions::default())
}

/// [`load_with`] with nginx's command-line additions: a prefix, `-g` directives, the `-e`
/// error log.
pub fn load_with_options(
    path: &Path,
    host: &dyn Host,
    opts: &LoadOptions,
) -> Result<Config, ConfigError> {
    let path = build::cleaned(path);
    let text = host
        .read(&path)
        .map_err(|e| ConfigError::new(error::os_failure("open()", &path, &e)))?;
    build::build(&text, &path, host, opts)
}

/// Parses configuration text as if it were the file `path`: includes and relative paths are
/// taken from its folder and read through `host`, as are host names. Pure: all it learns
/// about the outside world comes from `host` (a [`MemoryHost`] makes it a function of its
/// arguments).
pub fn parse_str(text: &str, path: &Path, host: &dyn Host) -> Result<Config, ConfigError> {
    build::build(
        text.as_bytes(),
        &build::cleaned(path),
        host,
        &LoadOptions::default(),
    )
}

impl Config {
    /// The upstream group a [`ProxyTarget::Upstream`] names.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.http.upstreams.iter().find(|u| u.name == name)
    }

    /// The `warn` lines of `listen ... http2` (one per address, in the order of the
    /// configuration): ringfront accepts the parameter on TLS addresses and speaks
    /// HTTP/1.1 there (ALPN offers `http/1.1` only).
    pub fn http2_warnings(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for l in self.http.servers.iter().flat_map(|s| &s.listens) {
            let name = l.name();
            if l.http2 && !names.contains(&name) {
                names.push(name);
            }
        }
        names
            .into_iter()
            .map(|n| {
                format!(
                    "\"http2\" parameter of the \"listen\" directive is accepted, but \
                     ringfront speaks HTTP/1.1 on {n}"
                )
            })
            .collect()
    }
}
