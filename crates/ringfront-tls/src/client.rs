//! TLS to upstreams (`proxy_pass https://`): a rustls `ClientConfig` from `proxy_ssl_*`
//! with nginx's defaults — no certificate verification unless `proxy_ssl_verify on`, no SNI
//! unless `proxy_ssl_server_name on`, sessions reused unless `proxy_ssl_session_reuse off` —
//! and the client handshake over a connected socket.

use std::io;
use std::path::Path;
use std::sync::Arc;

use monoio::net::TcpStream;
use ringfront_config::ProxySsl;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientConnection, Resumption, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::error::TlsError;
use crate::records::Incoming;
use crate::stream::TlsStream;

/// `proxy_ssl_verify off`: any certificate is accepted (X.509 v1 ones too, as OpenSSL), but
/// the handshake signature is still checked against the certificate's key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        crate::spki::verify_signature(message, cert, dss, algs, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        crate::spki::verify_signature(message, cert, dss, algs, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// How a location speaks TLS to its upstream.
#[derive(Debug)]
pub struct UpstreamTls {
    pub config: Arc<ClientConfig>,
    /// `proxy_ssl_certificate` with variables: `config` offers no certificate, and
    /// [`UpstreamTls::with_certificate`] makes the settings that offer one.
    pub dynamic: Option<crate::dynamic_cert::DynamicCertificates>,
    /// Which load of a variable certificate these settings hold (0: none), so that a
    /// connection made before a file changed is not pooled for the requests after.
    pub generation: u64,
}

impl UpstreamTls {
    /// These settings offering the certificate and key of the files named (for
    /// `proxy_ssl_certificate` with variables; cached per worker by path).
    pub fn with_certificate(&self, cert: &Path, key: &Path) -> Result<Arc<UpstreamTls>, TlsError> {
        match &self.dynamic {
            Some(d) => d.settings(&self.config, cert, key),
            None => Err(TlsError("proxy_ssl_certificate has no variables".into())),
        }
    }
}

/// Builds the client settings of one location's `proxy_ssl_*`.
pub fn upstream_tls(p: &ProxySsl) -> Result<UpstreamTls, TlsError> {
    let provider = crate::server::provider(p.protocols, &p.ciphers, "auto")
        .map_err(|e| TlsError::at_origin(p.ciphers_origin.as_ref(), e))?;
    let verifier: Arc<dyn ServerCertVerifier> = if p.verify {
        let mut roots = rustls::RootCertStore::empty();
        if let Some(f) = &p.trusted_certificate {
            roots = crate::pem::trust_anchors(f)?;
        }
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| TlsError(format!("proxy_ssl_trusted_certificate: {e}")))?;
        let crls = p.crl.as_ref().map(crate::crl::load).transpose()?;
        let anchors = match &p.trusted_certificate {
            Some(f) => crate::pem::certificates(f)?,
            None => Vec::new(),
        };
        Arc::new(crate::upstream_verify::NginxVerifier {
            inner,
            anchors,
            algs: provider.signature_verification_algorithms,
            crls,
            depth: p.verify_depth,
        })
    } else {
        Arc::new(AnyCertificate(provider.clone()))
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&crate::server::versions(p.protocols))
        .map_err(|e| TlsError(format!("proxy_ssl_protocols: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match &p.certificate {
        // Checked and loaded as the server's certificates are (X.509 v1 ones and
        // encrypted keys included), then always offered.
        Some(ck) => builder.with_client_cert_resolver(Arc::new(OwnCertificate(
            crate::pem::certified_key(ck, &provider)?,
        ))),
        None => builder.with_no_client_auth(),
    };
    config.enable_sni = p.server_name;
    config.resumption = if p.session_reuse {
        Resumption::in_memory_sessions(256)
    } else {
        Resumption::disabled()
    };
    let dynamic = match &p.certificate_vars {
        Some(v) => Some(crate::dynamic_cert::DynamicCertificates::new(
            provider.clone(),
            v.passwords.as_ref(),
            p.session_reuse,
        )?),
        None => None,
    };
    Ok(UpstreamTls {
        config: Arc::new(config),
        dynamic,
        generation: 0,
    })
}

/// The name a handshake verifies (and sends as SNI when enabled): a host name or an address.
pub fn server_name(name: &str) -> io::Result<ServerName<'static>> {
    let host = name
        .strip_prefix('[')
        .and_then(|h| h.split_once(']').map(|(h, _)| h))
        .unwrap_or_else(|| {
            name.rsplit_once(':').map_or(name, |(h, p)| {
                if p.bytes().all(|b| b.is_ascii_digit()) {
                    h
                } else {
                    name
                }
            })
        });
    ServerName::try_from(host.to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// Runs a client handshake over `io` (the caller bounds it with `proxy_connect_timeout`).
pub async fn connect(
    io: TcpStream,
    tls: &UpstreamTls,
    name: ServerName<'static>,
) -> io::Result<TlsStream<ClientConnection>> {
    let conn = ClientConnection::new(tls.config.clone(), name).map_err(crate::records::invalid)?;
    let mut s = TlsStream::new(io, conn, Incoming::default());
    s.handshake().await?;
    Ok(s)
}

/// `proxy_ssl_certificate`: the one certificate offered whenever an upstream asks.
#[derive(Debug)]
pub(crate) struct OwnCertificate(pub(crate) Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for OwnCertificate {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}
