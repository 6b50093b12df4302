//! A certificate's public key read straight from its DER (the few TLVs in front of
//! `subjectPublicKeyInfo`), for the certificates webpki will not parse but OpenSSL, and so
//! nginx, uses: X.509 v1 ones, as `openssl req -x509` makes without an extensions section.
//! With it, a key is matched to its certificate at load, and `proxy_ssl_verify off` checks
//! the upstream's handshake signature against any certificate, as nginx does.

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// One DER element: its tag, its whole encoding and its contents; and what follows it.
struct Tlv<'a> {
    tag: u8,
    whole: &'a [u8],
    body: &'a [u8],
    rest: &'a [u8],
}

fn tlv(der: &[u8]) -> Option<Tlv<'_>> {
    let (&tag, after) = der.split_first()?;
    let (&first, after) = after.split_first()?;
    let (len, after) = if first < 0x80 {
        (usize::from(first), after)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || after.len() < n {
            return None;
        }
        let len = after[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &after[n..])
    };
    let body = after.get(..len)?;
    let head = der.len() - after.len();
    Some(Tlv {
        tag,
        whole: der.get(..head + len)?,
        body,
        rest: &after[len..],
    })
}

const SEQUENCE: u8 = 0x30;
const BIT_STRING: u8 = 0x03;
/// `[0] EXPLICIT Version`, absent in v1 certificates.
const VERSION: u8 = 0xa0;

/// The DER `SubjectPublicKeyInfo` of a DER certificate.
pub(crate) fn of_certificate(cert: &[u8]) -> Option<&[u8]> {
    let outer = tlv(cert).filter(|t| t.tag == SEQUENCE)?;
    let tbs = tlv(outer.body).filter(|t| t.tag == SEQUENCE)?;
    let mut field = tlv(tbs.body)?;
    if field.tag == VERSION {
        field = tlv(field.rest)?;
    }
    // serialNumber, signature, issuer, validity, subject; then the key.
    for _ in 0..5 {
        field = tlv(field.rest)?;
    }
    (field.tag == SEQUENCE).then_some(field.whole)
}

/// `(algorithm identifier contents, public key bits)` of a `SubjectPublicKeyInfo`.
fn split(spki: &[u8]) -> Option<(&[u8], &[u8])> {
    let outer = tlv(spki).filter(|t| t.tag == SEQUENCE)?;
    let alg = tlv(outer.body).filter(|t| t.tag == SEQUENCE)?;
    let key = tlv(alg.rest).filter(|t| t.tag == BIT_STRING)?;
    // The first octet counts unused bits: 0 for every key type TLS uses.
    let (&0, bits) = key.body.split_first()? else {
        return None;
    };
    Some((alg.body, bits))
}

/// RFC 8446 4.2.3: PKCS#1 v1.5 and SHA-1 schemes sign no TLS 1.3 handshake.
fn in_tls13(scheme: rustls::SignatureScheme) -> bool {
    use rustls::SignatureScheme as S;
    matches!(
        scheme,
        S::ECDSA_NISTP256_SHA256
            | S::ECDSA_NISTP384_SHA384
            | S::ECDSA_NISTP521_SHA512
            | S::RSA_PSS_SHA256
            | S::RSA_PSS_SHA384
            | S::RSA_PSS_SHA512
            | S::ED25519
            | S::ED448
    )
}

/// Checks a handshake signature made with the key of `cert` (TLS 1.2 or, with `tls13`,
/// 1.3 rules for the scheme), whatever webpki thinks of the certificate itself.
pub(crate) fn verify_signature(
    message: &[u8],
    cert: &[u8],
    dss: &DigitallySignedStruct,
    algs: &WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    if tls13 && !in_tls13(dss.scheme) {
        return Err(Error::InvalidCertificate(CertificateError::BadSignature));
    }
    verify_with(message, cert, (dss.scheme, dss.signature()), algs)
}

/// Checks `signature` (made by `scheme`) over `message` with the key of `cert`.
pub(crate) fn verify_with(
    message: &[u8],
    cert: &[u8],
    (scheme, signature): (SignatureScheme, &[u8]),
    algs: &WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, Error> {
    let bad = || Error::InvalidCertificate(CertificateError::BadSignature);
    let (alg_id, key) = of_certificate(cert)
        .and_then(split)
        .ok_or(Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let candidates = algs
        .mapping
        .iter()
        .find(|(s, _)| *s == scheme)
        .map(|(_, a)| *a)
        .ok_or_else(bad)?;
    let alg = candidates
        .iter()
        .find(|a| a.public_key_alg_id().as_ref() == alg_id)
        .ok_or_else(bad)?;
    alg.verify_signature(key, message, signature)
        .map_err(|_| bad())?;
    Ok(HandshakeSignatureValid::assertion())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_of_a_v3_certificate_is_what_webpki_finds() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a.test".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let der = cert.der();
        let parsed = rustls::server::ParsedCertificate::try_from(der).unwrap();
        assert_eq!(
            of_certificate(der),
            Some(parsed.subject_public_key_info().as_ref())
        );
        let (alg, bits) = split(of_certificate(der).unwrap()).unwrap();
        assert!(
            !alg.is_empty() && bits.len() == 65,
            "an uncompressed P-256 point"
        );
    }

    #[test]
    fn truncated_or_foreign_bytes_give_none() {
        assert!(of_certificate(&[]).is_none());
        assert!(of_certificate(&[0x30, 0x82, 0xff]).is_none());
        assert!(of_certificate(&[0x30, 0x03, 0x02, 0x01, 0x01]).is_none());
        assert!(split(&[0x30, 0x00]).is_none());
    }
}
