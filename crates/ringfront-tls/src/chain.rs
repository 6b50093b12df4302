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
pub(crate) fn scheme(oid: &str) -> Option<SignatureScheme> {
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

#[cfg(test)]
mod tests {
    use super::build;
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    use rustls::pki_types::CertificateDer;

    fn params(cn: &str, ca: bool) -> CertificateParams {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        if ca {
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        p
    }

    /// root → int → leaf, the leaf a CA certificate or not.
    fn chain(leaf_ca: bool) -> [CertificateDer<'static>; 3] {
        let root = CertifiedIssuer::self_signed(params("root", true), KeyPair::generate().unwrap())
            .unwrap();
        let int =
            CertifiedIssuer::signed_by(params("int", true), KeyPair::generate().unwrap(), &root)
                .unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = params("leaf", leaf_ca).signed_by(&key, &int).unwrap();
        [root.der().clone(), int.der().clone(), leaf.der().clone()]
    }

    #[test]
    fn depth_counts_the_cas_between_leaf_and_root() {
        let algs = rustls::crypto::aws_lc_rs::default_provider().signature_verification_algorithms;
        for leaf_ca in [false, true] {
            let [root, int, leaf] = chain(leaf_ca);
            let both = [root.clone(), int.clone()];
            let root_only = [root.clone()];
            let sent = [int.clone()];
            assert!(build(&leaf, &[], &both, 1, &algs).is_ok());
            assert_eq!(
                build(&leaf, &[], &both, 0, &algs).err(),
                Some("unable to get issuer certificate")
            );
            assert!(build(&leaf, &sent, &root_only, 1, &algs).is_ok());
            assert_eq!(
                build(&leaf, &sent, &root_only, 0, &algs).err(),
                Some("unable to get local issuer certificate")
            );
            assert_eq!(
                build(&leaf, &[], &root_only, 5, &algs).err(),
                Some("unable to verify the first certificate")
            );
            assert!(build(&int, &[], &root_only, 0, &algs).is_ok());
            // A certificate with the right name but another key does not issue it.
            let [other_root, ..] = chain(false);
            assert!(build(&int, &[], &[other_root], 5, &algs).is_err());
        }
    }
}
