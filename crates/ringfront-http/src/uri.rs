//! The request URI as nginx's `ngx_http_parse_complex_uri` reads it (with `merge_slashes
//! on`, nginx's default): `%XX` decoded — a decoded byte takes part in the path's syntax
//! (`%2F` is a slash, `%2E` a dot) except `%`, `#` and `?`, which stay literal, and `%00`
//! is refused —, `//` merged, `.` and `..` segments resolved (a `..` above `/` is
//! refused), the fragment (`#...`) cut from the path and the arguments. A URI without any
//! of `%`, `#`, `//`, `/.` is its own decoded form and is borrowed.

use std::borrow::Cow;

/// nginx answers 400 while parsing the request line.
#[derive(Debug, PartialEq, Eq)]
pub struct InvalidUri;

/// The decoded path (nginx's `$uri`) and the arguments (`$args`, without a fragment).
#[derive(Debug, PartialEq, Eq)]
pub struct Uri<'a> {
    pub path: Cow<'a, [u8]>,
    pub args: Option<&'a [u8]>,
    /// It held `%XX` escapes (nginx's `r->quoted_uri`: the URI part sent upstream after
    /// `proxy_pass`'s prefix is then escaped again).
    pub quoted: bool,
}

#[derive(Clone, Copy)]
enum State {
    Usual,
    Slash,
    Dot,
    DotDot,
}

/// Reads an origin-form target (`/p?a`; an absolute-form target's path part, which may be
/// empty or start with `?`).
pub fn parse(target: &[u8]) -> Result<Uri<'_>, InvalidUri> {
    parse_with(target, true)
}

/// [`parse`] with nginx's `merge_slashes` (`off`: `//` is kept in the path).
pub fn parse_with(target: &[u8], merge_slashes: bool) -> Result<Uri<'_>, InvalidUri> {
    if let Some(uri) = simple(target, merge_slashes) {
        return Ok(uri);
    }
    let mut out = Vec::with_capacity(target.len() + 1);
    if target.first() != Some(&b'/') {
        out.push(b'/');
    }
    let mut state = State::Usual;
    let mut quoted = false;
    let mut i = 0;
    while let Some(&raw) = target.get(i) {
        i += 1;
        let ch = if raw == b'%' {
            quoted = true;
            let hex = |j: usize| target.get(j).and_then(|&c| (c as char).to_digit(16));
            let (Some(h), Some(l)) = (hex(i), hex(i + 1)) else {
                return Err(InvalidUri);
            };
            i += 2;
            match (h * 16 + l) as u8 {
                0 => return Err(InvalidUri),
                lit @ (b'%' | b'#' | b'?') => {
                    out.push(lit);
                    state = State::Usual;
                    continue;
                }
                c => c,
            }
        } else {
            raw
        };
        let escaped = raw == b'%';
        let end = !escaped && matches!(ch, b'?' | b'#');
        if end {
            finish(&mut out, state, ch == b'?')?;
            let args = (ch == b'?').then(|| {
                let rest = &target[i..];
                let frag = rest.iter().position(|&b| b == b'#').unwrap_or(rest.len());
                &rest[..frag]
            });
            return Ok(Uri {
                path: Cow::Owned(out),
                args,
                quoted,
            });
        }
        state = step(&mut out, state, ch, merge_slashes)?;
    }
    finish(&mut out, state, false)?;
    Ok(Uri {
        path: Cow::Owned(out),
        args: None,
        quoted,
    })
}

/// A path's `//`, `.` and `..` resolved without decoding anything (a URI a rewrite made:
/// nginx maps it to a file as it is, ringfront still refuses to leave the root).
pub fn resolve_dots(path: &[u8]) -> Result<Vec<u8>, InvalidUri> {
    if path.first() != Some(&b'/') || path.contains(&0) {
        return Err(InvalidUri);
    }
    let mut out = Vec::with_capacity(path.len());
    let mut state = State::Usual;
    for &b in path {
        state = step(&mut out, state, b, true)?;
    }
    finish(&mut out, state, false)?;
    Ok(out)
}

/// A target with nothing to decode or resolve.
fn simple(target: &[u8], merge_slashes: bool) -> Option<Uri<'_>> {
    let (path, args) = match target.iter().position(|&b| b == b'?') {
        Some(q) => (&target[..q], Some(&target[q + 1..])),
        None => (target, None),
    };
    let plain = path.first() == Some(&b'/')
        && !target.contains(&b'#')
        && !path.contains(&b'%')
        && !path
            .windows(2)
            .any(|w| w[0] == b'/' && (w[1] == b'.' || (w[1] == b'/' && merge_slashes)));
    plain.then_some(Uri {
        path: Cow::Borrowed(path),
        args,
        quoted: false,
    })
}

/// One path byte (decoded or not) in `state`; a slash after a slash is dropped only with
/// `merge` (`merge_slashes on`).
fn step(out: &mut Vec<u8>, state: State, ch: u8, merge: bool) -> Result<State, InvalidUri> {
    Ok(match (state, ch) {
        (State::Slash, b'/') => {
            if !merge {
                out.push(b'/');
            }
            State::Slash
        }
        (_, b'/') => match state {
            State::Dot => {
                out.pop();
                State::Slash
            }
            State::DotDot => {
                up(out)?;
                State::Slash
            }
            _ => {
                out.push(b'/');
                State::Slash
            }
        },
        (State::Slash, b'.') => {
            out.push(b'.');
            State::Dot
        }
        (State::Dot, b'.') => {
            out.push(b'.');
            State::DotDot
        }
        (_, c) => {
            out.push(c);
            State::Usual
        }
    })
}

/// The end of the path (`?`, `#` or the end of the target): a last `.` or `..`
/// segment resolved, leaving the slash before it.
fn finish(out: &mut Vec<u8>, state: State, _args: bool) -> Result<(), InvalidUri> {
    match state {
        State::Dot => {
            out.pop();
        }
        State::DotDot => up(out)?,
        _ => {}
    }
    Ok(())
}

/// `out` ends in `/..`: drops it and the segment before, keeping that segment's slash;
/// nothing before it is above the root.
fn up(out: &mut Vec<u8>) -> Result<(), InvalidUri> {
    let keep = out.len().checked_sub(3).ok_or(InvalidUri)?;
    let slash = out[..keep]
        .iter()
        .rposition(|&b| b == b'/')
        .ok_or(InvalidUri)?;
    out.truncate(slash + 1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> Result<(String, Option<String>), InvalidUri> {
        parse(t.as_bytes()).map(|u| {
            (
                String::from_utf8(u.path.into_owned()).unwrap(),
                u.args.map(|a| String::from_utf8(a.to_vec()).unwrap()),
            )
        })
    }

    fn path(t: &str) -> String {
        p(t).unwrap().0
    }

    #[test]
    fn merge_slashes_off_keeps_double_slashes() {
        let off = |t: &str| {
            let u = parse_with(t.as_bytes(), false).unwrap();
            String::from_utf8(u.path.into_owned()).unwrap()
        };
        assert!(matches!(
            parse_with(b"//a//b", false).unwrap().path,
            Cow::Borrowed(b"//a//b")
        ));
        assert_eq!(off("/a//b/./c"), "/a//b/c");
        assert_eq!(off("/a/%2F/b"), "/a///b");
        assert_eq!(off("/a//../b"), "/a/b");
        assert_eq!(path("/a//b"), "/a/b");
    }

    #[test]
    fn plain_uris_are_borrowed() {
        let u = parse(b"/a/b.html?x=1").unwrap();
        assert!(matches!(u.path, Cow::Borrowed(b"/a/b.html")));
        assert_eq!(u.args, Some(&b"x=1"[..]));
        assert!(!u.quoted);
    }

    #[test]
    fn dots_slashes_and_fragments_as_nginx() {
        // nginx's http_uri.t
        assert_eq!(
            p("/foo/bar/.?args").unwrap(),
            ("/foo/bar/".into(), Some("args".into()))
        );
        assert_eq!(path("/foo/bar/.#frag"), "/foo/bar/");
        assert_eq!(path("/foo/bar/..?args"), "/foo/");
        assert_eq!(path("/foo/bar/..#frag"), "/foo/");
        assert_eq!(path("/foo/bar/."), "/foo/bar/");
        assert_eq!(path("/foo/bar/.."), "/foo/");
        assert_eq!(p("?args#frag").unwrap(), ("/".into(), Some("args".into())));
        assert_eq!(path(""), "/");
        assert_eq!(path("/a//b/./c"), "/a/b/c");
        assert_eq!(path("/a/b/../c"), "/a/c");
        assert_eq!(path("/a/.b/..c/..."), "/a/.b/..c/...");
        assert_eq!(p("/a?b#c?d").unwrap(), ("/a".into(), Some("b".into())));
        assert_eq!(p("/a#b?c").unwrap(), ("/a".into(), None));
    }

    #[test]
    fn escapes_decode_and_take_part() {
        assert_eq!(path("/%02"), "/\u{2}");
        assert_eq!(path("/a/%2e%2e/c"), "/c");
        assert_eq!(path("/a%2Fb"), "/a/b");
        assert_eq!(path("/x%20y"), "/x y");
        // `%`, `#` and `?` decoded stay literal.
        assert_eq!(p("/a%3Fb%23c%25d").unwrap(), ("/a?b#c%d".into(), None));
        assert!(parse(b"/%41").unwrap().quoted);
    }

    #[test]
    fn resolving_dots_decodes_nothing() {
        let r = |s: &str| resolve_dots(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(r("/a//b/./c/../%41").unwrap(), "/a/b/%41");
        assert_eq!(r("/a/.").unwrap(), "/a/");
        assert_eq!(r("/a/../.."), Err(InvalidUri));
        assert_eq!(r("x"), Err(InvalidUri));
    }

    #[test]
    fn refused_as_nginx() {
        for bad in [
            "/foo/bar%",
            "/foo/bar%1",
            "/%zz",
            "/a%00",
            "/..",
            "/a/../../etc",
            "/%2e%2e",
        ] {
            assert_eq!(p(bad), Err(InvalidUri), "{bad}");
        }
    }
}
