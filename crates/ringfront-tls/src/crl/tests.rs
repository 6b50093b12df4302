use super::*;
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertificateRevocationListParams,
    CertifiedIssuer, DnType, IsCa, KeyIdMethod, KeyPair, KeyUsagePurpose, RevokedCertParams,
    SerialNumber,
};

fn algs() -> WebPkiSupportedAlgorithms {
    rustls::crypto::aws_lc_rs::default_provider().signature_verification_algorithms
}

fn params(cn: &str, serial: u64, ca: bool) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.serial_number = Some(SerialNumber::from(serial));
    if ca {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    }
    p
}

/// 2026-01-15, inside every list's validity below.
const NOW: i64 = 1_768_435_200;

struct Pki {
    root: CertifiedIssuer<'static, KeyPair>,
    int: CertifiedIssuer<'static, KeyPair>,
    leaf: Vec<u8>,
}

fn pki() -> Pki {
    let root =
        CertifiedIssuer::self_signed(params("root", 1000, true), KeyPair::generate().unwrap())
            .unwrap();
    let int = CertifiedIssuer::signed_by(
        params("int", 1001, true),
        KeyPair::generate().unwrap(),
        &root,
    )
    .unwrap();
    let leaf = params("leaf", 1002, false)
        .signed_by(&KeyPair::generate().unwrap(), &int)
        .unwrap();
    Pki {
        root,
        int,
        leaf: leaf.der().to_vec(),
    }
}

/// A list by `by`, valid from `from` to `to` (day of January 2026), revoking `serials`.
fn list(by: &CertifiedIssuer<'static, KeyPair>, from: u8, to: u8, serials: &[u64]) -> Crl {
    let p = CertificateRevocationListParams {
        this_update: date_time_ymd(2026, 1, from),
        next_update: date_time_ymd(2026, 1, to),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: serials
            .iter()
            .map(|&s| RevokedCertParams {
                serial_number: SerialNumber::from(s),
                revocation_time: date_time_ymd(2026, 1, 1),
                reason_code: None,
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    };
    parse(p.signed_by(by).unwrap().der()).unwrap()
}

fn run(p: &Pki, lists: &[Crl]) -> Result<(), &'static str> {
    let path: [&[u8]; 3] = [&p.leaf, p.int.der(), p.root.der()];
    check(&path, lists, NOW, &algs()).map_err(|f| f.text)
}

#[test]
fn every_certificate_of_the_path_needs_its_issuers_list() {
    let p = pki();
    let (by_root, by_int) = (list(&p.root, 1, 31, &[]), list(&p.int, 1, 31, &[]));
    assert_eq!(run(&p, &[by_root.clone(), by_int.clone()]), Ok(()));
    assert_eq!(
        run(&p, std::slice::from_ref(&by_root)),
        Err("unable to get certificate CRL")
    );
    assert_eq!(run(&p, &[by_int]), Err("unable to get certificate CRL"));
}

#[test]
fn a_revoked_certificate_anywhere_in_the_path_fails() {
    let p = pki();
    let by_int = list(&p.int, 1, 31, &[]);
    assert_eq!(
        run(&p, &[list(&p.root, 1, 31, &[1001]), by_int.clone()]),
        Err("certificate revoked")
    );
    assert_eq!(
        run(
            &p,
            &[list(&p.root, 1, 31, &[]), list(&p.int, 1, 31, &[1002])]
        ),
        Err("certificate revoked")
    );
    // The root is checked against its own list too (OpenSSL's CRL_CHECK_ALL).
    assert_eq!(
        run(&p, &[list(&p.root, 1, 31, &[1000]), by_int]),
        Err("certificate revoked")
    );
}

#[test]
fn a_list_out_of_its_time_or_not_signed_by_the_issuer_fails() {
    let p = pki();
    let by_root = list(&p.root, 1, 31, &[]);
    assert_eq!(
        run(&p, &[by_root.clone(), list(&p.int, 1, 10, &[])]),
        Err("CRL has expired")
    );
    assert_eq!(
        run(&p, &[by_root.clone(), list(&p.int, 20, 31, &[])]),
        Err("CRL is not yet valid")
    );
    let mut forged = list(&p.int, 1, 31, &[]);
    forged.signature[10] ^= 1;
    assert_eq!(
        run(&p, &[by_root.clone(), forged.clone()]),
        Err("CRL signature failure")
    );
    // A good list beside the bad one is the one used.
    let good = list(&p.int, 1, 31, &[]);
    assert_eq!(run(&p, &[by_root, forged, good]), Ok(()));
}

#[test]
fn the_deepest_problem_is_the_one_reported() {
    let p = pki();
    // The leaf's list has expired and the intermediate is revoked: OpenSSL goes on after
    // the first (nginx's callback allows it) and the last one found stands.
    assert_eq!(
        run(
            &p,
            &[list(&p.root, 1, 31, &[1001]), list(&p.int, 1, 10, &[])]
        ),
        Err("certificate revoked")
    );
    // Within one list, revocation comes after its time.
    assert_eq!(
        run(
            &p,
            &[list(&p.root, 1, 31, &[]), list(&p.int, 1, 10, &[1002])]
        ),
        Err("certificate revoked")
    );
}

#[test]
fn bytes_that_are_not_a_list_do_not_parse() {
    assert!(parse(&[]).is_none());
    assert!(parse(&[0x30, 0x03, 0x02, 0x01, 0x01]).is_none());
}
