//! A server's `ssl_*` settings turned into a rustls `ServerConfig`: certificates (an RSA and
//! an ECDSA one side by side, chosen by what the client can verify), protocols, ciphers,
//! curves, session cache and tickets, client certificates. Built once per configuration
//! load and shared by every worker.

use std::sync::Arc;

use ringfront_config::{ServerSsl, SessionCache, SslFile, SslProtocols};
use rustls::crypto::{aws_lc_rs, CryptoProvider, SupportedKxGroup};
use rustls::server::{
    ClientHello, NoServerSessionStorage, ResolvesServerCert, ServerSessionMemoryCache,
};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, SupportedProtocolVersion};

use crate::client_verify::{client_auth, Verdict};
use crate::error::TlsError;
use crate::stapling::Slot;

/// What a handshake that SNI led to this server gets.
#[derive(Debug, Clone)]
pub enum ServerHandshake {
    /// `ssl_reject_handshake on`: an `unrecognized_name` alert.
    Reject,
    Serve(Arc<ServerTls>),
}

#[derive(Debug)]
pub struct ServerTls {
    pub config: Arc<ServerConfig>,
    /// Judges the client's certificate after the handshake (`ssl_verify_client`).
    pub verdict: Option<Verdict>,
    /// `ssl_ocsp`: asked after the handshake of a verified client certificate.
    pub(crate) ocsp: Option<crate::client_ocsp::OcspCheck>,
}

/// The certificates of one server; the first the client can verify is used.
#[derive(Debug)]
struct Certs(Vec<Slot>);

impl ResolvesServerCert for Certs {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let schemes = hello.signature_schemes();
        self.0
            .iter()
            .find(|s| s.key().key.choose_scheme(schemes).is_some())
            .or_else(|| self.0.first())
            .map(Slot::current)
    }
}

pub(crate) fn versions(p: SslProtocols) -> Vec<&'static SupportedProtocolVersion> {
    let mut v = Vec::new();
    if p.tls13 {
        v.push(&rustls::version::TLS13);
    }
    if p.tls12 {
        v.push(&rustls::version::TLS12);
    }
    v
}

/// `ssl_ecdh_curve`: `auto`, or OpenSSL curve names separated by colons.
fn curves(list: &str) -> Result<Vec<&'static dyn SupportedKxGroup>, String> {
    use aws_lc_rs::kx_group as k;
    if list.eq_ignore_ascii_case("auto") {
        return Ok(aws_lc_rs::default_provider().kx_groups);
    }
    let mut out: Vec<&'static dyn SupportedKxGroup> = Vec::new();
    for name in list.split(':').filter(|n| !n.is_empty()) {
        out.push(match name {
            "X25519" | "x25519" => k::X25519,
            "prime256v1" | "secp256r1" | "P-256" => k::SECP256R1,
            "secp384r1" | "P-384" => k::SECP384R1,
            "X25519MLKEM768" => k::X25519MLKEM768,
            other => {
                return Err(format!(
                    "SSL_CTX_set1_curves_list(\"{list}\") failed: curve \"{other}\" cannot be offered by ringfront (it offers X25519, prime256v1, secp384r1, X25519MLKEM768)"
                ))
            }
        });
    }
    Ok(out)
}

/// The provider with the chosen suites and groups.
pub(crate) fn provider(
    protocols: SslProtocols,
    ciphers: &str,
    curve_list: &str,
) -> Result<Arc<CryptoProvider>, String> {
    let mut suites = Vec::new();
    if protocols.tls13 {
        suites.extend(crate::ciphers::tls13_suites());
    }
    if protocols.tls12 {
        suites.extend(crate::ciphers::tls12_suites(ciphers)?);
    }
    Ok(Arc::new(CryptoProvider {
        cipher_suites: suites,
        kx_groups: curves(curve_list)?,
        ..aws_lc_rs::default_provider()
    }))
}

/// `ssl_dhparam`: checked to be a PEM DH parameters file; TLS 1.2 DHE suites are not
/// offered (rustls has none), so it changes nothing.
fn check_dhparam(f: &SslFile) -> Result<(), TlsError> {
    let text = std::fs::read(&f.path).unwrap_or_default();
    let found = text.windows(24).any(|w| w == b"-----BEGIN DH PARAMETERS");
    if found {
        return Ok(());
    }
    Err(TlsError::at(
        f,
        format!("PEM_read_bio_DHparams(\"{}\") failed", f.path.display()),
    ))
}

/// Builds the handshake settings of one server.
pub fn server_tls(ssl: &ServerSsl) -> Result<ServerHandshake, TlsError> {
    if ssl.reject_handshake {
        return Ok(ServerHandshake::Reject);
    }
    let provider = provider(ssl.protocols, &ssl.ciphers, &ssl.ecdh_curve).map_err(|e| {
        let o = if e.contains("curve") {
            ssl.ecdh_curve_origin.as_ref()
        } else {
            ssl.ciphers_origin.as_ref()
        };
        TlsError::at_origin(o, e)
    })?;
    if let Some(f) = &ssl.dhparam {
        check_dhparam(f)?;
    }
    let mut keys = Vec::new();
    for ck in &ssl.certificates {
        let key = crate::pem::certified_key(ck, &provider)?;
        keys.push(crate::stapling::slot(key, ck, ssl)?);
    }
    let auth = client_auth(ssl, &provider)?;
    let ocsp = match &ssl.ocsp {
        Some(o) => Some(crate::client_ocsp::OcspCheck::new(o).map_err(TlsError)?),
        None => None,
    };
    let mut config = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(ssl.protocols))
        .map_err(|e| TlsError(format!("ssl_protocols: {e}")))?
        .with_client_cert_verifier(auth.handshake)
        .with_cert_resolver(Arc::new(Certs(keys)));
    config.ignore_client_order = ssl.prefer_server_ciphers;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let timeout = u32::try_from(ssl.session_timeout.as_secs()).unwrap_or(u32::MAX);
    config.session_storage = match ssl.session_cache {
        SessionCache::Cache { sessions } => Arc::new(crate::session_expiry::Cache {
            inner: ServerSessionMemoryCache::new(sessions.max(1)),
            timeout,
        }),
        SessionCache::Off | SessionCache::None => Arc::new(NoServerSessionStorage {}),
    };
    if ssl.session_tickets {
        config.ticketer = Arc::new(crate::session_expiry::Tickets {
            inner: crate::tickets::ticketer(&ssl.ticket_keys, timeout)?,
            timeout,
        });
    } else if !matches!(ssl.session_cache, SessionCache::Cache { .. }) {
        config.send_tls13_tickets = 0;
    }
    Ok(ServerHandshake::Serve(Arc::new(ServerTls {
        config: Arc::new(config),
        verdict: auth.judge,
        ocsp,
    })))
}
