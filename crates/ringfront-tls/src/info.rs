//! What the handshake settled, for `$ssl_*` variables and `$https`: read once when it ends
//! and kept with the connection.

use rustls::{CipherSuite, HandshakeKind, ProtocolVersion, ServerConnection};

use crate::server::ServerTls;

#[derive(Debug, Clone, Default)]
pub struct Info {
    /// `$ssl_server_name`: the SNI name the client sent.
    pub server_name: Option<Box<str>>,
    /// `$ssl_protocol`: `TLSv1.2` or `TLSv1.3`.
    pub protocol: &'static str,
    /// `$ssl_cipher`: OpenSSL's name of the suite.
    pub cipher: &'static str,
    /// `$ssl_session_reused`: `r` or `.`.
    pub reused: bool,
    /// `$ssl_session_id` (session_id.rs).
    pub session_id: Box<str>,
    /// `$ssl_client_verify` (`NONE` when no certificate was asked for or sent).
    pub client_verify: Box<str>,
    /// nginx's answer to every request on this connection when `ssl_verify_client` is not
    /// satisfied: 496 (`on`, no certificate) or 495 (`on`/`optional`, it did not verify),
    /// both sent as 400 with their own page.
    pub refusal: Option<u16>,
    /// `$ssl_curve`: OpenSSL's name of the key exchange group.
    pub curve: Box<str>,
    /// `$ssl_curves` and `$ssl_ciphers`: the groups and suites the client offered,
    /// OpenSSL's names joined by `:`.
    pub curves: Box<str>,
    pub ciphers: Box<str>,
    /// The client's certificate (DER), for `$ssl_client_*`; `None` when none was asked for
    /// or sent.
    pub client_cert: Option<Box<[u8]>>,
    /// `ssl_ocsp` still to ask (`check_ocsp`): the server's settings that ask it.
    pub(crate) ocsp: Option<std::sync::Arc<crate::ServerTls>>,
}

impl Info {
    /// `offered`: the ClientHello's groups and suites (`$ssl_curves`, `$ssl_ciphers`).
    pub fn of(conn: &ServerConnection, tls: &ServerTls, offered: [Box<str>; 2]) -> Info {
        let [curves, ciphers] = offered;
        use ringfront_config::VerifyClient as V;
        let (verify, mode) = match &tls.verdict {
            Some(v) => (v.judge(conn.peer_certificates()), v.mode),
            None => ("NONE".to_string(), V::Off),
        };
        let refusal = match (mode, verify.as_str()) {
            (V::On, "NONE") => Some(496),
            (V::On | V::Optional, v) if v.starts_with("FAILED") => Some(495),
            // nginx's `ngx_ssl_verify_error_optional`: only a missing issuer is let through.
            (V::OptionalNoCa, v) if v.starts_with("FAILED") && !issuer_missing(v) => Some(495),
            _ => None,
        };
        Info {
            server_name: conn.server_name().map(Into::into),
            protocol: protocol_name(conn.protocol_version()),
            cipher: cipher_name(conn.negotiated_cipher_suite().map(|s| s.suite())),
            reused: conn.handshake_kind() == Some(HandshakeKind::Resumed),
            session_id: Box::default(),
            client_verify: verify.into(),
            refusal,
            curve: conn
                .negotiated_key_exchange_group()
                .map_or_else(String::new, |g| crate::offered::group(g.name()))
                .into(),
            curves,
            ciphers,
            client_cert: conn
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.as_ref().into()),
            ocsp: None,
        }
    }

    /// `ssl_ocsp` refused a certificate that verified: `FAILED:why`, and the 495 page
    /// where the certificate is required to verify.
    pub(crate) fn fail_client_verify(&mut self, why: &str, mode: ringfront_config::VerifyClient) {
        use ringfront_config::VerifyClient as V;
        self.client_verify = format!("FAILED:{why}").into();
        if matches!(mode, V::On | V::Optional) {
            self.refusal = Some(495);
        }
    }

    /// True while `check_ocsp` has a question to ask.
    pub fn ocsp_pending(&self) -> bool {
        self.ocsp.is_some()
    }

    pub fn verified(&self) -> bool {
        &*self.client_verify == "SUCCESS"
    }
}

pub fn protocol_name(v: Option<ProtocolVersion>) -> &'static str {
    match v {
        Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
        Some(ProtocolVersion::TLSv1_2) => "TLSv1.2",
        _ => "",
    }
}

/// OpenSSL's names (the IANA ones for TLS 1.3, as OpenSSL reports them).
pub fn cipher_name(s: Option<CipherSuite>) -> &'static str {
    use CipherSuite as C;
    match s {
        Some(C::TLS13_AES_128_GCM_SHA256) => "TLS_AES_128_GCM_SHA256",
        Some(C::TLS13_AES_256_GCM_SHA384) => "TLS_AES_256_GCM_SHA384",
        Some(C::TLS13_CHACHA20_POLY1305_SHA256) => "TLS_CHACHA20_POLY1305_SHA256",
        Some(C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384) => "ECDHE-ECDSA-AES256-GCM-SHA384",
        Some(C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384) => "ECDHE-RSA-AES256-GCM-SHA384",
        Some(C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256) => "ECDHE-ECDSA-CHACHA20-POLY1305",
        Some(C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256) => "ECDHE-RSA-CHACHA20-POLY1305",
        Some(C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) => "ECDHE-ECDSA-AES128-GCM-SHA256",
        Some(C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) => "ECDHE-RSA-AES128-GCM-SHA256",
        _ => "",
    }
}

/// Whether a failed verdict is one `optional_no_ca` tolerates: the issuer is not known
/// (OpenSSL's `UNABLE_TO_GET_ISSUER_CERT[_LOCALLY]`, the self-signed ones,
/// `UNABLE_TO_VERIFY_LEAF_SIGNATURE`).
fn issuer_missing(verdict: &str) -> bool {
    matches!(
        verdict.strip_prefix("FAILED:"),
        Some(
            "unable to get local issuer certificate"
                | "unable to get issuer certificate"
                | "self-signed certificate"
                | "self-signed certificate in certificate chain"
                | "unable to verify the first certificate"
        )
    )
}
