//! The query string of a status request: `format=`, `status=`, `upstream=`.

use std::fmt;

use ringfront_config::StatusFormat;

/// Tengine's `status=` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    /// Peers in state `up` only.
    Up,
    /// Peers in every other state.
    Down,
}

/// The parsed parameters. Unknown parameters are ignored; when one is repeated, the last
/// occurrence wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `format=html|csv|json|prometheus`: overrides the location's configured format.
    pub format: Option<StatusFormat>,
    /// `status=up|down`.
    pub status: Option<StatusFilter>,
    /// `upstream=NAME`: only this upstream group.
    pub upstream: Option<String>,
}

/// A query the status handler answers with 400.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// `format=` with a value other than html, csv, json or prometheus.
    BadFormat(String),
    /// `status=` with a value other than up or down.
    BadStatus(String),
    /// `upstream=` with an empty value.
    EmptyUpstream,
    /// A `%` not followed by two hex digits, or a value that is not UTF-8 once decoded.
    BadEncoding,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::BadFormat(v) => write!(
                f,
                "invalid format {v:?}: expected html, csv, json or prometheus"
            ),
            QueryError::BadStatus(v) => write!(f, "invalid status {v:?}: expected up or down"),
            QueryError::EmptyUpstream => f.write_str("empty upstream name"),
            QueryError::BadEncoding => f.write_str("invalid percent-encoding in the query"),
        }
    }
}

impl std::error::Error for QueryError {}

impl Query {
    /// Parses a query string (with or without its leading `?`). Keys and values are
    /// percent-decoded and `+` means a space; format and status values compare
    /// case-insensitively.
    pub fn parse(query: &str) -> Result<Query, QueryError> {
        let query = query.strip_prefix('?').unwrap_or(query);
        let mut q = Query::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(k, true)?;
            match key.as_str() {
                "format" => {
                    let v = percent_decode(v, true)?;
                    q.format = Some(parse_format(&v).ok_or(QueryError::BadFormat(v))?);
                }
                "status" => {
                    let v = percent_decode(v, true)?;
                    q.status = Some(if v.eq_ignore_ascii_case("up") {
                        StatusFilter::Up
                    } else if v.eq_ignore_ascii_case("down") {
                        StatusFilter::Down
                    } else {
                        return Err(QueryError::BadStatus(v));
                    });
                }
                "upstream" => {
                    let v = percent_decode(v, true)?;
                    if v.is_empty() {
                        return Err(QueryError::EmptyUpstream);
                    }
                    q.upstream = Some(v);
                }
                _ => {}
            }
        }
        Ok(q)
    }
}

fn parse_format(v: &str) -> Option<StatusFormat> {
    [
        ("html", StatusFormat::Html),
        ("csv", StatusFormat::Csv),
        ("json", StatusFormat::Json),
        ("prometheus", StatusFormat::Prometheus),
    ]
    .into_iter()
    .find(|(name, _)| v.eq_ignore_ascii_case(name))
    .map(|(_, f)| f)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes (and `+` as a space when `plus` is set); the result must be UTF-8.
pub(crate) fn percent_decode(s: &str, plus: bool) -> Result<String, QueryError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = b.get(i + 1).copied().and_then(hex);
                let lo = b.get(i + 2).copied().and_then(hex);
                match (hi, lo) {
                    (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
                    _ => return Err(QueryError::BadEncoding),
                }
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| QueryError::BadEncoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_unknown() {
        assert_eq!(Query::parse("").unwrap(), Query::default());
        assert_eq!(Query::parse("?").unwrap(), Query::default());
        assert_eq!(Query::parse("a=1&&b&refresh=5").unwrap(), Query::default());
    }

    #[test]
    fn all_parameters() {
        let q = Query::parse("?format=CSV&status=down&upstream=back%20end&x=y").unwrap();
        assert_eq!(q.format, Some(StatusFormat::Csv));
        assert_eq!(q.status, Some(StatusFilter::Down));
        assert_eq!(q.upstream.as_deref(), Some("back end"));
        let q = Query::parse("format=prometheus&status=up&upstream=a+b").unwrap();
        assert_eq!(q.format, Some(StatusFormat::Prometheus));
        assert_eq!(q.status, Some(StatusFilter::Up));
        assert_eq!(q.upstream.as_deref(), Some("a b"));
        assert_eq!(
            Query::parse("format=html&format=json").unwrap().format,
            Some(StatusFormat::Json)
        );
        assert_eq!(
            Query::parse("%66ormat=%6Ason").unwrap().format,
            Some(StatusFormat::Json)
        );
    }

    #[test]
    fn bad_values() {
        assert_eq!(
            Query::parse("format=xml"),
            Err(QueryError::BadFormat("xml".into()))
        );
        assert_eq!(
            Query::parse("format="),
            Err(QueryError::BadFormat(String::new()))
        );
        assert_eq!(
            Query::parse("status=sideways"),
            Err(QueryError::BadStatus("sideways".into()))
        );
        assert_eq!(Query::parse("upstream="), Err(QueryError::EmptyUpstream));
        assert_eq!(Query::parse("upstream=%zz"), Err(QueryError::BadEncoding));
        assert_eq!(Query::parse("upstream=%4"), Err(QueryError::BadEncoding));
        assert_eq!(Query::parse("upstream=%"), Err(QueryError::BadEncoding));
        assert_eq!(
            Query::parse("upstream=%ff%fe"),
            Err(QueryError::BadEncoding)
        );
        // A bad escape in an ignored parameter's value does not matter.
        assert!(Query::parse("x=%zz").is_ok());
        // Multi-byte UTF-8 decodes.
        assert_eq!(
            Query::parse("upstream=%C3%A9").unwrap().upstream.as_deref(),
            Some("é")
        );
    }
}
