//! A TLS setting that cannot be honoured: nginx's words, then where the directive is.

use ringfront_config::{Origin, SslFile};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(pub String);

impl TlsError {
    /// `MESSAGE in FILE:LINE`, the place being the directive that named `f`.
    pub fn at(f: &SslFile, msg: String) -> Self {
        Self::at_origin(Some(&f.origin), msg)
    }

    /// A default (empty) origin is no place: files named at run time (`proxy_ssl_certificate`
    /// with variables) are reported without one, as nginx's error log does.
    pub fn at_origin(o: Option<&Origin>, msg: String) -> Self {
        match o {
            Some(o) if o.line != 0 => TlsError(format!("{msg} in {}:{}", o.file.display(), o.line)),
            _ => TlsError(msg),
        }
    }
}
