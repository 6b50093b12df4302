//! From a request URI to a file path as nginx's static module maps it: the URI
//! percent-decoded and normalised first (`ngx_http_parse_complex_uri`: `%XX` decoded, `//`
//! merged, `.` and `..` segments resolved, a `..` above `/` refused with 400), then `root`
//! + URI, or `alias` + what follows the location's prefix.

use std::path::Path;

/// The request cannot be mapped (nginx answers 400 while parsing the request line).
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid;

/// The decoded, normalised URI (bytes: a decoded URI need not be UTF-8).
pub fn normalise(raw: &[u8]) -> Result<Vec<u8>, Invalid> {
    let mut decoded = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        if b == b'%' {
            let hex = |j: usize| raw.get(j).and_then(|&c| (c as char).to_digit(16));
            let (Some(h), Some(l)) = (hex(i + 1), hex(i + 2)) else {
                return Err(Invalid);
            };
            decoded.push((h * 16 + l) as u8);
            i += 3;
        } else {
            decoded.push(b);
            i += 1;
        }
    }
    if decoded.first() != Some(&b'/') || decoded.contains(&0) {
        return Err(Invalid);
    }
    let mut out: Vec<u8> = Vec::with_capacity(decoded.len());
    let segments: Vec<&[u8]> = decoded[1..].split(|&b| b == b'/').collect();
    let last = segments.len() - 1;
    for (n, seg) in segments.iter().enumerate() {
        match *seg {
            b"" | b"." => {}
            b".." => {
                if out.is_empty() {
                    return Err(Invalid);
                }
                let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(cut);
            }
            s => {
                out.push(b'/');
                out.extend_from_slice(s);
                continue;
            }
        }
        // `/a/.`, `/a/..` and `/a/` end with a slash, as nginx leaves them.
        if n == last {
            out.push(b'/');
        }
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Ok(out)
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

/// nginx's `NGX_ESCAPE_URI` (for the `Location` of a directory's redirect): space, `#`,
/// `%`, `?`, controls and bytes from 0x7f.
pub fn escape_uri(out: &mut Vec<u8>, uri: &[u8]) {
    for &b in uri {
        if matches!(b, b' ' | b'#' | b'%' | b'?') || !(0x20..0x7f).contains(&b) {
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
        assert_eq!(n("/a/%2e%2e/c").unwrap(), "/c");
        assert_eq!(n("/a/.").unwrap(), "/a/");
        assert_eq!(n("/a/b/..").unwrap(), "/a/");
        assert_eq!(n("/a/").unwrap(), "/a/");
        assert_eq!(n("/").unwrap(), "/");
        assert_eq!(n("/x%20y").unwrap(), "/x y");
        assert_eq!(n("/.."), Err(Invalid));
        assert_eq!(n("/a/../../etc/passwd"), Err(Invalid));
        assert_eq!(n("/%zz"), Err(Invalid));
        assert_eq!(n("/a%00"), Err(Invalid));
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
    }
}
