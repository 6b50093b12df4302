//! `auth_basic_user_file`: the password file read per request as nginx reads it, through
//! a per-worker cache keyed by path, modification time and size (a stat per request; the
//! file is read again only when it changed), and nginx's scan of it for a user's line.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

/// Files kept per worker; past this many (paths with variables) the cache starts afresh.
const MAX_FILES: usize = 64;

struct Cached {
    modified: Option<SystemTime>,
    len: u64,
    text: Rc<[u8]>,
}

thread_local! {
    static FILES: RefCell<HashMap<PathBuf, Cached>> = RefCell::new(HashMap::new());
}

/// The file's bytes, from the cache while its mtime and size are unchanged.
pub fn read(path: &Path) -> io::Result<Rc<[u8]>> {
    let meta = std::fs::metadata(path)?;
    let (modified, len) = (meta.modified().ok(), meta.len());
    let hit = FILES.with(|f| {
        f.borrow()
            .get(path)
            .filter(|c| c.modified.is_some() && c.modified == modified && c.len == len)
            .map(|c| c.text.clone())
    });
    if let Some(text) = hit {
        return Ok(text);
    }
    let text: Rc<[u8]> = std::fs::read(path)?.into();
    FILES.with(|f| {
        let mut f = f.borrow_mut();
        if f.len() >= MAX_FILES {
            f.clear();
        }
        let entry = Cached {
            modified,
            len,
            text: text.clone(),
        };
        f.insert(path.to_path_buf(), entry);
    });
    Ok(text)
}

/// The stored password of `user` (`user:HASH[:...]` at a line's start; `#` and CR start
/// lines skipped), scanned byte by byte as `ngx_http_auth_basic_handler` does, quirks
/// included: a line's LF met while matching the name skips the next line too.
pub fn password<'f>(file: &'f [u8], user: &[u8]) -> Option<&'f [u8]> {
    enum State {
        Login(usize),
        Passwd(usize),
        Skip,
    }
    let mut state = State::Login(0);
    // nginx compares against the decoded `user:password`, so the name is followed by `:`.
    let want = |i: usize| match i.cmp(&user.len()) {
        std::cmp::Ordering::Less => Some(user[i]),
        std::cmp::Ordering::Equal => Some(b':'),
        std::cmp::Ordering::Greater => None,
    };
    for (i, &b) in file.iter().enumerate() {
        state = match state {
            State::Login(0) if b == b'#' || b == b'\r' => State::Skip,
            State::Login(0) if b == b'\n' => State::Login(0),
            State::Login(n) if want(n) != Some(b) => State::Skip,
            State::Login(n) if n == user.len() => State::Passwd(i + 1),
            State::Login(n) => State::Login(n + 1),
            State::Passwd(start) if matches!(b, b'\n' | b'\r' | b':') => {
                return Some(c_string(&file[start..i]));
            }
            State::Skip if b == b'\n' => State::Login(0),
            other => other,
        };
    }
    match state {
        State::Passwd(start) => Some(c_string(&file[start..])),
        _ => None,
    }
}

/// nginx holds the stored hash as a C string.
fn c_string(s: &[u8]) -> &[u8] {
    s.split(|&b| b == 0).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_nginx_scans_them() {
        let f = b"# alice:no\nbob:{PLAIN}b\r\nalice:{PLAIN}a:comment\n\ncarol:c";
        assert_eq!(password(f, b"alice"), Some(&b"{PLAIN}a"[..]));
        assert_eq!(password(f, b"bob"), Some(&b"{PLAIN}b"[..]));
        assert_eq!(
            password(f, b"carol"),
            Some(&b"c"[..]),
            "last line without LF"
        );
        assert_eq!(password(f, b"dave"), None);
        assert_eq!(password(f, b"ali"), None, "a prefix of a name");
        // nginx's quirk: the LF that ends a too-short name is consumed while skipping.
        assert_eq!(password(b"ali\nalice:x\n", b"alice"), None);
        assert_eq!(password(b"x:1\nalice:x\n", b"alice"), Some(&b"x"[..]));
    }

    #[test]
    fn cached_until_the_file_changes() {
        let dir = std::env::temp_dir().join(format!("rf-auth-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("htpasswd");
        std::fs::write(&p, b"a:1\n").unwrap();
        assert_eq!(&*read(&p).unwrap(), b"a:1\n");
        std::fs::write(&p, b"a:22\n").unwrap();
        assert_eq!(&*read(&p).unwrap(), b"a:22\n", "size changed");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(read(&p).unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir(&dir).unwrap();
    }
}
