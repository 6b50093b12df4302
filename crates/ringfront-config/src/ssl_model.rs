//! The TLS part of the model: a server's `ssl_*` settings (for its `listen ... ssl`
//! addresses) and a location's `proxy_ssl_*` settings (for `proxy_pass https://`). Paths
//! and names only: certificates are read and checked when the proxy builds its snapshot
//! (`ringfront-tls`), so that `-t` and a reload report them with the directive's place.

use std::path::PathBuf;
use std::time::Duration;

use crate::model::{Origin, Template};

/// TLS versions ringfront can offer. `TLSv1` and `TLSv1.1` are accepted in `ssl_protocols`
/// and not offered (Debian's OpenSSL refuses them at its default security level too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SslProtocols {
    pub tls12: bool,
    pub tls13: bool,
}

impl Default for SslProtocols {
    fn default() -> Self {
        SslProtocols {
            tls12: true,
            tls13: true,
        }
    }
}

/// A file named by a directive, with that directive's place (for errors reading it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslFile {
    pub path: PathBuf,
    pub origin: Origin,
}

/// `ssl_session_cache`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionCache {
    /// `off`: no cache, and clients are told sessions cannot be reused.
    Off,
    /// `none` (nginx's default): no cache kept.
    #[default]
    None,
    /// `builtin[:SIZE]` and/or `shared:NAME:SIZE`; `sessions` is how many sessions the one
    /// cache (shared by every worker) keeps: SIZE counts sessions for `builtin`, and bytes
    /// for `shared` (about 4000 sessions per megabyte, as nginx documents).
    Cache { sessions: usize },
}

/// `ssl_verify_client`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VerifyClient {
    #[default]
    Off,
    On,
    Optional,
    OptionalNoCa,
}

/// One `ssl_certificate` with its `ssl_certificate_key` (paired in the order written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertKey {
    pub cert: SslFile,
    pub key: SslFile,
    /// `ssl_password_file` / `proxy_ssl_password_file`: passphrases for an encrypted key,
    /// one per line, tried in order.
    pub passwords: Option<SslFile>,
}

/// `proxy_ssl_certificate` / `proxy_ssl_certificate_key` with variables (nginx 1.21.0):
/// both evaluated for each request, an empty certificate meaning none, the files read
/// then (relative names from `prefix`, the configuration's folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertKeyTemplate {
    pub cert: Template,
    pub key: Template,
    pub prefix: PathBuf,
    /// `proxy_ssl_password_file`, read once when the configuration loads (as nginx's
    /// `ngx_ssl_preserve_passwords`).
    pub passwords: Option<SslFile>,
}

/// A server's TLS settings (`http`-level values inherited). Used for every `listen ... ssl`
/// address the server has; SNI chooses among the servers of one address as `server_name`
/// does for `Host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSsl {
    pub certificates: Vec<CertKey>,
    pub protocols: SslProtocols,
    /// `ssl_ciphers` as written (OpenSSL syntax), default `HIGH:!aNULL:!MD5`.
    pub ciphers: String,
    pub ciphers_origin: Option<Origin>,
    pub prefer_server_ciphers: bool,
    pub session_cache: SessionCache,
    /// `ssl_session_timeout`, default 5m.
    pub session_timeout: Duration,
    /// `ssl_session_tickets`, default on.
    pub session_tickets: bool,
    /// `ssl_session_ticket_key` files in order: the first encrypts, all decrypt.
    pub ticket_keys: Vec<SslFile>,
    pub dhparam: Option<SslFile>,
    /// `ssl_ecdh_curve`, default `auto`; colon-separated OpenSSL curve names otherwise.
    pub ecdh_curve: String,
    pub ecdh_curve_origin: Option<Origin>,
    pub verify_client: VerifyClient,
    /// `ssl_verify_depth`, default 1.
    pub verify_depth: u32,
    pub client_certificate: Option<SslFile>,
    pub trusted_certificate: Option<SslFile>,
    /// `ssl_crl`: revocation lists every certificate of a client's chain is checked
    /// against (OpenSSL's `X509_V_FLAG_CRL_CHECK_ALL`, as nginx sets it).
    pub crl: Option<SslFile>,
    pub reject_handshake: bool,
    /// `ssl_stapling on` with its `ssl_stapling_*` settings; `None` when off.
    pub stapling: Option<Stapling>,
    /// `ssl_ocsp on|leaf` with `ssl_ocsp_responder` and `ssl_ocsp_cache`; `None` when off.
    pub ocsp: Option<ClientOcsp>,
}

/// `ssl_ocsp`: a verified client certificate's status asked of its OCSP responder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOcsp {
    /// `leaf`: only the client's own certificate; `on`: every one but the root.
    pub leaf_only: bool,
    /// `ssl_ocsp_responder`: instead of each certificate's AIA URL.
    pub responder: Option<String>,
    /// `ssl_ocsp_cache shared:NAME:SIZE`: the zone's name (responses kept until their
    /// nextUpdate, shared by the servers naming the same zone).
    pub cache: Option<String>,
}

/// `ssl_stapling on`: an OCSP response stapled to each certificate's handshakes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stapling {
    /// `ssl_stapling_file`: a DER response stapled as it is, never fetched.
    pub file: Option<SslFile>,
    /// `ssl_stapling_responder`: the URL used instead of the certificate's AIA one.
    pub responder: Option<String>,
    /// `ssl_stapling_verify`: a fetched response's signature is checked.
    pub verify: bool,
}

impl Default for ServerSsl {
    fn default() -> Self {
        ServerSsl {
            certificates: Vec::new(),
            protocols: SslProtocols::default(),
            ciphers: "HIGH:!aNULL:!MD5".into(),
            ciphers_origin: None,
            prefer_server_ciphers: false,
            session_cache: SessionCache::None,
            session_timeout: Duration::from_secs(300),
            session_tickets: true,
            ticket_keys: Vec::new(),
            dhparam: None,
            ecdh_curve: "auto".into(),
            ecdh_curve_origin: None,
            verify_client: VerifyClient::Off,
            verify_depth: 1,
            client_certificate: None,
            trusted_certificate: None,
            crl: None,
            reject_handshake: false,
            stapling: None,
            ocsp: None,
        }
    }
}

/// A location's `proxy_ssl_*` settings, used when its `proxy_pass` is `https://`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxySsl {
    /// `proxy_ssl_verify`, default off (any certificate is accepted, as in nginx).
    pub verify: bool,
    /// `proxy_ssl_verify_depth`, default 1.
    pub verify_depth: u32,
    pub trusted_certificate: Option<SslFile>,
    /// `proxy_ssl_crl`: revocation lists for the upstream's chain.
    pub crl: Option<SslFile>,
    /// `proxy_ssl_server_name`, default off: no SNI is sent.
    pub server_name: bool,
    /// `proxy_ssl_name`, default `$proxy_host`.
    pub name: Option<Template>,
    pub protocols: SslProtocols,
    /// `proxy_ssl_ciphers`, default `DEFAULT`.
    pub ciphers: String,
    pub ciphers_origin: Option<Origin>,
    pub certificate: Option<CertKey>,
    /// The certificate when its names have variables (`certificate` is then `None`).
    pub certificate_vars: Option<CertKeyTemplate>,
    /// `proxy_ssl_session_reuse`, default on.
    pub session_reuse: bool,
}

impl Default for ProxySsl {
    fn default() -> Self {
        ProxySsl {
            verify: false,
            verify_depth: 1,
            trusted_certificate: None,
            crl: None,
            server_name: false,
            name: None,
            protocols: SslProtocols::default(),
            ciphers: "DEFAULT".into(),
            ciphers_origin: None,
            certificate: None,
            certificate_vars: None,
            session_reuse: true,
        }
    }
}
