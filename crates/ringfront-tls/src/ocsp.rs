//! OCSP (RFC 6960) as nginx uses it: the request for one certificate (a CertID with SHA-1
//! hashes of the issuer's name and key), and the checks of a response — successful, the
//! single response for that CertID, its times, and (when asked) its signature by the
//! issuer or by a responder the issuer delegated to. Pure: the caller passes `now`.

use aws_lc_rs::digest;
use aws_lc_rs::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::der::{self, Tlv};

/// 1.3.14.3.2.26
const SHA1: &[u8] = &[0x2b, 0x0e, 0x03, 0x02, 0x1a];
/// 1.3.6.1.5.5.7.48.1.1 (id-pkix-ocsp-basic)
const BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];

/// What identifies one certificate to its responder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertId {
    name_hash: Vec<u8>,
    key_hash: Vec<u8>,
    serial: Vec<u8>,
}

/// A certificate's status, as OpenSSL's `OCSP_cert_status_str` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Good,
    Revoked,
    Unknown,
}

impl Status {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Status::Good => "good",
            Status::Revoked => "revoked",
            Status::Unknown => "unknown",
        }
    }
}

/// A response that passed the checks: the certificate's status and until when the
/// response may be used (`None`: no nextUpdate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checked {
    pub status: Status,
    pub next_update: Option<i64>,
}

fn sha1(data: &[u8]) -> Vec<u8> {
    digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, data)
        .as_ref()
        .to_vec()
}

impl CertId {
    /// The CertID of `cert` (DER) issued by `issuer` (DER).
    pub(crate) fn new(cert: &[u8], issuer: &[u8]) -> Option<CertId> {
        let (_, c) = X509Certificate::from_der(cert).ok()?;
        let (_, i) = X509Certificate::from_der(issuer).ok()?;
        Some(CertId {
            name_hash: sha1(c.issuer().as_raw()),
            key_hash: sha1(&i.public_key().subject_public_key.data),
            serial: c.raw_serial().to_vec(),
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut alg = der::write(der::OID, SHA1);
        alg.extend_from_slice(&[0x05, 0x00]);
        let mut body = der::write(der::SEQUENCE, &alg);
        body.extend(der::write(der::OCTET_STRING, &self.name_hash));
        body.extend(der::write(der::OCTET_STRING, &self.key_hash));
        body.extend(der::write(der::INTEGER, &self.serial));
        der::write(der::SEQUENCE, &body)
    }

    /// Whether an encoded CertID (of a response) names this certificate.
    fn matches(&self, body: &[u8]) -> bool {
        let Some(Ok([alg, name, key, serial])) = der::all(body).map(<[Tlv; 4]>::try_from) else {
            return false;
        };
        let sha1_alg = der::expect(alg.body, der::OID).is_some_and(|(o, _)| o.body == SHA1);
        sha1_alg
            && name.body == self.name_hash
            && key.body == self.key_hash
            && serial.body == self.serial
    }

    /// The DER OCSPRequest for this one certificate.
    pub(crate) fn request(&self) -> Vec<u8> {
        let request = der::write(der::SEQUENCE, &self.encode());
        let list = der::write(der::SEQUENCE, &request);
        let tbs = der::write(der::SEQUENCE, &list);
        der::write(der::SEQUENCE, &tbs)
    }
}

/// The parts of a BasicOCSPResponse the checks read.
struct Basic<'a> {
    tbs: Tlv<'a>,
    sig_alg: &'a [u8],
    signature: &'a [u8],
    certs: Vec<&'a [u8]>,
}

/// Why a response was not used, in nginx's words (its error log lines).
pub(crate) fn check(
    response: &[u8],
    id: &CertId,
    issuer: &[u8],
    verify: bool,
    now: i64,
) -> Result<Checked, String> {
    let basic = basic(response)?;
    if verify {
        verify_signature(&basic, issuer).ok_or_else(|| "OCSP_basic_verify() failed".to_string())?;
    }
    let single = find(&basic, id)
        .ok_or_else(|| "certificate status not found in the OCSP response".to_string())?;
    single_status(single, now)
}

fn basic(response: &[u8]) -> Result<Basic<'_>, String> {
    let bad = || "d2i_OCSP_RESPONSE() failed".to_string();
    let (outer, _) = der::expect(response, der::SEQUENCE).ok_or_else(bad)?;
    let (status, rest) = der::expect(outer.body, der::ENUMERATED).ok_or_else(bad)?;
    let code = status.body.first().copied().unwrap_or(0xff);
    if code != 0 {
        return Err(format!(
            "OCSP response not successful ({code}: {})",
            status_word(code)
        ));
    }
    let no_basic = || "OCSP_response_get1_basic() failed".to_string();
    let (bytes, _) = der::expect(rest, 0xa0).ok_or_else(no_basic)?;
    let (bytes, _) = der::expect(bytes.body, der::SEQUENCE).ok_or_else(no_basic)?;
    let (kind, rest) = der::expect(bytes.body, der::OID).ok_or_else(no_basic)?;
    let (octets, _) = der::expect(rest, der::OCTET_STRING).ok_or_else(no_basic)?;
    if kind.body != BASIC {
        return Err(no_basic());
    }
    parse_basic(octets.body).ok_or_else(no_basic)
}

fn parse_basic(input: &[u8]) -> Option<Basic<'_>> {
    let (seq, _) = der::expect(input, der::SEQUENCE)?;
    let (tbs, rest) = der::expect(seq.body, der::SEQUENCE)?;
    let (alg, rest) = der::expect(rest, der::SEQUENCE)?;
    let (sig, rest) = der::expect(rest, der::BIT_STRING)?;
    let mut certs = Vec::new();
    if let Some((list, _)) = der::expect(rest, 0xa0) {
        let (seq, _) = der::expect(list.body, der::SEQUENCE)?;
        certs = der::all(seq.body)?.iter().map(|c| c.whole).collect();
    }
    let (oid, _) = der::expect(alg.body, der::OID)?;
    Some(Basic {
        tbs,
        sig_alg: oid.body,
        signature: sig.body.get(1..)?,
        certs,
    })
}

fn status_word(code: u8) -> &'static str {
    match code {
        1 => "malformedrequest",
        2 => "internalerror",
        3 => "trylater",
        5 => "sigrequired",
        6 => "unauthorized",
        _ => "(UNKNOWN)",
    }
}

/// The SingleResponse for `id` among the response's.
fn find<'a>(basic: &Basic<'a>, id: &CertId) -> Option<&'a [u8]> {
    let mut fields = der::all(basic.tbs.body)?.into_iter();
    // version [0] (optional), responderID [1]/[2], producedAt, responses
    let mut responder_id = fields.next()?;
    if responder_id.tag == 0xa0 {
        responder_id = fields.next()?;
    }
    if !matches!(responder_id.tag, 0xa1 | 0xa2) {
        return None;
    }
    fields.next().filter(|t| t.tag == der::GENERALIZED_TIME)?;
    let responses = fields.next().filter(|t| t.tag == der::SEQUENCE)?;
    der::all(responses.body)?.into_iter().find_map(|single| {
        let (cert_id, _) = der::expect(single.body, der::SEQUENCE)?;
        id.matches(cert_id.body).then_some(single.body)
    })
}

fn single_status(single: &[u8], now: i64) -> Result<Checked, String> {
    let bad = || "certificate status not found in the OCSP response".to_string();
    let fields = der::all(single).ok_or_else(bad)?;
    let status = match fields.get(1).map(|t| t.tag) {
        Some(0x80) => Status::Good,
        Some(0xa1) => Status::Revoked,
        Some(0x82) => Status::Unknown,
        _ => return Err(bad()),
    };
    let time = |t: &Tlv| {
        (t.tag == der::GENERALIZED_TIME)
            .then(|| der::generalized_time(t.body))
            .flatten()
    };
    let this_update = fields.get(2).and_then(time).ok_or_else(bad)?;
    let next_update = match fields.get(3).filter(|t| t.tag == 0xa0) {
        Some(t) => Some(
            der::next(t.body)
                .and_then(|(inner, _)| time(&inner))
                .ok_or_else(|| "invalid nextUpdate time in certificate status".to_string())?,
        ),
        None => None,
    };
    // OpenSSL's OCSP_check_validity(this, next, 300 seconds of slack, no age limit)
    let valid =
        this_update <= now + 300 && next_update.is_none_or(|n| n >= now - 300 && n >= this_update);
    if !valid {
        return Err("OCSP_check_validity() failed".to_string());
    }
    Ok(Checked {
        status,
        next_update,
    })
}

/// The response's signature by the issuer itself, or by a certificate it carries that the
/// issuer signed for OCSP signing (RFC 6960 4.2.2.2); `None` if neither holds.
fn verify_signature(basic: &Basic, issuer_der: &[u8]) -> Option<()> {
    let (_, issuer) = X509Certificate::from_der(issuer_der).ok()?;
    let by = |key: &[u8], alg: &[u8], msg: &[u8], sig: &[u8]| {
        let alg = algorithm(alg)?;
        UnparsedPublicKey::new(alg, key).verify(msg, sig).ok()
    };
    let issuer_key = &issuer.public_key().subject_public_key.data;
    if by(issuer_key, basic.sig_alg, basic.tbs.whole, basic.signature).is_some() {
        return Some(());
    }
    basic.certs.iter().find_map(|der| {
        let (_, signer) = X509Certificate::from_der(der).ok()?;
        let delegated = signer.issuer().as_raw() == issuer.subject().as_raw()
            && signer
                .extended_key_usage()
                .ok()
                .flatten()
                .is_some_and(|e| e.value.ocsp_signing);
        if !delegated {
            return None;
        }
        let alg = signer.signature_algorithm.algorithm.as_bytes();
        by(
            issuer_key,
            alg,
            signer.tbs_certificate.as_ref(),
            &signer.signature_value.data,
        )?;
        let key = &signer.public_key().subject_public_key.data;
        by(key, basic.sig_alg, basic.tbs.whole, basic.signature)
    })
}

/// The verification algorithm of a signature algorithm OID (RSA PKCS#1 and ECDSA with
/// SHA-2, what OpenSSL's responders sign with).
fn algorithm(oid: &[u8]) -> Option<&'static dyn VerificationAlgorithm> {
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03];
    let (base, last) = oid.split_at(oid.len().checked_sub(1)?);
    Some(match (base, last) {
        (RSA, [11]) => &signature::RSA_PKCS1_2048_8192_SHA256,
        (RSA, [12]) => &signature::RSA_PKCS1_2048_8192_SHA384,
        (RSA, [13]) => &signature::RSA_PKCS1_2048_8192_SHA512,
        (ECDSA, [2]) => &signature::ECDSA_P256_SHA256_ASN1,
        (ECDSA, [3]) => &signature::ECDSA_P384_SHA384_ASN1,
        _ => return None,
    })
}

/// Whether `bytes` has the outer shape of an OCSPResponse (what nginx's
/// `d2i_OCSP_RESPONSE` checks of an `ssl_stapling_file`).
pub(crate) fn well_formed(bytes: &[u8]) -> bool {
    let Some((outer, rest)) = der::expect(bytes, der::SEQUENCE) else {
        return false;
    };
    rest.is_empty()
        && der::expect(outer.body, der::ENUMERATED)
            .is_some_and(|(_, rest)| rest.is_empty() || der::expect(rest, 0xa0).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> CertId {
        CertId {
            name_hash: vec![1; 20],
            key_hash: vec![2; 20],
            serial: vec![0x10, 0x02],
        }
    }

    /// A response for `id` with `status` (a tag and body), signed by nobody.
    fn response(id: &CertId, status: &[u8], this: &str, next: Option<&str>) -> Vec<u8> {
        let mut single = id.encode();
        single.extend_from_slice(status);
        single.extend(der::write(der::GENERALIZED_TIME, this.as_bytes()));
        if let Some(n) = next {
            single.extend(der::write(
                0xa0,
                &der::write(der::GENERALIZED_TIME, n.as_bytes()),
            ));
        }
        let single = der::write(der::SEQUENCE, &single);
        let mut data = der::write(0xa2, &der::write(der::OCTET_STRING, &[3; 20]));
        data.extend(der::write(der::GENERALIZED_TIME, this.as_bytes()));
        data.extend(der::write(der::SEQUENCE, &single));
        let mut basic = der::write(der::SEQUENCE, &data);
        basic.extend(der::write(der::SEQUENCE, &der::write(der::OID, &[0x2a, 3])));
        basic.extend(der::write(der::BIT_STRING, &[0, 9, 9]));
        let basic = der::write(der::SEQUENCE, &basic);
        let mut bytes = der::write(der::OID, BASIC);
        bytes.extend(der::write(der::OCTET_STRING, &basic));
        let mut outer = der::write(der::ENUMERATED, &[0]);
        outer.extend(der::write(0xa0, &der::write(der::SEQUENCE, &bytes)));
        der::write(der::SEQUENCE, &outer)
    }

    // 2024-01-01T00:00:00Z and a day later
    const THIS: &str = "20240101000000Z";
    const NEXT: &str = "20240102000000Z";
    const T0: i64 = 1704067200;

    #[test]
    fn statuses_times_and_the_cert_id() {
        let good = response(&id(), &[0x80, 0], THIS, Some(NEXT));
        let c = check(&good, &id(), &[], false, T0 + 10).unwrap();
        assert_eq!(
            c,
            Checked {
                status: Status::Good,
                next_update: Some(T0 + 86400)
            }
        );
        let revoked = response(
            &id(),
            &der::write(0xa1, &der::write(der::GENERALIZED_TIME, THIS.as_bytes())),
            THIS,
            None,
        );
        assert_eq!(
            check(&revoked, &id(), &[], false, T0).unwrap().status,
            Status::Revoked
        );
        // 300 s of slack either side, as OpenSSL's check
        assert!(check(&good, &id(), &[], false, T0 - 299).is_ok());
        assert_eq!(
            check(&good, &id(), &[], false, T0 - 301).unwrap_err(),
            "OCSP_check_validity() failed"
        );
        assert!(check(&good, &id(), &[], false, T0 + 86400 + 299).is_ok());
        assert!(check(&good, &id(), &[], false, T0 + 86400 + 301).is_err());
        let other = CertId {
            serial: vec![7],
            ..id()
        };
        assert_eq!(
            check(&good, &other, &[], false, T0).unwrap_err(),
            "certificate status not found in the OCSP response"
        );
        let mut trylater = der::write(der::ENUMERATED, &[3]);
        trylater = der::write(der::SEQUENCE, &trylater);
        assert_eq!(
            check(&trylater, &id(), &[], false, T0).unwrap_err(),
            "OCSP response not successful (3: trylater)"
        );
        // an unsigned response never passes verification
        assert_eq!(
            check(&good, &id(), &[], true, T0).unwrap_err(),
            "OCSP_basic_verify() failed"
        );
    }

    #[test]
    fn requests_nest_the_cert_id() {
        let r = id().request();
        let (outer, rest) = der::expect(&r, der::SEQUENCE).unwrap();
        assert!(rest.is_empty());
        let (tbs, _) = der::expect(outer.body, der::SEQUENCE).unwrap();
        let (list, _) = der::expect(tbs.body, der::SEQUENCE).unwrap();
        let (req, _) = der::expect(list.body, der::SEQUENCE).unwrap();
        let (cid, _) = der::expect(req.body, der::SEQUENCE).unwrap();
        assert!(id().matches(cid.body));
    }

    #[test]
    fn damaged_responses_never_panic() {
        let good = response(&id(), &[0x80, 0], THIS, Some(NEXT));
        for cut in 0..good.len() {
            let _ = check(&good[..cut], &id(), &[], false, T0);
            assert!(!well_formed(&good[..cut]) || cut == good.len());
        }
        let mut x: u32 = 12345;
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let mut b = good.clone();
            let i = (x as usize >> 8) % b.len();
            b[i] ^= (x >> 24) as u8 | 1;
            let _ = check(&b, &id(), &[], true, T0);
        }
        assert!(well_formed(&good));
    }
}
