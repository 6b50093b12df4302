//! nginx's rule for request header names (`ngx_http_parse_header_line`): letters, digits
//! and `-` are valid, `_` only with `underscores_in_headers on`; a line whose name has any
//! other character is an "invalid header line", dropped (and logged at `info`) with
//! `ignore_invalid_headers on`, the default, and kept with `off`.

/// The two server directives that decide which request header lines are dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderNames {
    /// `underscores_in_headers` (default `off`).
    pub underscores: bool,
    /// `ignore_invalid_headers` (default `on`).
    pub ignore_invalid: bool,
}

impl Default for HeaderNames {
    fn default() -> Self {
        HeaderNames {
            underscores: false,
            ignore_invalid: true,
        }
    }
}

impl HeaderNames {
    /// Whether a line named `name` is dropped.
    pub fn drops(&self, name: &[u8]) -> bool {
        self.ignore_invalid && !name.iter().all(|&b| self.valid(b))
    }

    fn valid(&self, b: u8) -> bool {
        b.is_ascii_alphanumeric() || b == b'-' || (b == b'_' && self.underscores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_defaults_drop_underscores_and_punctuation() {
        let n = HeaderNames::default();
        assert!(!n.drops(b"X-Forwarded-For"));
        assert!(!n.drops(b"x-9"));
        assert!(n.drops(b"X_Api_Key"));
        assert!(n.drops(b"X.Dot"));
        assert!(n.drops(b"a~b"));
    }

    #[test]
    fn underscores_on_keeps_them_and_ignore_off_keeps_all() {
        let u = HeaderNames {
            underscores: true,
            ignore_invalid: true,
        };
        assert!(!u.drops(b"X_Api_Key"));
        assert!(u.drops(b"X.Dot"));
        let keep = HeaderNames {
            underscores: false,
            ignore_invalid: false,
        };
        assert!(!keep.drops(b"X_Api_Key"));
        assert!(!keep.drops(b"X.Dot"));
    }
}
