//! Variables read from a response head kept raw (status line, then `Name: value` lines):
//! `$upstream_http_NAME`, `$upstream_cookie_NAME` from the relayed upstream response and
//! `$sent_http_NAME` from the head sent to the client, found as nginx finds them.

/// The head of a whole response in `out` (up to its blank line), for `$sent_http_*`.
pub fn head_of(out: &[u8]) -> &[u8] {
    let end = out.windows(4).position(|w| w == b"\r\n\r\n");
    end.map_or(out, |i| &out[..i + 2])
}

/// The fields of a raw head, in order (the status line and malformed lines skipped).
fn fields(head: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    head.split(|&b| b == b'\n').skip(1).filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        Some((&line[..colon], line[colon + 1..].trim_ascii()))
    })
}

/// Whether a field's name is what a variable names: lower-cased, `-` read as `_`
/// (`ngx_http_variable_unknown_header`).
fn names(field: &[u8], var: &str) -> bool {
    field.len() == var.len()
        && field.iter().zip(var.bytes()).all(|(&f, v)| {
            let f = match f.to_ascii_lowercase() {
                b'-' => b'_',
                f => f,
            };
            f == v
        })
}

/// The first field `var` names (`$upstream_http_x_len`, `$sent_http_etag`).
pub fn field<'h>(head: &'h [u8], var: &str) -> Option<&'h [u8]> {
    fields(head).find_map(|(n, v)| names(n, var).then_some(v))
}

/// Every field `var` names, joined by `, ` as nginx joins `$sent_http_cache_control` and
/// `$sent_http_link`; whether there was one.
pub fn joined(out: &mut Vec<u8>, head: &[u8], var: &str) -> bool {
    let mut found = false;
    for (_, v) in fields(head).filter(|(n, _)| names(n, var)) {
        if found {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(v);
        found = true;
    }
    found
}

/// `s` without its leading spaces (nginx skips spaces only, not tabs).
fn spaces(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ').count();
    &s[n..]
}

/// Cookie `name` of the first `Set-Cookie` that starts with it (case-insensitively, spaces
/// allowed before `=`): its value up to `;` (`ngx_http_parse_set_cookie_lines`).
pub fn set_cookie<'h>(head: &'h [u8], name: &str) -> Option<&'h [u8]> {
    fields(head)
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"set-cookie"))
        .find_map(|(_, v)| {
            if name.len() >= v.len() || !v[..name.len()].eq_ignore_ascii_case(name.as_bytes()) {
                return None;
            }
            let rest = spaces(&v[name.len()..]).strip_prefix(b"=")?;
            let rest = spaces(rest);
            let end = rest.iter().position(|&b| b == b';').unwrap_or(rest.len());
            Some(&rest[..end])
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nX-Len: 12\r\nSet-Cookie: a=1; Path=/\r\n\
        Set-Cookie: SID = x y ; HttpOnly\r\nCache-Control: private\r\ncache-control: no-store\r\n\r\n";

    #[test]
    fn fields_by_variable_name() {
        assert_eq!(field(HEAD, "x_len"), Some(&b"12"[..]));
        assert_eq!(field(HEAD, "x_le"), None);
        assert_eq!(field(HEAD, ""), None);
        assert_eq!(
            field(b"HTTP/1.1 200 OK\nX-Len:5\n\n", "x_len"),
            Some(&b"5"[..])
        );
        let mut o = Vec::new();
        assert!(joined(&mut o, HEAD, "cache_control"));
        assert_eq!(o, b"private, no-store");
        assert!(!joined(&mut o, HEAD, "link"));
    }

    #[test]
    fn cookies_as_nginx_parses_set_cookie() {
        assert_eq!(set_cookie(HEAD, "a"), Some(&b"1"[..]));
        assert_eq!(set_cookie(HEAD, "sid"), Some(&b"x y "[..]));
        assert_eq!(set_cookie(HEAD, "s"), None);
        assert_eq!(set_cookie(HEAD, "b"), None);
        assert_eq!(
            set_cookie(b"HTTP/1.1 200 OK\r\nSet-Cookie: a\r\n\r\n", "a"),
            None
        );
        let tabbed = b"HTTP/1.1 200 OK\r\nSet-Cookie: tc\t=\tcontent ;\r\n\r\n";
        assert_eq!(set_cookie(tabbed, "tc"), None);
    }
}
