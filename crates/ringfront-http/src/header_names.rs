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
    /// `max_headers`: more header lines than this are [`crate::RequestError::TooManyHeaders`]
    /// (at most [`crate::MAX_HEADERS`], the parser's own bound).
    pub max_lines: usize,
}

impl Default for HeaderNames {
    fn default() -> Self {
        HeaderNames {
            underscores: false,
            ignore_invalid: true,
            max_lines: crate::MAX_HEADERS,
        }
    }
}

/// Per byte: valid in every name (letters, digits, `-`), or only with `underscores_in_headers
/// on` (`_`); 0 for the rest. One lookup a byte, where the comparisons were several.
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'-' {
            t[b] = ALWAYS;
        } else if c == b'_' {
            t[b] = UNDERSCORE;
        }
        b += 1;
    }
    t
};
const ALWAYS: u8 = 1;
const UNDERSCORE: u8 = 2;

impl HeaderNames {
    /// Whether a line named `name` is dropped.
    pub fn drops(&self, name: &[u8]) -> bool {
        let allowed = match self.underscores {
            true => ALWAYS | UNDERSCORE,
            false => ALWAYS,
        };
        self.ignore_invalid && name.iter().any(|&b| CLASS[b as usize] & allowed == 0)
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
            ..HeaderNames::default()
        };
        assert!(!u.drops(b"X_Api_Key"));
        assert!(u.drops(b"X.Dot"));
        let keep = HeaderNames {
            ignore_invalid: false,
            ..HeaderNames::default()
        };
        assert!(!keep.drops(b"X_Api_Key"));
        assert!(!keep.drops(b"X.Dot"));
    }

    /// Long names, the odd byte at every position.
    #[test]
    fn long_names_are_checked_at_every_position() {
        let n = HeaderNames::default();
        for len in [15, 16, 17, 31, 32, 33, 64, 100] {
            let good: Vec<u8> = (0..len).map(|i| b"Ab9-"[i % 4]).collect();
            assert!(!n.drops(&good), "{len}");
            for at in 0..len {
                for odd in [b'_', b'.', b' ', 0, 0x80, 0xff, b'@', b'[', b'`', b'{'] {
                    let mut name = good.clone();
                    name[at] = odd;
                    assert!(n.drops(&name), "len {len}, byte {odd:#04x} at {at}");
                }
            }
        }
    }

    #[test]
    fn the_table_agrees_with_nginx_rule_for_every_byte() {
        for b in 0..=255u8 {
            let name = [b'a', b, b'z'];
            for underscores in [false, true] {
                let n = HeaderNames {
                    underscores,
                    ..HeaderNames::default()
                };
                let valid = b.is_ascii_alphanumeric() || b == b'-' || (b == b'_' && underscores);
                assert_eq!(
                    n.drops(&name),
                    !valid,
                    "byte {b:#04x}, underscores {underscores}"
                );
            }
        }
    }
}
