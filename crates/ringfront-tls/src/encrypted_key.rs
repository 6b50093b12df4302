//! Private keys encrypted with a passphrase (`ssl_password_file`, `proxy_ssl_password_file`):
//! PKCS#8 `ENCRYPTED PRIVATE KEY` (PBES2 with PBKDF2 or scrypt and AES-CBC, what OpenSSL 3
//! writes for `genrsa -aes128`), the passphrases tried in order as nginx's
//! `ngx_ssl_password_callback` does. The older `Proc-Type: 4,ENCRYPTED` form is refused
//! with a message saying so.

use ringfront_config::SslFile;
use rustls_pki_types::PrivateKeyDer;

use crate::error::TlsError;

const LABEL: &str = "ENCRYPTED PRIVATE KEY";

/// Whether a key file holds an encrypted key (of either form).
pub fn is_encrypted(pem: &[u8]) -> bool {
    let text = String::from_utf8_lossy(pem);
    text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || text.contains("Proc-Type: 4,ENCRYPTED")
}

/// The key of `pem` decrypted with the first passphrase of `passwords` that opens it.
pub fn decrypt(
    key: &SslFile,
    pem: &[u8],
    passwords: Option<&[Vec<u8>]>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let fail = |why: &str| {
        TlsError::at(
            key,
            format!(
                "cannot load certificate key \"{}\": PEM_read_bio_PrivateKey() failed (SSL: {why})",
                key.path.display()
            ),
        )
    };
    let text = String::from_utf8_lossy(pem);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(fail(
            "the legacy \"Proc-Type: 4,ENCRYPTED\" form is not supported by ringfront; \
             convert it with openssl pkcs8 -topk8",
        ));
    }
    let Some(passwords) = passwords else {
        return Err(fail(
            "error:0480006D:PEM routines::problems getting password",
        ));
    };
    let der = section(&text).ok_or_else(|| fail("error:0480006C:PEM routines::no start line"))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice()).map_err(|e| {
        fail(&format!(
            "error:1E08010C:DECODER routines::unsupported ({e})"
        ))
    })?;
    for p in passwords {
        if let Ok(doc) = info.decrypt(p) {
            let der = doc.as_bytes().to_vec();
            return Ok(PrivateKeyDer::Pkcs8(der.into()));
        }
    }
    Err(fail("error:1C800064:Provider routines::bad decrypt"))
}

/// The DER of the `ENCRYPTED PRIVATE KEY` section.
fn section(text: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {LABEL}-----");
    let end = format!("-----END {LABEL}-----");
    let start = text.find(&begin)?;
    let stop = text[start..].find(&end)? + start + end.len();
    let (label, der) = pkcs8::der::pem::decode_vec(&text.as_bytes()[start..stop]).ok()?;
    (label == LABEL).then_some(der)
}

/// nginx's `ngx_ssl_read_password_file`: one passphrase per line (LF or CRLF), empty
/// lines skipped; a file without any gives the empty passphrase.
pub fn read_passwords(f: &SslFile) -> Result<Vec<Vec<u8>>, TlsError> {
    let bytes = std::fs::read(&f.path)
        .map_err(|e| TlsError::at(f, format!("open() \"{}\" failed ({e})", f.path.display())))?;
    let mut list: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec())
        .filter(|l| !l.is_empty())
        .collect();
    if list.is_empty() {
        list.push(Vec::new());
    }
    Ok(list)
}
