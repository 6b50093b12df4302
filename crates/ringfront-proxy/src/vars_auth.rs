//! `$remote_user`: the user name of a `Basic` `Authorization` field, read as nginx's
//! `ngx_http_auth_basic_user` reads it (`Basic ` any case, spaces, base64 with optional
//! padding, the part before the first `:`; anything else is "not found").

/// The user name decoded from `authorization`, or `None` (nginx's "not found").
pub fn remote_user(authorization: &[u8]) -> Option<Vec<u8>> {
    let (mut decoded, colon) = credentials(authorization)?;
    decoded.truncate(colon);
    Some(decoded)
}

/// The decoded `user:password` and where its first `:` is (after a non-empty user).
pub fn credentials(authorization: &[u8]) -> Option<(Vec<u8>, usize)> {
    let scheme = authorization.get(..6)?;
    if !scheme.eq_ignore_ascii_case(b"Basic ") {
        return None;
    }
    let encoded = &authorization[6..];
    let start = encoded.iter().position(|&b| b != b' ')?;
    let decoded = decode_base64(&encoded[start..])?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    (colon > 0).then_some((decoded, colon))
}

/// nginx's `ngx_decode_base64`: the standard alphabet up to the first `=`, refused on any
/// other byte or a length of 1 mod 4.
pub(crate) fn decode_base64(src: &[u8]) -> Option<Vec<u8>> {
    let len = src.iter().position(|&b| b == b'=').unwrap_or(src.len());
    let digits: Vec<u8> = src[..len]
        .iter()
        .map(|&b| sextet(b))
        .collect::<Option<_>>()?;
    if digits.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let mut n = 0u32;
        for (i, d) in group.iter().enumerate() {
            n |= u32::from(*d) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    Some(out)
}

fn sextet(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_user_as_nginx() {
        let user = |a: &[u8]| remote_user(a).map(|u| String::from_utf8(u).unwrap());
        assert_eq!(user(b"Basic dXNlcjpzZWNyZXQ="), Some("user".into()));
        assert_eq!(
            user(b"basic   dXNlcjpzZWNyZXQ"),
            Some("user".into()),
            "case, spaces, no pad"
        );
        assert_eq!(user(b"Basic OnNlY3JldA=="), None, "empty user");
        assert_eq!(user(b"Basic dXNlcg=="), None, "no colon");
        assert_eq!(user(b"Basic dXNlcjp*"), None, "bad byte");
        assert_eq!(user(b"Basic "), None);
        assert_eq!(user(b"Bearer dXNlcjpzZWNyZXQ="), None);
        assert_eq!(user(b"Basic YQ"), None, "one byte, no colon");
        assert_eq!(user(b"Basic YTpi"), Some("a".into()));
    }
}
