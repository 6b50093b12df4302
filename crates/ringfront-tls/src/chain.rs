//! The client chain as OpenSSL builds it for `ssl_verify_client`: from the client's
//! certificate, issuer by issuer (a subject matching the issuer name whose key verifies the
//! signature), through the trusted certificates and the ones the client sent, to a trusted
//! self-issued root; `ssl_verify_depth` CAs at most between the two. Failures carry
//! OpenSSL's words. webpki then judges the chain it can (times, revocation); it takes no CA
//! certificate as the client's, and such a chain stands on this one (times checked here).

use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::CertificateDer;
use rustls::SignatureScheme;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The path from the client's certificate to the root: Ok with the certificates in it
/// (leaf first), or OpenSSL's reason.
pub(crate) fn build<'c>(
    leaf: &'c CertificateDer<'static>,
    sent: &'c [CertificateDer<'static>],
    trusted: &'c [CertificateDer<'static>],
    depth: u32,
    algs: &WebPkiSupportedAlgorithms,
) -> Result<Vec<&'c CertificateDer<'static>>, &'static str> {
    let mut path = vec![leaf];
    let mut cur = leaf;
    loop {
        let self_issued = crate::client_cert::self_issued(cur);
        if self_issued && trusted.contains(cur) {
            return Ok(path);
        }
        if self_issued {
            return Err(match path.len() {
                1 => "self-signed certificate",
                _ => "self-signed certificate in certificate chain",
            });
        }
        let issuer = trusted
            .iter()
            .map(|c| (c, true))
            .chain(sent.iter().map(|c| (c, false)))
            .find(|(c, _)| issues(c, cur, algs));
        let Some((next, is_trusted)) = issuer else {
            return Err(match path.len() {
                1 => "unable to verify the first certificate",
                _ => "unable to get local issuer certificate",
            });
        };
        let root = is_trusted && crate::client_cert::self_issued(next);
        if !root && path.len() > depth as usize {
            // OpenSSL's words depend on whether the issuer past the limit is a trusted one.
            return Err(match is_trusted {
                true => "unable to get issuer certificate",
                false => "unable to get local issuer certificate",
            });
        }
        path.push(next);
        cur = next;
    }
}

/// Whether `issuer` names and signed `cert`.
fn issues(issuer: &[u8], cert: &[u8], algs: &WebPkiSupportedAlgorithms) -> bool {
    let (Ok((_, i)), Ok((_, c))) = (
        X509Certificate::from_der(issuer),
        X509Certificate::from_der(cert),
    ) else {
        return false;
    };
    if i.subject().as_raw() != c.issuer().as_raw() {
        return false;
    }
    let Some(scheme) = scheme(&c.signature_algorithm.algorithm.to_id_string()) else {
        return false;
    };
    let tbs: &[u8] = c.tbs_certificate.as_ref();
    let sig: &[u8] = &c.signature_value.data;
    crate::spki::verify_with(tbs, issuer, (scheme, sig), algs).is_ok()
}

/// The handshake scheme that checks a certificate signature of this algorithm.
fn scheme(oid: &str) -> Option<SignatureScheme> {
    Some(match oid {
        "1.2.840.113549.1.1.5" => SignatureScheme::RSA_PKCS1_SHA1,
        "1.2.840.113549.1.1.11" => SignatureScheme::RSA_PKCS1_SHA256,
        "1.2.840.113549.1.1.12" => SignatureScheme::RSA_PKCS1_SHA384,
        "1.2.840.113549.1.1.13" => SignatureScheme::RSA_PKCS1_SHA512,
        "1.2.840.10045.4.3.2" => SignatureScheme::ECDSA_NISTP256_SHA256,
        "1.2.840.10045.4.3.3" => SignatureScheme::ECDSA_NISTP384_SHA384,
        "1.2.840.10045.4.3.4" => SignatureScheme::ECDSA_NISTP521_SHA512,
        "1.3.101.112" => SignatureScheme::ED25519,
        _ => return None,
    })
}
