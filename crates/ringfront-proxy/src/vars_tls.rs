//! `$ssl_session_id`, `$ssl_curve`, `$ssl_curves`, `$ssl_ciphers` and the `$ssl_client_*` certificate
//! variables: empty (`-` in logs) on a plain connection or without a client certificate,
//! as nginx.

use ringfront_config::SslVar;
use ringfront_tls::client_cert as cert;
use ringfront_tls::Info;

/// Appends one TLS variable; `empty` when it has no value.
pub fn push(out: &mut Vec<u8>, var: SslVar, tls: Option<&Info>, empty: &[u8]) {
    let text = tls.map_or_else(String::new, |t| value(var, t));
    if text.is_empty() {
        out.extend_from_slice(empty);
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

fn value(var: SslVar, t: &Info) -> String {
    match var {
        SslVar::SessionId => t.session_id.to_string(),
        SslVar::Curve => t.curve.to_string(),
        SslVar::Curves => t.curves.to_string(),
        SslVar::Ciphers => t.ciphers.to_string(),
        _ => t
            .client_cert
            .as_deref()
            .map_or_else(String::new, |der| of_cert(var, der)),
    }
}

/// A certificate variable of the client's certificate `der`.
fn of_cert(var: SslVar, der: &[u8]) -> String {
    match var {
        SslVar::ClientCert => cert::pem_tabbed(der),
        SslVar::ClientRawCert => cert::pem(der),
        SslVar::ClientEscapedCert => cert::pem_escaped(der),
        SslVar::ClientSDn => cert::subject_dn(der),
        SslVar::ClientIDn => cert::issuer_dn(der),
        SslVar::ClientSDnLegacy => cert::subject_dn_legacy(der),
        SslVar::ClientIDnLegacy => cert::issuer_dn_legacy(der),
        SslVar::ClientSerial => cert::serial(der),
        SslVar::ClientFingerprint => cert::fingerprint(der),
        SslVar::ClientVStart => cert::validity(der).map(|v| v.0).unwrap_or_default(),
        SslVar::ClientVEnd => cert::validity(der).map(|v| v.1).unwrap_or_default(),
        SslVar::ClientVRemain => {
            let now = (crate::clock::unix_ms() / 1000) as i64;
            cert::days_left(der, now)
                .map(|d| d.to_string())
                .unwrap_or_default()
        }
        SslVar::SessionId | SslVar::Curve | SslVar::Curves | SslVar::Ciphers => String::new(),
    }
}
