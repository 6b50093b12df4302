//! Reading certificates and keys from PEM files, with nginx's (OpenSSL's) wording when they
//! cannot be read, followed by the place of the directive that named them.

use std::sync::Arc;

use ringfront_config::SslFile;
use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};

use crate::error::TlsError;

fn read(f: &SslFile, what: &str, call: &str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(&f.path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "No such file or directory",
            std::io::ErrorKind::PermissionDenied => "Permission denied",
            _ => "cannot read",
        };
        TlsError::at(
            f,
            format!(
                "cannot load {what} \"{}\": {call} failed (SSL: error:80000002:system library::{reason})",
                f.path.display()
            ),
        )
    })
}

/// The revocation lists of a PEM file (`ssl_crl`, `proxy_ssl_crl`); at least one.
pub fn crls(f: &SslFile) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let bytes = read(f, "CRL", "X509_LOOKUP_load_file()")?;
    let lists: Result<Vec<_>, pem::Error> =
        CertificateRevocationListDer::pem_slice_iter(&bytes).collect();
    match lists {
        Ok(l) if !l.is_empty() => Ok(l),
        _ => Err(TlsError::at(
            f,
            format!(
                "X509_LOOKUP_load_file(\"{}\") failed (SSL: error:0480006C:PEM routines::no start line)",
                f.path.display()
            ),
        )),
    }
}

/// The certificates of a PEM file in order (a chain: the leaf first); at least one.
pub fn certificates(f: &SslFile) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    certificates_named(f, "certificate")
}

fn certificates_named(f: &SslFile, what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(f, what, "BIO_new_file()")?;
    let certs: Result<Vec<_>, pem::Error> = CertificateDer::pem_slice_iter(&bytes).collect();
    let bad = |why: &str| {
        TlsError::at(
            f,
            format!(
                "cannot load {what} \"{}\": PEM_read_bio_X509_AUX() failed (SSL: {why})",
                f.path.display()
            ),
        )
    };
    match certs {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(bad(
            "error:0480006C:PEM routines::no start line:Expecting: TRUSTED CERTIFICATE",
        )),
        Err(e) => Err(bad(&format!(
            "error:0480006C:PEM routines::bad base64 decode ({e})"
        ))),
    }
}

/// The certificates a verification trusts (`ssl_client_certificate`, `*_trusted_certificate`).
pub fn trust_anchors(f: &SslFile) -> Result<rustls::RootCertStore, TlsError> {
    let certs = certificates_named(f, "certificates")?;
    let mut store = rustls::RootCertStore::empty();
    for c in certs {
        store.add(c).map_err(|e| {
            TlsError::at(
                f,
                format!(
                    "SSL_CTX_load_verify_locations(\"{}\") failed (SSL: {e})",
                    f.path.display()
                ),
            )
        })?;
    }
    Ok(store)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 RSA or SEC1 EC; encrypted PKCS#8 opened
/// with `passwords`).
pub fn private_key(
    f: &SslFile,
    passwords: Option<&[Vec<u8>]>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(f, "certificate key", "BIO_new_file()")?;
    if crate::encrypted_key::is_encrypted(&bytes) {
        return crate::encrypted_key::decrypt(f, &bytes, passwords);
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        let why = match e {
            pem::Error::NoItemsFound => "error:1E08010C:DECODER routines::unsupported".to_string(),
            e => format!("error:1E08010C:DECODER routines::unsupported ({e})"),
        };
        TlsError::at(
            f,
            format!(
                "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {why})",
                f.path.display()
            ),
        )
    })
}

/// A certificate chain with its key, checked to belong together.
pub fn certified_key(
    ck: &ringfront_config::CertKey,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let passwords = match &ck.passwords {
        Some(f) => Some(crate::encrypted_key::read_passwords(f)?),
        None => None,
    };
    certified_key_with(&ck.cert, &ck.key, passwords.as_deref(), provider)
}

/// [`certified_key`] with the passphrases already read.
pub fn certified_key_with(
    cert: &SslFile,
    key: &SslFile,
    passwords: Option<&[Vec<u8>]>,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = certificates(cert)?;
    let der = private_key(key, passwords)?;
    let signing = provider.key_provider.load_private_key(der).map_err(|e| {
        TlsError::at(
            key,
            format!(
                "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {e})",
                key.path.display()
            ),
        )
    })?;
    let ck = CertifiedKey::new(chain, signing);
    if !keys_match(&ck) {
        return Err(TlsError::at(
            key,
            format!(
                "SSL_CTX_use_PrivateKey(\"{}\") failed (SSL: error:05800074:x509 certificate routines::key values mismatch)",
                key.path.display()
            ),
        ));
    }
    Ok(Arc::new(ck))
}

/// Whether the key is the certificate's. rustls compares them through webpki, which does
/// not parse X.509 v1 certificates (OpenSSL does, and `openssl req -x509` makes them
/// without an extensions section): those are compared by their key bytes here.
fn keys_match(ck: &CertifiedKey) -> bool {
    use rustls::{Error, InconsistentKeys};
    match ck.keys_match() {
        Ok(()) => true,
        Err(Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => false,
        Err(_) => {
            let cert = ck.end_entity_cert().ok();
            let theirs = cert.and_then(|c| crate::spki::of_certificate(c));
            match (ck.key.public_key(), theirs) {
                (Some(ours), Some(theirs)) => ours.as_ref() == theirs,
                // Nothing to compare with: the handshake shows it.
                _ => true,
            }
        }
    }
}
