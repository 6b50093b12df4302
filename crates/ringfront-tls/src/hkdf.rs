//! TLS 1.3's key schedule (HKDF) over HMAC keys made once per secret.
//!
//! rustls's aws-lc-rs provider runs each HKDF-Expand as aws-lc's one-shot `HKDF()`, which
//! extracts the secret again and sets up the HMAC key again every time: a handshake derives
//! a dozen labels from a few secrets, and with SHA-384 each set-up is two more SHA-512
//! compressions. rustls's own `HkdfUsingHmac` (HKDF as RFC 5869 writes it, over an HMAC)
//! extracts once per secret and keeps the keyed HMAC for the expands; the HMAC here is
//! aws-lc's, whose key holds the keyed state and copies it for each message. The suites
//! are rustls's aws-lc-rs ones with only the HKDF swapped: the same AEADs, hashes and
//! limits. Measured in docs/decisions/0007-tls-library-and-provider.md.

use std::sync::OnceLock;

use aws_lc_rs::hmac as lc;
use rustls::crypto::aws_lc_rs::cipher_suite as cs;
use rustls::crypto::hmac::{Hmac, Key, Tag};
use rustls::crypto::tls13::HkdfUsingHmac;
use rustls::{SupportedCipherSuite, Tls13CipherSuite};

/// aws-lc's HMAC with one hash.
struct AwsLcHmac(lc::Algorithm);

impl Hmac for AwsLcHmac {
    fn with_key(&self, key: &[u8]) -> Box<dyn Key> {
        Box::new(AwsLcKey(lc::Key::new(self.0, key)))
    }

    fn hash_output_len(&self) -> usize {
        self.0.digest_algorithm().output_len()
    }
}

/// A keyed HMAC: the key's padded blocks are hashed once, here, not per message.
struct AwsLcKey(lc::Key);

impl Key for AwsLcKey {
    fn sign_concat(&self, first: &[u8], middle: &[&[u8]], last: &[u8]) -> Tag {
        let mut ctx = lc::Context::with_key(&self.0);
        ctx.update(first);
        for m in middle {
            ctx.update(m);
        }
        ctx.update(last);
        Tag::new(ctx.sign().as_ref())
    }

    fn tag_len(&self) -> usize {
        self.0.algorithm().digest_algorithm().output_len()
    }
}

static HMAC_SHA256: AwsLcHmac = AwsLcHmac(lc::HMAC_SHA256);
static HMAC_SHA384: AwsLcHmac = AwsLcHmac(lc::HMAC_SHA384);
static HKDF_SHA256: HkdfUsingHmac<'static> = HkdfUsingHmac(&HMAC_SHA256);
static HKDF_SHA384: HkdfUsingHmac<'static> = HkdfUsingHmac(&HMAC_SHA384);

/// `suite` (a TLS 1.3 suite of rustls's aws-lc-rs provider) with the HKDF above for its
/// hash; other suites unchanged.
fn with_keyed_hkdf(suite: SupportedCipherSuite) -> SupportedCipherSuite {
    let SupportedCipherSuite::Tls13(s) = suite else {
        return suite;
    };
    let hkdf: &'static HkdfUsingHmac<'static> = match s.common.hash_provider.output_len() {
        48 => &HKDF_SHA384,
        _ => &HKDF_SHA256,
    };
    let swapped = Tls13CipherSuite {
        common: rustls::CipherSuiteCommon {
            suite: s.common.suite,
            hash_provider: s.common.hash_provider,
            confidentiality_limit: s.common.confidentiality_limit,
        },
        hkdf_provider: hkdf,
        aead_alg: s.aead_alg,
        quic: s.quic,
    };
    // Made once per process (`keyed`): a few hundred bytes that live as long as it does.
    SupportedCipherSuite::Tls13(Box::leak(Box::new(swapped)))
}

/// The TLS 1.3 suites of rustls's aws-lc-rs provider, in OpenSSL's order (the order
/// ringfront offers them in).
const PROVIDERS: [SupportedCipherSuite; 3] = [
    cs::TLS13_AES_256_GCM_SHA384,
    cs::TLS13_CHACHA20_POLY1305_SHA256,
    cs::TLS13_AES_128_GCM_SHA256,
];

/// The provider's TLS 1.3 suites with the keyed HKDF, in [`PROVIDERS`]' order (made once
/// per process).
pub(crate) fn suites() -> &'static [SupportedCipherSuite; 3] {
    static SUITES: OnceLock<[SupportedCipherSuite; 3]> = OnceLock::new();
    SUITES.get_or_init(|| PROVIDERS.map(with_keyed_hkdf))
}

/// `suite` with the keyed HKDF when it is one of the provider's TLS 1.3 suites; any other
/// suite as it is.
pub fn keyed(suite: SupportedCipherSuite) -> SupportedCipherSuite {
    suites()
        .iter()
        .find(|s| s.suite() == suite.suite())
        .copied()
        .unwrap_or(suite)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::crypto::tls13::Hkdf;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 5869's test case 1 (SHA-256): extract, then expand to 42 bytes.
    #[test]
    fn rfc5869_case_1() {
        let ikm = hex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b");
        let salt = hex("000102030405060708090a0b0c");
        let info = hex("f0f1f2f3f4f5f6f7f8f9");
        let mut okm = [0u8; 42];
        HKDF_SHA256
            .extract_from_secret(Some(&salt), &ikm)
            .expand_slice(&[&info], &mut okm)
            .unwrap();
        let want = hex(
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
        );
        assert_eq!(okm[..], want[..]);
    }

    /// The same derivations as rustls's own aws-lc-rs HKDF, for both hashes, on every
    /// path the key schedule takes (zero IKM, a secret, an output block, the Finished MAC).
    #[test]
    fn same_as_the_providers_own() {
        for theirs in PROVIDERS {
            let ours = keyed(theirs);
            let (SupportedCipherSuite::Tls13(a), SupportedCipherSuite::Tls13(b)) = (ours, theirs)
            else {
                panic!("TLS 1.3 suites only");
            };
            assert_eq!(a.common.suite, b.common.suite);
            assert!(!std::ptr::eq(a, b), "swapped");
            let (a, b) = (a.hkdf_provider, b.hkdf_provider);
            let info: [&[u8]; 2] = [b"tls13 ", b"derived"];
            for salt in [None, Some(&b"some salt"[..])] {
                let x = a.extract_from_secret(salt, b"input keying material");
                let y = b.extract_from_secret(salt, b"input keying material");
                assert_eq!(
                    x.expand_block(&info).as_ref(),
                    y.expand_block(&info).as_ref()
                );
                let (mut p, mut q) = ([0u8; 100], [0u8; 100]);
                x.expand_slice(&info, &mut p).unwrap();
                y.expand_slice(&info, &mut q).unwrap();
                assert_eq!(p, q);
                let z = a.extract_from_zero_ikm(salt).expand_block(&info);
                assert_eq!(
                    z.as_ref(),
                    b.extract_from_zero_ikm(salt).expand_block(&info).as_ref()
                );
                let okm = x.expand_block(&info);
                let e = a.expander_for_okm(&okm).expand_block(&info);
                assert_eq!(
                    e.as_ref(),
                    b.expander_for_okm(&okm).expand_block(&info).as_ref()
                );
                assert_eq!(
                    a.hmac_sign(&okm, b"msg").as_ref(),
                    b.hmac_sign(&okm, b"msg").as_ref()
                );
            }
        }
    }
}
