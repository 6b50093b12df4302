//! `ssl_ciphers` / `proxy_ssl_ciphers`: OpenSSL's cipher-list language evaluated over the
//! TLS 1.2 suites rustls offers. Aliases (`HIGH`, `ECDHE`, `AESGCM`, `aRSA`, ...) and their
//! `+` combinations select among those suites, `!`/`-` remove, `+NAME` moves to the end,
//! `@STRENGTH` sorts. A single cipher name ringfront cannot offer (`AES128-SHA`,
//! `DHE-RSA-AES128-GCM-SHA256`, a typo) is an error that says so, never silently dropped;
//! a list that selects nothing is OpenSSL's `no cipher match`. TLS 1.3 suites are not
//! governed by this list (as in OpenSSL): all three are offered when TLSv1.3 is on.

use rustls::crypto::aws_lc_rs::cipher_suite as cs;
use rustls::SupportedCipherSuite;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Auth {
    Rsa,
    Ecdsa,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Enc {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20,
}

struct Suite {
    name: &'static str,
    auth: Auth,
    enc: Enc,
    suite: SupportedCipherSuite,
}

/// In OpenSSL's default order (strongest first, ECDSA before RSA).
fn table() -> [Suite; 6] {
    let s = |name, auth, enc, suite| Suite {
        name,
        auth,
        enc,
        suite,
    };
    [
        s(
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            Auth::Ecdsa,
            Enc::Aes256Gcm,
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        s(
            "ECDHE-RSA-AES256-GCM-SHA384",
            Auth::Rsa,
            Enc::Aes256Gcm,
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ),
        s(
            "ECDHE-ECDSA-CHACHA20-POLY1305",
            Auth::Ecdsa,
            Enc::Chacha20,
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        s(
            "ECDHE-RSA-CHACHA20-POLY1305",
            Auth::Rsa,
            Enc::Chacha20,
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        s(
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            Auth::Ecdsa,
            Enc::Aes128Gcm,
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        s(
            "ECDHE-RSA-AES128-GCM-SHA256",
            Auth::Rsa,
            Enc::Aes128Gcm,
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ),
    ]
}

/// Which suites an alias selects; `None`: not an alias ringfront knows.
fn alias(word: &str, s: &Suite) -> Option<bool> {
    let sha384 = s.enc == Enc::Aes256Gcm;
    Some(match word {
        "ALL" | "DEFAULT" | "HIGH" | "TLSv1.2" | "ECDHE" | "EECDH" | "kECDHE" | "kEECDH"
        | "AEAD" => true,
        "FIPS" | "SUITEB128" => s.enc != Enc::Chacha20,
        "aRSA" => s.auth == Auth::Rsa,
        "aECDSA" | "ECDSA" => s.auth == Auth::Ecdsa,
        "AES" | "AESGCM" => s.enc != Enc::Chacha20,
        "AES128" => s.enc == Enc::Aes128Gcm,
        "AES256" => s.enc == Enc::Aes256Gcm,
        "CHACHA20" => s.enc == Enc::Chacha20,
        "SHA384" => sha384,
        "SHA256" => !sha384,
        // Aliases OpenSSL knows that select none of the suites ringfront offers.
        "MEDIUM"
        | "LOW"
        | "EXP"
        | "EXPORT"
        | "EXPORT40"
        | "EXPORT56"
        | "aNULL"
        | "eNULL"
        | "NULL"
        | "COMPLEMENTOFDEFAULT"
        | "RSA"
        | "kRSA"
        | "DH"
        | "DHE"
        | "EDH"
        | "kDHE"
        | "kEDH"
        | "ADH"
        | "AECDH"
        | "aDSS"
        | "DSS"
        | "PSK"
        | "kPSK"
        | "aPSK"
        | "ECDHEPSK"
        | "DHEPSK"
        | "RSAPSK"
        | "SRP"
        | "kSRP"
        | "aSRP"
        | "MD5"
        | "SHA1"
        | "SHA"
        | "RC4"
        | "DES"
        | "3DES"
        | "IDEA"
        | "SEED"
        | "CAMELLIA"
        | "CAMELLIA128"
        | "CAMELLIA256"
        | "ARIA"
        | "ARIA128"
        | "ARIA256"
        | "AESCCM"
        | "AESCCM8"
        | "CHACHA20-POLY1305-OLD"
        | "GOST94"
        | "GOST89MAC"
        | "kGOST"
        | "aGOST"
        | "SSLv3"
        | "TLSv1"
        | "TLSv1.0"
        | "COMPLEMENTOFALL"
        | "kECDHEPSK"
        | "kDHEPSK"
        | "kRSAPSK"
        | "aECDH"
        | "kECDH"
        | "ECDH"
        | "AESGCM8" => false,
        _ => return None,
    })
}

/// Which suites one term (`ECDHE+AESGCM`, `HIGH`, a cipher name) selects, or why it cannot.
fn select(term: &str, suites: &[Suite]) -> Result<Vec<bool>, String> {
    if let Some(i) = suites.iter().position(|s| s.name == term) {
        return Ok((0..suites.len()).map(|j| j == i).collect());
    }
    let mut picked = vec![true; suites.len()];
    for word in term.split('+') {
        for (p, s) in picked.iter_mut().zip(suites) {
            match alias(word, s) {
                Some(m) => *p &= m,
                None if term.contains('+') => *p = false,
                // A word that is neither a suite nor an alias (`ECCdraft`, gone from
                // OpenSSL) selects nothing, as OpenSSL skips it; a cipher's name (with
                // `-`) that rustls lacks stays an error rather than silently missing.
                None if !term.contains('-') => *p = false,
                None => {
                    return Err(format!(
                        "cipher \"{term}\" cannot be offered by ringfront (TLS 1.2 ciphers it offers: {})",
                        suites.iter().map(|s| s.name).collect::<Vec<_>>().join(":")
                    ))
                }
            }
        }
    }
    Ok(picked)
}

/// The TLS 1.2 suites a cipher list selects, in order.
pub fn tls12_suites(list: &str) -> Result<Vec<SupportedCipherSuite>, String> {
    let suites = table();
    let mut order: Vec<usize> = Vec::new();
    let mut banned = vec![false; suites.len()];
    for raw in list.split([':', ',', ' ']).filter(|t| !t.is_empty()) {
        if raw == "@STRENGTH" {
            order.sort_by_key(|&i| suites[i].enc == Enc::Aes128Gcm);
            continue;
        }
        if raw.starts_with('@') {
            continue; // @SECLEVEL=n: rustls offers nothing below level 2 anyway.
        }
        let (op, term) = match raw.as_bytes()[0] {
            b'!' | b'-' | b'+' => (raw.as_bytes()[0], &raw[1..]),
            _ => (0, raw),
        };
        let picked = match select(term, &suites) {
            Ok(p) => p,
            // Removing a cipher ringfront does not offer anyway is harmless.
            Err(_) if op == b'!' || op == b'-' => continue,
            Err(e) => return Err(e),
        };
        let hit = |i: &usize| picked[*i];
        match op {
            b'!' | b'-' => {
                order.retain(|i| !hit(i));
                if op == b'!' {
                    for (b, p) in banned.iter_mut().zip(&picked) {
                        *b |= *p;
                    }
                }
            }
            b'+' => {
                let (moved, kept): (Vec<usize>, Vec<usize>) = order.iter().partition(|i| hit(i));
                order = kept.into_iter().chain(moved).collect();
            }
            _ => {
                for i in 0..suites.len() {
                    if picked[i] && !banned[i] && !order.contains(&i) {
                        order.push(i);
                    }
                }
            }
        }
    }
    if order.is_empty() {
        return Err(format!(
            "SSL_CTX_set_cipher_list(\"{list}\") failed (SSL: error:0A0000B9:SSL routines::no cipher match)"
        ));
    }
    Ok(order.into_iter().map(|i| suites[i].suite).collect())
}

/// The TLS 1.3 suites (not governed by the cipher list), in OpenSSL's order, with the
/// keyed HKDF (hkdf.rs).
pub fn tls13_suites() -> Vec<SupportedCipherSuite> {
    crate::hkdf::suites().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Vec<String> {
        tls12_suites(list)
            .unwrap()
            .iter()
            .map(|s| format!("{:?}", s.suite()))
            .collect()
    }

    #[test]
    fn nginx_default_selects_all_six_strongest_first() {
        let n = names("HIGH:!aNULL:!MD5");
        assert_eq!(n.len(), 6);
        assert_eq!(n[0], "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384");
        assert_eq!(n[5], "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    }

    #[test]
    fn explicit_names_keep_their_order_and_combinations_intersect() {
        let n = names("ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384");
        assert_eq!(
            n,
            [
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
            ]
        );
        assert_eq!(names("EECDH+AESGCM:EDH+AESGCM").len(), 4);
        assert_eq!(
            names("ECDHE+aRSA+CHACHA20"),
            ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"]
        );
        // `+` moves to the end; `!` bans for good.
        let n = names("ALL:+AES256:!ECDSA:ECDHE-ECDSA-AES128-GCM-SHA256");
        assert_eq!(
            n,
            [
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            ]
        );
    }

    #[test]
    fn a_cipher_ringfront_cannot_offer_is_an_error_naming_it() {
        let e = tls12_suites("ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256").unwrap_err();
        assert!(
            e.starts_with("cipher \"DHE-RSA-AES128-GCM-SHA256\" cannot be offered by ringfront"),
            "{e}"
        );
        assert!(tls12_suites("AES128-SHA").is_err());
        // Removing one is fine.
        assert_eq!(
            names("HIGH:!AES128-SHA:-DHE-RSA-AES128-GCM-SHA256").len(),
            6
        );
        let e = tls12_suites("MEDIUM:!HIGH").unwrap_err();
        assert!(e.ends_with("no cipher match)"), "{e}");
        // An alias OpenSSL no longer knows selects nothing, as OpenSSL skips it.
        assert_eq!(names("DEFAULT:ECCdraft"), names("DEFAULT"));
        assert!(tls12_suites("ECCdraft")
            .unwrap_err()
            .ends_with("no cipher match)"));
    }
}
