//! What the static module of a location serves with (nginx's `root`/`alias`, `index`,
//! `types`, `default_type`), merged as nginx merges them.

use std::collections::HashMap;
use std::sync::Arc;

/// The static-file settings of one location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// `alias` (not `root`) wrote the path: `Some(n)`: it replaces the URI's first `n`
    /// bytes (the prefix of the location that wrote it; nested locations inherit that);
    /// `Some(None)`: written in a regex location, it is the whole file path.
    pub alias: Option<Option<usize>>,
    /// `index` files tried, in order, for a URI ending in `/` (default `index.html`);
    /// variables allowed, one starting with `/` is redirected to untested.
    pub index: Vec<crate::model::Template>,
    /// `types {}`: lower-cased extension -> MIME type (nginx's default: html, gif, jpg).
    pub types: Arc<HashMap<String, String>>,
    /// `default_type` (default `text/plain`).
    pub default_type: String,
    /// `expires` (default off).
    pub expires: Expires,
    /// `if_modified_since` (default `exact`).
    pub if_modified_since: IfModifiedSince,
    /// `log_not_found` (default on): a missing file's 404 is logged.
    pub log_not_found: bool,
    /// `try_files` of this level (never inherited, as nginx).
    pub try_files: Option<TryFiles>,
    /// `etag` (default on): static files get an `ETag` (`"MTIME-SIZE"` in hex).
    pub etag: bool,
    /// `max_ranges` (default none: no limit): more ranges serve the whole file; 0 turns
    /// ranges off (no `Accept-Ranges` either).
    pub max_ranges: Option<u64>,
}

/// `if_modified_since off | exact | before`: how `If-Modified-Since` is compared with the
/// file's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IfModifiedSince {
    /// Never 304 by time.
    Off,
    /// 304 only for exactly the file's time.
    #[default]
    Exact,
    /// 304 for the file's time or later.
    Before,
}

/// `try_files FILE ... URI | =CODE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TryFiles {
    /// The files tried in order, and whether the name was written ending in `/` (that
    /// slash taken off, as nginx): it must be a folder; the others must not.
    pub files: Vec<(crate::model::Template, bool)>,
    pub last: TryLast,
}

/// What `try_files` does when no file is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TryLast {
    /// An internal redirect to this URI (`?` splits off new arguments).
    Uri(crate::model::Template),
    /// `=CODE`.
    Code(u16),
    /// `@NAME` (with its `@`): the named location, with the URI as it is.
    Named(String),
}

pub use crate::expires::Expires;

impl Default for Files {
    fn default() -> Self {
        Files {
            alias: None,
            index: vec![crate::model::Template {
                parts: vec![crate::model::TemplatePart::Literal(
                    "index.html".to_string(),
                )],
            }],
            types: Arc::new(default_types()),
            default_type: "text/plain".to_string(),
            expires: Expires::Off,
            if_modified_since: IfModifiedSince::Exact,
            log_not_found: true,
            try_files: None,
            etag: true,
            max_ranges: None,
        }
    }
}

/// nginx's `ngx_http_core_default_types`, used when no level writes `types`.
pub(crate) fn default_types() -> HashMap<String, String> {
    [
        ("html", "text/html"),
        ("gif", "image/gif"),
        ("jpg", "image/jpeg"),
    ]
    .into_iter()
    .map(|(e, t)| (e.to_string(), t.to_string()))
    .collect()
}

impl Files {
    /// The `Content-Type` of `uri` by its extension (nginx's `r->exten`: after the last `.`
    /// of the last path segment, matched case-insensitively).
    pub fn content_type(&self, uri: &str) -> &str {
        // Bytes, not chars: `/` and `.` are ASCII, never inside a UTF-8 sequence (a char
        // search here was ~200 instructions of a `return`'s ~9,700).
        let bytes = uri.as_bytes();
        let last = bytes.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        let ext = match bytes[last..].iter().rposition(|&b| b == b'.') {
            Some(i) => &uri[last + i + 1..],
            None => return &self.default_type,
        };
        let found = match ext.bytes().any(|b| b.is_ascii_uppercase()) {
            true => self.types.get(&ext.to_ascii_lowercase()),
            false => self.types.get(ext),
        };
        found.map_or(&self.default_type, |t| t.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_by_extension() {
        let f = Files::default();
        assert_eq!(f.content_type("/a/b.HTML"), "text/html");
        assert_eq!(f.content_type("/a.jpg/b"), "text/plain");
        assert_eq!(f.content_type("/x.gif"), "image/gif");
        assert_eq!(f.content_type("/x."), "text/plain");
        assert_eq!(f.content_type("x.jpg"), "image/jpeg");
        assert_eq!(f.content_type("/dir.d/noext"), "text/plain");
        assert_eq!(f.content_type("/é.d/ü.GIF"), "image/gif");
        assert_eq!(f.content_type(""), "text/plain");
    }
}
