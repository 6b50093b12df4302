//! nginx's `ngx_unescape_uri` with `NGX_UNESCAPE_REDIRECT`, applied to a rewrite's redirect
//! URL before the request's arguments are appended: `%XX` of a printable character above
//! `%` is decoded, other escapes stay, and everything from the first `?` (written or
//! decoded) on is kept as it is. Malformed escapes are dropped as nginx drops them.

/// The URL with nginx's redirect unescaping.
pub fn unescape_redirect(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    let mut hi = 0u8;
    let mut state = 0u8;
    for (i, &ch) in src.iter().enumerate() {
        match state {
            0 if ch == b'?' => {
                out.extend_from_slice(&src[i..]);
                return out;
            }
            0 if ch == b'%' => state = 1,
            0 => out.push(ch),
            1 => {
                state = 0;
                match hex(ch) {
                    Some(v) => {
                        hi = v;
                        state = 2;
                    }
                    // The invalid quoted character.
                    None => out.push(ch),
                }
            }
            _ => {
                state = 0;
                let Some(lo) = hex(ch) else { continue };
                let c = (hi << 4) + lo;
                // Only a hexadecimal letter's `?` ends the path here, as nginx's branches do.
                if c == b'?' && !ch.is_ascii_digit() {
                    out.push(c);
                    out.extend_from_slice(src.get(i + 1..).unwrap_or_default());
                    return out;
                }
                if c > b'%' && c < 0x7f {
                    out.push(c);
                } else {
                    out.extend_from_slice(&src[i - 2..=i]);
                }
            }
        }
    }
    out
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        _ => match c | 0x20 {
            l @ b'a'..=b'f' => Some(l - b'a' + 10),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::unescape_redirect as u;

    #[test]
    fn as_nginx_tests_expect() {
        assert_eq!(
            u(b"http%3A%2F%2Fexample.com%2F%3Ffrom"),
            b"http://example.com/?from"
        );
        assert_eq!(
            u(b"http%3A%2F%2Fexample.com%0D%0Asplit"),
            b"http://example.com%0D%0Asplit"
        );
        assert_eq!(u(b"/a%20b%41"), b"/a%20bA");
        assert_eq!(u(b"/a?x=%41"), b"/a?x=%41");
        assert_eq!(u(b"/%zz/%4"), b"/zz/");
    }
}
