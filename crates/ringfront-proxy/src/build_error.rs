//! Why a configuration that parsed cannot be turned into a running snapshot.

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("invalid regular expression \"{0}\": {1}")]
    Regex(String, String),
    #[error("upstream \"{0}\" not found")]
    NoUpstream(String),
}
