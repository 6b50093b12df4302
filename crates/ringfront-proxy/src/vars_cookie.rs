//! `$cookie_NAME` as nginx finds it (`ngx_http_parse_multi_header_lines`): in every
//! `Cookie` field, a pair starts the value or follows a `;` or `,`; the name matches
//! ignoring case, spaces may surround `=`, the value runs to the next `;`.

fn spaces(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ').count();
    &s[n..]
}

/// Cookie `name` in one `Cookie` field's value.
pub fn find<'v>(value: &'v [u8], name: &str) -> Option<&'v [u8]> {
    let name = name.as_bytes();
    if name.len() > value.len() {
        return None;
    }
    let mut s = value;
    while !s.is_empty() {
        if s.len() >= name.len() && s[..name.len()].eq_ignore_ascii_case(name) {
            if let Some(v) = spaces(&s[name.len()..]).strip_prefix(b"=") {
                let v = spaces(v);
                let end = v.iter().position(|&b| b == b';').unwrap_or(v.len());
                return Some(&v[..end]);
            }
        }
        let next = s.iter().position(|&b| b == b';' || b == b',')?;
        s = spaces(&s[next + 1..]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_nginx_parses_cookie_lines() {
        assert_eq!(find(b"a=1; b=2", "b"), Some(&b"2"[..]));
        assert_eq!(find(b"a=1; B = 2 ;c=3", "b"), Some(&b"2 "[..]));
        assert_eq!(find(b"a=1,b=2", "b"), Some(&b"2"[..]));
        assert_eq!(find(b"ab=1; b=2", "b"), Some(&b"2"[..]));
        assert_eq!(find(b"xb=1", "b"), None);
        assert_eq!(find(b"b", "b"), None);
        assert_eq!(find(b"a=1", "abc"), None);
    }
}
