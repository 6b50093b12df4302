//! Test-only support for ringfront's integration tests and demos: a programmable HTTP/1.1
//! [`Backend`] with failure modes, loopback helpers ([`free_port`], [`FullBacklogListener`]),
//! process harnesses for ringfront ([`Ringfront`]) and real nginx ([`Nginx`]), and small HTTP
//! clients ([`http::get`], [`http::Client`]), and headless Chromium ([`browser`]). std threads
//! and blocking sockets only.
//!
//! Everything binds 127.0.0.1 only.

// A `GlobalAlloc` is unsafe to implement; this one only counts and delegates to `System`.
#[allow(unsafe_code)]
pub mod alloc_count;
mod backend;
pub mod browser;
pub mod dns;
pub mod golden;
pub mod http;
mod net;
mod nginx;
pub mod pki;
mod process;
mod raw;
mod ringfront;
mod wire;

pub use backend::{body_pattern, Backend, Canned, Mode, Recorded};
pub use dns::DnsServer;
pub use http::{Client, Response};
pub use net::{free_port, free_port_pair, fresh_listener, reset, FullBacklogListener, MaskPort};
pub use nginx::{Nginx, NGINX_BIN};
pub use process::TempDir;
pub use raw::{After, RawBackend};
pub use ringfront::{binary_path as ringfront_binary, Ringfront};

/// Signal numbers for [`Ringfront::signal`] and [`Nginx::signal`].
pub use libc::{SIGHUP, SIGINT, SIGKILL, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH};
