//! `ssl_crl` and `proxy_ssl_crl` as nginx's OpenSSL checks them (`X509_V_FLAG_CRL_CHECK |
//! X509_V_FLAG_CRL_CHECK_ALL`): every certificate of the verified path, the trusted root
//! included, needs a list from its issuer (for the root, its own), and the lists are read
//! with x509-parser (docs/decisions/0010-x509-parsing.md), so version 1 lists — what
//! `openssl ca -gencrl` writes without `crl_extensions` — work as version 2 ones do
//! (webpki reads only the latter). nginx's verify callback lets OpenSSL go on after each
//! error, so the error reported is the last one found: the deepest certificate's, and
//! within one certificate revocation after the list's own problems.

use std::sync::Arc;

use ringfront_config::SslFile;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::SignatureScheme;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::revocation_list::CertificateRevocationList;

use crate::error::TlsError;

/// One revocation list, what a check needs of it.
#[derive(Debug, Clone)]
pub(crate) struct Crl {
    /// The issuer's name as encoded.
    issuer: Vec<u8>,
    this_update: i64,
    next_update: Option<i64>,
    /// Serial numbers (DER INTEGER contents) of the revoked certificates.
    revoked: Vec<Vec<u8>>,
    tbs: Vec<u8>,
    scheme: Option<SignatureScheme>,
    signature: Vec<u8>,
}

/// A failed check of ringfront's own (revocation, or the path it needs): OpenSSL's
/// `X509_V_ERR_*` number and words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyFault {
    pub code: i32,
    pub text: &'static str,
}

impl std::fmt::Display for VerifyFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text)
    }
}

impl std::error::Error for VerifyFault {}

const UNABLE_TO_GET_CRL: VerifyFault = fault(3, "unable to get certificate CRL");
const SIGNATURE_FAILURE: VerifyFault = fault(8, "CRL signature failure");
const NOT_YET_VALID: VerifyFault = fault(11, "CRL is not yet valid");
const HAS_EXPIRED: VerifyFault = fault(12, "CRL has expired");
const REVOKED: VerifyFault = fault(23, "certificate revoked");
const NO_CRL_SIGN: VerifyFault = fault(35, "key usage does not include CRL signing");

const fn fault(code: i32, text: &'static str) -> VerifyFault {
    VerifyFault { code, text }
}

/// The number of one of chain.rs's reasons.
pub(crate) fn path_fault(text: &'static str) -> VerifyFault {
    let code = match text {
        "unable to get issuer certificate" => 2,
        "self-signed certificate" => 18,
        "self-signed certificate in certificate chain" => 19,
        "unable to verify the first certificate" => 21,
        _ => 20,
    };
    fault(code, text)
}

/// The lists of a PEM file, each parsed; nginx refuses the configuration when one is not
/// a list.
pub(crate) fn load(f: &SslFile) -> Result<Arc<[Crl]>, TlsError> {
    let ders = crate::pem::crls(f)?;
    let mut out = Vec::with_capacity(ders.len());
    for der in &ders {
        let parsed = parse(der.as_ref()).ok_or_else(|| {
            TlsError::at(
                f,
                format!(
                    "X509_LOOKUP_load_file(\"{}\") failed (SSL: error:0680007B:asn1 encoding routines::header too long)",
                    f.path.display()
                ),
            )
        })?;
        out.push(parsed);
    }
    Ok(out.into())
}

fn parse(der: &[u8]) -> Option<Crl> {
    let (rest, l) = CertificateRevocationList::from_der(der).ok()?;
    if !rest.is_empty() {
        return None;
    }
    let oid = l.signature_algorithm.algorithm.to_id_string();
    Some(Crl {
        issuer: l.issuer().as_raw().to_vec(),
        this_update: l.last_update().timestamp(),
        next_update: l.next_update().map(|t| t.timestamp()),
        revoked: l
            .iter_revoked_certificates()
            .map(|r| r.raw_serial().to_vec())
            .collect(),
        tbs: l.tbs_cert_list.as_ref().to_vec(),
        scheme: crate::chain::scheme(&oid),
        signature: l.signature_value.data.to_vec(),
    })
}

/// Checks every certificate of `path` (leaf first, each issued by the next, the last
/// self-issued) against `lists` at `now` (Unix seconds): `Err` with the last problem found.
pub(crate) fn check(
    path: &[&[u8]],
    lists: &[Crl],
    now: i64,
    algs: &WebPkiSupportedAlgorithms,
) -> Result<(), VerifyFault> {
    let mut last = None;
    for (i, &cert) in path.iter().enumerate() {
        let issuer = path.get(i + 1).copied().unwrap_or(cert);
        if let Some(f) = check_one(cert, issuer, lists, now, algs) {
            last = Some(f);
        }
    }
    last.map_or(Ok(()), Err)
}

/// One certificate: the best of its issuer's lists (signed by the issuer, current, newest),
/// then the problems in OpenSSL's order, the last one winning.
fn check_one(
    cert: &[u8],
    issuer: &[u8],
    lists: &[Crl],
    now: i64,
    algs: &WebPkiSupportedAlgorithms,
) -> Option<VerifyFault> {
    let Ok((_, c)) = X509Certificate::from_der(cert) else {
        return Some(UNABLE_TO_GET_CRL);
    };
    let signed = |l: &Crl| {
        l.scheme.is_some_and(|s| {
            crate::spki::verify_with(&l.tbs, issuer, (s, &l.signature), algs).is_ok()
        })
    };
    let current = |l: &Crl| l.this_update <= now && l.next_update.is_none_or(|n| n >= now);
    let best = lists
        .iter()
        .filter(|l| l.issuer == c.issuer().as_raw())
        .max_by_key(|l| (signed(l), current(l), l.this_update));
    let Some(best) = best else {
        return Some(UNABLE_TO_GET_CRL);
    };
    let mut found = None;
    if !may_sign_crls(issuer) {
        found = Some(NO_CRL_SIGN);
    }
    if best.this_update > now {
        found = Some(NOT_YET_VALID);
    } else if best.next_update.is_some_and(|n| n < now) {
        found = Some(HAS_EXPIRED);
    }
    if !signed(best) {
        found = Some(SIGNATURE_FAILURE);
    }
    if best.revoked.iter().any(|s| s.as_slice() == c.raw_serial()) {
        found = Some(REVOKED);
    }
    found
}

/// An issuer whose keyUsage leaves out cRLSign may not sign lists (no keyUsage: any use).
fn may_sign_crls(issuer: &[u8]) -> bool {
    let Ok((_, i)) = X509Certificate::from_der(issuer) else {
        return false;
    };
    match i.key_usage() {
        Ok(Some(ku)) => ku.value.crl_sign(),
        _ => true,
    }
}

#[cfg(test)]
mod tests;
