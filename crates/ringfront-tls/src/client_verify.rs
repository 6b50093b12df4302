//! `ssl_verify_client`: as nginx does, the handshake asks for a certificate and always
//! completes; whether the certificate verified is decided after it (`$ssl_client_verify`),
//! and the HTTP layer answers 400 for a missing (`on`) or failed (`on`, `optional`)
//! certificate. The signature that proves the client holds the key is checked during the
//! handshake, as always.

use std::sync::Arc;

use ringfront_config::{ServerSsl, VerifyClient};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::error::TlsError;

/// Asks for a certificate, accepts whatever comes (or nothing); [`Verdict`] judges it later.
#[derive(Debug)]
pub struct Requesting {
    inner: Arc<dyn ClientCertVerifier>,
    /// The handshake signature is checked with these against the certificate's key, read
    /// straight from its DER, so X.509 v1 certificates (which webpki will not parse) work
    /// as in nginx.
    algs: rustls::crypto::WebPkiSupportedAlgorithms,
    /// The CA names the CertificateRequest lists: `ssl_client_certificate`'s, as OpenSSL's
    /// `SSL_load_client_CA_file` reads them (duplicates dropped); never
    /// `ssl_trusted_certificate`'s.
    hints: Vec<DistinguishedName>,
}

impl ClientCertVerifier for Requesting {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crate::spki::verify_signature(message, cert, dss, &self.algs, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crate::spki::verify_signature(message, cert, dss, &self.algs, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The verifier the handshake uses, and the judge of the certificate afterwards.
pub struct ClientAuth {
    pub handshake: Arc<dyn ClientCertVerifier>,
    pub judge: Option<Verdict>,
}

/// Verifies a client's chain against the configured CAs, within `ssl_verify_depth`.
#[derive(Debug, Clone)]
pub struct Verdict {
    verifier: Arc<dyn ClientCertVerifier>,
    depth: u32,
    pub mode: VerifyClient,
    /// The configured CA certificates as written: a self-issued client certificate that
    /// is one of them verifies, as in OpenSSL (webpki takes no CA as an end entity).
    anchors: Arc<[CertificateDer<'static>]>,
    /// For the signatures of the chain's certificates.
    algs: rustls::crypto::WebPkiSupportedAlgorithms,
    /// `ssl_crl`: checked over the path once the rest verified (crl.rs).
    crls: Option<Arc<[crate::crl::Crl]>>,
}

impl Verdict {
    /// `$ssl_client_verify`: `SUCCESS`, `FAILED:reason` or `NONE`.
    pub fn judge(&self, chain: Option<&[CertificateDer<'static>]>) -> String {
        let Some((leaf, rest)) = chain.and_then(|c| c.split_first()) else {
            return "NONE".into();
        };
        if rest.is_empty() && self.anchors.contains(leaf) && crate::client_cert::self_issued(leaf) {
            return match crate::client_cert::time_problem(leaf) {
                None => self.revocation(&[leaf]),
                Some(why) => format!("FAILED:{why}"),
            };
        }
        // The path and depth as OpenSSL's; then webpki on it (times, revocation lists).
        let path = match crate::chain::build(leaf, rest, &self.anchors, self.depth, &self.algs) {
            Ok(p) => p,
            Err(why) => return format!("FAILED:{why}"),
        };
        let sent: Vec<CertificateDer<'static>> = path[1..]
            .iter()
            .filter(|c| !self.anchors.contains(c))
            .map(|c| (*c).clone())
            .collect();
        match self
            .verifier
            .verify_client_cert(leaf, &sent, UnixTime::now())
        {
            Ok(_) => self.revocation(&path),
            Err(e) if webpki_refuses_the_leaf(&e) => {
                match path
                    .iter()
                    .find_map(|c| crate::client_cert::time_problem(c))
                {
                    None => self.revocation(&path),
                    Some(why) => format!("FAILED:{why}"),
                }
            }
            Err(e) => format!("FAILED:{}", reason(&e)),
        }
    }

    /// The verified path of a chain `judge` found `SUCCESS`: the leaf first, the trusted
    /// root last (what `ssl_ocsp` asks about).
    pub(crate) fn path(&self, chain: &[CertificateDer<'static>]) -> Vec<CertificateDer<'static>> {
        let Some((leaf, rest)) = chain.split_first() else {
            return Vec::new();
        };
        match crate::chain::build(leaf, rest, &self.anchors, self.depth, &self.algs) {
            Ok(p) => p.into_iter().cloned().collect(),
            Err(_) => vec![leaf.clone()],
        }
    }

    /// `SUCCESS`, or the revocation lists' verdict on a path that verified otherwise
    /// (OpenSSL checks them first, but a later error would replace theirs).
    fn revocation(&self, path: &[&CertificateDer<'static>]) -> String {
        let Some(lists) = &self.crls else {
            return "SUCCESS".into();
        };
        let path: Vec<&[u8]> = path.iter().map(|c| c.as_ref()).collect();
        let now = UnixTime::now().as_secs() as i64;
        match crate::crl::check(&path, lists, now, &self.algs) {
            Ok(()) => "SUCCESS".into(),
            Err(f) => format!("FAILED:{}", f.text),
        }
    }
}

/// webpki's refusals of a client certificate OpenSSL takes: a CA certificate, or an X.509
/// v1 one (its error types are not public through rustls: read by name).
pub(crate) fn webpki_refuses_the_leaf(e: &rustls::Error) -> bool {
    let text = format!("{e:?}");
    text.contains("CaUsedAsEndEntity") || text.contains("UnsupportedCertVersion")
}

/// OpenSSL's words for the common verification failures.
fn reason(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired | C::ExpiredContext { .. } => "certificate has expired".into(),
            C::NotValidYet | C::NotValidYetContext { .. } => "certificate is not yet valid".into(),
            C::UnknownIssuer => "unable to get local issuer certificate".into(),
            C::BadSignature => "certificate signature failure".into(),
            C::Revoked => "certificate revoked".into(),
            C::UnknownRevocationStatus => "unable to get certificate CRL".into(),
            C::ExpiredRevocationList | C::ExpiredRevocationListContext { .. } => {
                "CRL has expired".into()
            }
            other => format!("{other:?}"),
        },
        other => other.to_string(),
    }
}

/// The verifiers for a server's `ssl_verify_client`.
pub fn client_auth(
    ssl: &ServerSsl,
    provider: &Arc<CryptoProvider>,
) -> Result<ClientAuth, TlsError> {
    if ssl.verify_client == VerifyClient::Off {
        return Ok(ClientAuth {
            handshake: WebPkiClientVerifier::no_client_auth(),
            judge: None,
        });
    }
    let mut roots = rustls::RootCertStore::empty();
    let mut anchors = Vec::new();
    for f in [&ssl.client_certificate, &ssl.trusted_certificate]
        .into_iter()
        .flatten()
    {
        roots.roots.extend(crate::pem::trust_anchors(f)?.roots);
        anchors.extend(crate::pem::certificates(f)?);
    }
    let anchors: Arc<[CertificateDer<'static>]> = anchors.into();
    let place = ssl
        .client_certificate
        .as_ref()
        .or(ssl.trusted_certificate.as_ref());
    let inner = if roots.is_empty() {
        // optional_no_ca without any CA: signatures are still checked, nothing verifies.
        None
    } else {
        let b = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated();
        let built = b.build().map_err(|e| {
            TlsError::at_origin(
                place.map(|f| &f.origin),
                format!("ssl_client_certificate: {e}"),
            )
        })?;
        Some(built)
    };
    // nginx sets OpenSSL's CRL_CHECK | CRL_CHECK_ALL: every certificate of the path
    // needs its issuer's list (crl.rs).
    let crls = ssl.crl.as_ref().map(crate::crl::load).transpose()?;
    let inner = match inner {
        Some(v) => v,
        None => return Ok(no_ca(provider, ssl.verify_client, anchors)),
    };
    Ok(ClientAuth {
        handshake: Arc::new(Requesting {
            inner: inner.clone(),
            algs: provider.signature_verification_algorithms,
            hints: ca_names(ssl)?,
        }),
        judge: Some(Verdict {
            verifier: inner,
            depth: ssl.verify_depth,
            mode: ssl.verify_client,
            anchors,
            algs: provider.signature_verification_algorithms,
            crls,
        }),
    })
}

/// The subjects of `ssl_client_certificate`'s certificates, each once, in file order.
fn ca_names(ssl: &ServerSsl) -> Result<Vec<DistinguishedName>, TlsError> {
    let Some(f) = &ssl.client_certificate else {
        return Ok(Vec::new());
    };
    let mut names: Vec<DistinguishedName> = Vec::new();
    for n in crate::pem::trust_anchors(f)?.subjects() {
        if !names.iter().any(|m| m.as_ref() == n.as_ref()) {
            names.push(n);
        }
    }
    Ok(names)
}

/// `optional_no_ca` with no CA file: ask for a certificate, check the key signature only.
fn no_ca(
    provider: &Arc<CryptoProvider>,
    mode: VerifyClient,
    anchors: Arc<[CertificateDer<'static>]>,
) -> ClientAuth {
    let sig = SignatureOnly(provider.clone());
    let inner: Arc<dyn ClientCertVerifier> = Arc::new(sig);
    ClientAuth {
        handshake: Arc::new(Requesting {
            inner: inner.clone(),
            algs: provider.signature_verification_algorithms,
            hints: Vec::new(),
        }),
        judge: Some(Verdict {
            verifier: inner,
            depth: 100,
            mode,
            anchors,
            algs: provider.signature_verification_algorithms,
            crls: None,
        }),
    }
}

#[derive(Debug)]
struct SignatureOnly(Arc<CryptoProvider>);

impl ClientCertVerifier for SignatureOnly {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
