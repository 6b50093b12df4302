//! Why a configuration that parsed cannot be turned into a running snapshot.

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("invalid regular expression \"{0}\": {1}")]
    Regex(String, String),
    #[error("upstream \"{0}\" not found")]
    NoUpstream(String),
    /// A certificate, key or TLS setting that cannot be used; its text names the place.
    #[error("{0}")]
    Tls(#[from] ringfront_tls::TlsError),
}

impl BuildError {
    /// Whether the message already ends with the directive's `in FILE:LINE`.
    pub fn placed(&self) -> bool {
        matches!(self, BuildError::Tls(_))
    }
}
