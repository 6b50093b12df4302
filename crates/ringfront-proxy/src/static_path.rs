//! From a request URI to a file path as nginx's static module maps it: `root` + URI, or
//! `alias` + what follows the location's prefix. The URI is nginx's `$uri`: the request's
//! own is percent-decoded and normalised when the request is read (`ringfront_http::uri`).

use std::path::Path;

/// The request cannot be mapped (nginx answers 400 while parsing the request line).
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid;

/// The URI with `//`, `.` and `..` resolved (the request's own URI arrives decoded and
/// resolved already — `ringfront_http::uri` —; one a rewrite made is taken as it is, as
/// nginx does, but may not leave the root).
pub fn normalise(uri: &[u8]) -> Result<Vec<u8>, Invalid> {
    ringfront_http::uri::resolve_dots(uri).map_err(|_| Invalid)
}

/// The file for `uri` (normalised): `root` + URI; with `alias`, the alias + the URI after
/// the first `prefix_len` bytes (`None`: a regex location, where the alias is the path).
pub fn map(root: &Path, alias: Option<Option<usize>>, uri: &[u8]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut path = root.as_os_str().as_bytes().to_vec();
    match alias {
        None => path.extend_from_slice(uri),
        Some(Some(n)) => path.extend_from_slice(uri.get(n..).unwrap_or_default()),
        Some(None) => {}
    }
    path
}

/// nginx's `NGX_ESCAPE_URI` (the `Location` of a directory's or a location's auto redirect,
/// a decoded URI passed upstream): what RFC 3986 does not allow unescaped — controls,
/// space, `"<>\^`{|}`, DEL and bytes from 0x80 — and `#`, `%`, `?`.
pub fn escape_uri(out: &mut Vec<u8>, uri: &[u8]) {
    for &b in uri {
        if b"\" #%<>?\\^`{|}".contains(&b) || !(0x20..0x7f).contains(&b) {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

/// nginx's `NGX_ESCAPE_ARGS` (a capture of a decoded URI copied into a rewrite's
/// arguments): controls, space, `"#%&+;<>?\^`{|}`, DEL and bytes from 0x80.
pub fn escape_args(out: &mut Vec<u8>, text: &[u8]) {
    for &b in text {
        if b"\" #%&+;<>?\\^`{|}".contains(&b) || !(0x20..0x7f).contains(&b) {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Result<String, Invalid> {
        normalise(s.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn normalises_as_nginx() {
        assert_eq!(n("/a//b/./c").unwrap(), "/a/b/c");
        assert_eq!(n("/a/b/../c").unwrap(), "/a/c");
        assert_eq!(n("/a/%2e%2e/c").unwrap(), "/a/%2e%2e/c");
        assert_eq!(n("/a/.").unwrap(), "/a/");
        assert_eq!(n("/a/b/..").unwrap(), "/a/");
        assert_eq!(n("/a/").unwrap(), "/a/");
        assert_eq!(n("/").unwrap(), "/");
        assert_eq!(n("/x%20y").unwrap(), "/x%20y");
        assert_eq!(n("/.."), Err(Invalid));
        assert_eq!(n("/a/../../etc/passwd"), Err(Invalid));
        assert_eq!(n("/a\0"), Err(Invalid));
    }

    #[test]
    fn maps_root_and_alias() {
        let root = Path::new("/srv/www");
        assert_eq!(map(root, None, b"/a/b.html"), b"/srv/www/a/b.html");
        assert_eq!(
            map(Path::new("/data/"), Some(Some(3)), b"/i/x.gif"),
            b"/data/x.gif"
        );
        assert_eq!(map(Path::new("/data/f"), Some(None), b"/any"), b"/data/f");
        let mut o = Vec::new();
        escape_uri(&mut o, b"/a b/%\xff");
        assert_eq!(o, b"/a%20b/%25%FF");
        let mut o = Vec::new();
        escape_uri(&mut o, b"/\"#<>?\\^`{|}&+;=:@!$'()*,~");
        assert_eq!(o, b"/%22%23%3C%3E%3F%5C%5E%60%7B%7C%7D&+;=:@!$'()*,~");
        let mut o = Vec::new();
        escape_args(&mut o, b"a=b&c d/%+~");
        assert_eq!(o, b"a=b%26c%20d/%25%2B~");
    }
}
