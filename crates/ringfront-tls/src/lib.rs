//! TLS for ringfront on the io_uring path: rustls driven with owned buffers through monoio
//! (no readiness shim), server handshakes chosen by SNI among nginx `server` blocks, client
//! handshakes to upstreams, and rustls configurations built from nginx's `ssl_*` and
//! `proxy_ssl_*` directives with nginx's wording for what cannot be loaded.

mod accept;
mod chain;
mod ciphers;
mod client;
pub mod client_cert;
mod client_ocsp;
mod client_verify;
mod crl;
mod der;
mod dynamic_cert;
mod encrypted_key;
mod error;
mod hkdf;
mod info;
mod iobuf;
mod ocsp;
mod offered;
mod pem;
mod records;
mod server;
mod session_expiry;
mod session_id;
mod spki;
mod split;
mod stapling;
mod stream;
mod tickets;
mod upstream_verify;

pub use accept::{accept, check_ocsp, Accepted, HandshakeError};
pub use client::{connect, server_name, upstream_tls, UpstreamTls};
pub use client_verify::Verdict;
pub use crl::VerifyFault;
pub use error::TlsError;
pub use hkdf::keyed as keyed_hkdf;
pub use info::Info;
/// The TLS library itself, for the types this crate's API names.
pub use rustls;
pub use rustls::client::ClientConnection;
pub use rustls::server::ServerConnection;
pub use server::{server_tls, ServerHandshake, ServerTls};
pub use split::{TlsReadHalf, TlsWriteHalf};
pub use stream::TlsStream;

/// `(2: No such file or directory)`-style text of an I/O error, as nginx writes errno.
pub(crate) fn error_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let t = e.to_string();
            let t = t.split(" (os error").next().unwrap_or(&t).to_string();
            format!("{n}: {t}")
        }
        None => e.to_string(),
    }
}
