//! What a ClientHello offered, by OpenSSL's names, as nginx's `$ssl_curves` and
//! `$ssl_ciphers` print it (and the negotiated group, `$ssl_curve`); a group or suite
//! OpenSSL does not know reads as its number, `0x001d`-style.

use rustls::server::ClientHello;
use rustls::{CipherSuite, NamedGroup};

/// OpenSSL's short name of a group (`OBJ_nid2sn`), or its number as `0x%04x`.
pub fn group(g: NamedGroup) -> String {
    let known = match u16::from(g) {
        0x0017 => "prime256v1",
        0x0018 => "secp384r1",
        0x0019 => "secp521r1",
        0x001a => "brainpoolP256r1",
        0x001b => "brainpoolP384r1",
        0x001c => "brainpoolP512r1",
        0x001d => "X25519",
        0x001e => "X448",
        0x0100 => "ffdhe2048",
        0x0101 => "ffdhe3072",
        0x0102 => "ffdhe4096",
        0x0103 => "ffdhe6144",
        0x0104 => "ffdhe8192",
        n => return format!("0x{n:04x}"),
    };
    known.to_string()
}

/// OpenSSL's name of a suite (`SSL_CIPHER_get_name`) for those OpenSSL 3.0 clients offer
/// by default, else its two bytes in hex (`0xc0ad`).
pub fn suite(s: CipherSuite) -> String {
    let known = match u16::from(s) {
        0x1301 => "TLS_AES_128_GCM_SHA256",
        0x1302 => "TLS_AES_256_GCM_SHA384",
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        0x1304 => "TLS_AES_128_CCM_SHA256",
        0x1305 => "TLS_AES_128_CCM_8_SHA256",
        0xc02c => "ECDHE-ECDSA-AES256-GCM-SHA384",
        0xc030 => "ECDHE-RSA-AES256-GCM-SHA384",
        0xc02b => "ECDHE-ECDSA-AES128-GCM-SHA256",
        0xc02f => "ECDHE-RSA-AES128-GCM-SHA256",
        0xcca9 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        0xcca8 => "ECDHE-RSA-CHACHA20-POLY1305",
        0xccaa => "DHE-RSA-CHACHA20-POLY1305",
        0x009f => "DHE-RSA-AES256-GCM-SHA384",
        0x009e => "DHE-RSA-AES128-GCM-SHA256",
        0xc024 => "ECDHE-ECDSA-AES256-SHA384",
        0xc028 => "ECDHE-RSA-AES256-SHA384",
        0xc023 => "ECDHE-ECDSA-AES128-SHA256",
        0xc027 => "ECDHE-RSA-AES128-SHA256",
        0x006b => "DHE-RSA-AES256-SHA256",
        0x0067 => "DHE-RSA-AES128-SHA256",
        0xc00a => "ECDHE-ECDSA-AES256-SHA",
        0xc014 => "ECDHE-RSA-AES256-SHA",
        0x0039 => "DHE-RSA-AES256-SHA",
        0xc009 => "ECDHE-ECDSA-AES128-SHA",
        0xc013 => "ECDHE-RSA-AES128-SHA",
        0x0033 => "DHE-RSA-AES128-SHA",
        0x009d => "AES256-GCM-SHA384",
        0x009c => "AES128-GCM-SHA256",
        0x003d => "AES256-SHA256",
        0x003c => "AES128-SHA256",
        0x0035 => "AES256-SHA",
        0x002f => "AES128-SHA",
        0x00ff => "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
        n => return format!("0x{n:04x}"),
    };
    known.to_string()
}

fn joined<T: Copy>(items: &[T], name: fn(T) -> String) -> Box<str> {
    let names: Vec<String> = items.iter().map(|&i| name(i)).collect();
    names.join(":").into()
}

/// `$ssl_curves` and `$ssl_ciphers` of a ClientHello, in the client's order.
pub fn of(hello: &ClientHello<'_>) -> [Box<str>; 2] {
    [
        joined(hello.named_groups().unwrap_or_default(), group),
        joined(hello.cipher_suites(), suite),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openssl_names() {
        assert_eq!(group(NamedGroup::secp256r1), "prime256v1");
        assert_eq!(group(NamedGroup::X25519), "X25519");
        assert_eq!(group(NamedGroup::Unknown(0x11ec)), "0x11ec");
        assert_eq!(
            &*joined(&[NamedGroup::X25519, NamedGroup::secp384r1], group),
            "X25519:secp384r1"
        );
        assert_eq!(&*joined::<NamedGroup>(&[], group), "");
        assert_eq!(
            suite(CipherSuite::TLS13_AES_256_GCM_SHA384),
            "TLS_AES_256_GCM_SHA384"
        );
        assert_eq!(suite(CipherSuite::Unknown(0xc0ad)), "0xc0ad");
    }
}
