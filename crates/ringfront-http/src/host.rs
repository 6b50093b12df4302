//! nginx's rules for the host of a request: the request target's forms (origin-form, or
//! absolute-form with any letters-only scheme; nginx refuses `*`, authority-form and
//! anything else with 400), the authority grammar of its request-line parser (a name of
//! letters, digits, `.` and `-`, or a bracketed literal, then `:digits`), and
//! `ngx_http_validate_host` for the `Host` field and the target's host (no `..`, no path
//! separators or control bytes; the port and one trailing dot are not part of the name, and
//! a name that is empty then is invalid).

use crate::ascii::{splat, zero_bytes};

/// Where a request target's authority and path are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetForm<'a> {
    /// `/path...`
    Origin,
    /// `scheme://authority[/path...]`: the authority and the origin-form path (`/` when the
    /// target has none).
    Absolute { authority: &'a [u8], path: &'a [u8] },
}

/// The target's form, or `None` when nginx would refuse it (400).
pub fn target_form(target: &[u8]) -> Option<TargetForm<'_>> {
    if target.first() == Some(&b'/') {
        return Some(TargetForm::Origin);
    }
    let colon = target.iter().position(|&b| b == b':')?;
    let (scheme, rest) = target.split_at(colon);
    if scheme.is_empty() || !scheme.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let rest = rest.strip_prefix(b"://")?;
    let end = rest
        .iter()
        .position(|b| matches!(b, b'/' | b'?'))
        .unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if !valid_authority(authority) {
        return None;
    }
    let path: &[u8] = if path.first() == Some(&b'/') {
        path
    } else {
        b"/"
    };
    Some(TargetForm::Absolute { authority, path })
}

/// nginx's request-line grammar for an authority (no user info): `name[:digits]` with a
/// name of letters, digits, `.` and `-`, or `[literal][:digits]`; then `validate_host`.
fn valid_authority(a: &[u8]) -> bool {
    let (name, rest) = if a.first() == Some(&b'[') {
        let Some(close) = a.iter().position(|&b| b == b']') else {
            return false;
        };
        let inner = &a[1..close];
        let ok = inner
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b":._~-!$&'()*+,;=".contains(&b));
        if !ok {
            return false;
        }
        a.split_at(close + 1)
    } else {
        let end = a.iter().position(|&b| b == b':').unwrap_or(a.len());
        let (name, rest) = a.split_at(end);
        if !name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        {
            return false;
        }
        (name, rest)
    };
    let port_ok = match rest.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    };
    port_ok && is_valid_host(name)
}

/// `ngx_http_validate_host`: whether a `Host` value (or a target's host) is acceptable.
pub fn is_valid_host(host: &[u8]) -> bool {
    // No control byte, space, DEL, slash or backslash, and no "..", eight bytes at a time (a
    // `Host` is one or two words; the last word overlaps the one before it), finding the
    // port's `:` on the way. Shorter values a byte at a time.
    let n = host.len();
    if n < 8 {
        return valid_bytes(host) && !host_name(host).is_empty();
    }
    let (mut at, mut prev_dot, mut colon) = (0, false, None);
    while at < n {
        let start = at.min(n - 8);
        let Some(x) = host.get(start..start + 8).and_then(|w| w.try_into().ok()) else {
            return false;
        };
        let x = u64::from_le_bytes(x);
        let dots = zero_bytes(x ^ splat(b'.'));
        // A dot after a dot: in the word, or across from the word before (an overlapping
        // word holds that pair itself).
        let across = start == at && prev_dot && dots & 0x80 != 0;
        if refused_in(x) || dots & (dots << 8) != 0 || across {
            return false;
        }
        prev_dot = dots >> 56 != 0;
        let colons = zero_bytes(x ^ splat(b':'));
        if colon.is_none() && colons != 0 {
            colon = Some(start + (colons.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let name = match host.first() {
        Some(b'[') => host_name(host),
        _ => {
            let name = host.get(..colon.unwrap_or(n)).unwrap_or_default();
            name.strip_suffix(b".").unwrap_or(name)
        }
    };
    !name.is_empty()
}

/// `is_valid_host`'s byte rules a byte at a time (short values).
fn valid_bytes(host: &[u8]) -> bool {
    let mut prev = 0u8;
    for &b in host {
        if b <= b' ' || b == 0x7f || b == b'/' || b == b'\\' || (b == b'.' && prev == b'.') {
            return false;
        }
        prev = b;
    }
    true
}

/// Whether a byte of `x` is one `ngx_http_validate_host` refuses anywhere: a control byte,
/// space, DEL, `/` or `\`.
fn refused_in(x: u64) -> bool {
    let low7 = splat(0x7f);
    // Bytes below 0x21 among those without the high bit: 0x7f - b + 0x21 has no high bit.
    let ascii = !x & splat(0x80);
    let small = !((x & low7) + splat(0x7f - 0x20)) & ascii;
    let named =
        zero_bytes(x ^ splat(0x7f)) | zero_bytes(x ^ splat(b'/')) | zero_bytes(x ^ splat(b'\\'));
    small | named != 0
}

/// The name part of a host value as nginx keeps it for `$host` and server selection: up to
/// the first `:` (after the `]` of a literal), without one trailing dot. Not lower-cased.
pub fn host_name(host: &[u8]) -> &[u8] {
    let end = if host.first() == Some(&b'[') {
        host.iter()
            .position(|&b| b == b']')
            .map_or(host.len(), |i| i + 1)
    } else {
        host.iter().position(|&b| b == b':').unwrap_or(host.len())
    };
    let name = &host[..end];
    name.strip_suffix(b".").unwrap_or(name)
}

/// The origin-form path of a target: the absolute form's path (`/` when it has none), or
/// the target itself.
pub fn origin_path(target: &[u8]) -> &[u8] {
    match target_form(target) {
        Some(TargetForm::Absolute { path, .. }) => path,
        _ => target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_nginx_accepts_and_refuses() {
        assert_eq!(target_form(b"/a?b"), Some(TargetForm::Origin));
        let abs = |a: &'static [u8], p: &'static [u8]| {
            Some(TargetForm::Absolute {
                authority: a,
                path: p,
            })
        };
        assert_eq!(target_form(b"http://h:1/x?y"), abs(b"h:1", b"/x?y"));
        assert_eq!(target_form(b"HTTP://A./h"), abs(b"A.", b"/h"));
        assert_eq!(target_form(b"ftp://h/h"), abs(b"h", b"/h"));
        assert_eq!(target_form(b"http://a?x"), abs(b"a", b"/"));
        assert_eq!(target_form(b"http://[::1]:8/h"), abs(b"[::1]:8", b"/h"));
        for bad in [
            &b"*"[..],
            b"foo",
            b"a:443",
            b"http:/x",
            b"http:///h",
            b"http://./",
            b"http://[v6/",
            b"http://host:1:2/",
            b"http://a_b/h",
            b"http://a:8x/h",
            b"http://u@h/",
            b"http://a..b/",
            b"1ttp://a/",
        ] {
            assert_eq!(target_form(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    /// `ngx_http_validate_host`'s byte rules, a byte at a time.
    fn valid_plain(host: &[u8]) -> bool {
        let refused = |b: u8| b <= b' ' || b == 0x7f || b == b'/' || b == b'\\';
        !host.iter().any(|&b| refused(b))
            && !host.windows(2).any(|w| w == b"..")
            && !host_name(host).is_empty()
    }

    #[test]
    fn word_at_a_time_agrees_with_the_byte_rules() {
        // Every byte value at every offset of hosts 1 to 19 bytes long, alone and after a
        // dot (the checks that cross a word's edge).
        for len in 1..20 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut h = vec![b'a'; len];
                    h[at] = b;
                    assert_eq!(is_valid_host(&h), valid_plain(&h), "{h:?}");
                    for before in [b'.', b':'] {
                        if at > 0 {
                            h[at - 1] = before;
                            assert_eq!(is_valid_host(&h), valid_plain(&h), "{h:?}");
                        }
                    }
                    h[0] = b'[';
                    assert_eq!(is_valid_host(&h), valid_plain(&h), "{h:?}");
                }
            }
        }
    }

    #[test]
    fn host_values_as_validate_host() {
        assert_eq!(host_name(b"Example.COM."), b"Example.COM");
        assert_eq!(host_name(b"a:1:2"), b"a");
        assert_eq!(host_name(b"[::1]:80"), b"[::1]");
        assert_eq!(host_name(b"h."), b"h");
        assert!(is_valid_host(b"a:1:2"));
        for bad in [&b"."[..], b".:80", b"", b"a..b", b"a/b", b"a b", b":80"] {
            assert!(!is_valid_host(bad), "{}", String::from_utf8_lossy(bad));
        }
        assert!(!is_valid_host(b"abcdefg..x"));
        assert!(!is_valid_host(b"abcdefgh.."));
        assert!(!is_valid_host(b"abcdefg.\x01"));
        assert!(is_valid_host(b"127.0.0.1:18300"));
        assert!(!is_valid_host(b".:8000000"));
        assert!(!is_valid_host(b":80000000"));
        assert!(is_valid_host(b"a:80000:0"));
        assert_eq!(origin_path(b"http://h"), b"/");
        assert_eq!(origin_path(b"/p"), b"/p");
    }
}
