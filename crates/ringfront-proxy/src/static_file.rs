//! nginx's static and index modules for a location with no other content handler: the
//! file at `root` + URI (or `alias`) for GET and HEAD, a directory's `index` file, the
//! redirect of a directory named without its slash, and nginx's 403/404/405 with its
//! error-log lines. Files are opened, stat'ed and read through the ring (monoio's fs ops;
//! the epoll driver runs them inline), streamed in bounded chunks.

use std::os::unix::fs::MetadataExt;

use monoio::fs::File;
use ringfront_config::{LocationMatch, LogLevel};

use crate::io::errno_text;
use crate::req::{Cx, Reply};
use crate::static_path::{escape_uri, map, normalise};
use crate::stream::ClientStream;

/// What opening a path found.
pub(crate) enum Opened {
    File {
        file: File,
        size: u64,
        mtime: i64,
    },
    Dir,
    /// A status to answer with (logged already).
    Status(u16),
}

/// Serves the request from the file system.
pub async fn serve(
    cx: &Cx<'_>,
    mut stream: ClientStream,
    mut out: Vec<u8>,
) -> (Reply, Option<ClientStream>) {
    let status = match find(cx).await {
        Found::File(opened, type_uri) => {
            return crate::static_send::send(cx, stream, out, opened, &type_uri).await
        }
        Found::Redirect(url) => {
            let made = crate::local::redirect(&mut out, cx, 301, url);
            let (r, o) = crate::io::write_all(&mut stream, out, cx.settings().send_timeout).await;
            cx.w.give_buf(o);
            let reusable = made.reusable && r.is_ok();
            return (Reply { reusable, ..made }, Some(stream));
        }
        Found::Status(status) => status,
    };
    let reply = crate::local::error(&mut stream, &mut out, cx, status).await;
    cx.w.give_buf(out);
    (reply, Some(stream))
}

enum Found {
    /// An open regular file, and the URI its `Content-Type` comes from.
    File(Opened, Vec<u8>),
    Redirect(Vec<u8>),
    Status(u16),
}

async fn find(cx: &Cx<'_>) -> Found {
    let req = cx.req;
    let method = req.head.method.get(req.buf);
    let post = method == b"POST";
    if !post && !matches!(method, b"GET" | b"HEAD") {
        return Found::Status(405);
    }
    let Ok(uri) = normalise(req.path.as_bytes()) else {
        return Found::Status(400);
    };
    let s = cx.settings();
    let alias = s.files.alias.then(|| prefix_len(cx.loc.matcher.as_ref()));
    if uri.ends_with(b"/") {
        return index(cx, &uri, alias, post).await;
    }
    let path = map(&s.root, alias, &uri);
    match open(cx, &path).await {
        Opened::Dir => {
            let mut url = Vec::with_capacity(uri.len() + 1);
            escape_uri(&mut url, &uri);
            url.push(b'/');
            let target = req.head.target.get(req.buf);
            if let Some(q) = target.iter().position(|&b| b == b'?') {
                url.extend_from_slice(&target[q..]);
            }
            Found::Redirect(url)
        }
        Opened::File { .. } if post => Found::Status(405),
        f @ Opened::File { .. } => Found::File(f, uri),
        Opened::Status(s) => Found::Status(s),
    }
}

/// The bytes of the URI an alias replaces (`None`: a regex location, whole path).
pub(crate) fn prefix_len(m: Option<&LocationMatch>) -> Option<usize> {
    match m {
        Some(
            LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p) | LocationMatch::Exact(p),
        ) => Some(p.len()),
        Some(LocationMatch::Regex { .. }) => None,
        None => Some(0),
    }
}

/// A URI ending in `/`: the first `index` file that exists, served in this location
/// (nginx redirects internally to URI + name; see docs), else 403 (autoindex off), or 404
/// when the directory itself is missing.
async fn index(cx: &Cx<'_>, uri: &[u8], alias: Option<Option<usize>>, post: bool) -> Found {
    let s = cx.settings();
    let dir = map(&s.root, alias, uri);
    let mut dir_tested = false;
    for name in &s.files.index {
        let mut path = dir.clone();
        path.extend_from_slice(name.as_bytes());
        let e = match open_raw(&path).await {
            Ok(Opened::Dir) => continue,
            Ok(_) if post => return Found::Status(405),
            Ok(f) => {
                let mut type_uri = uri.to_vec();
                type_uri.extend_from_slice(name.as_bytes());
                return Found::File(f, type_uri);
            }
            Err(e) => e,
        };
        let code = e.raw_os_error().unwrap_or(0);
        if [libc::ENOTDIR, libc::ENAMETOOLONG, libc::EACCES].contains(&code) {
            let (status, what) = match code {
                libc::EACCES => (403, "forbidden"),
                _ => (404, "not found"),
            };
            log(
                cx,
                LogLevel::Error,
                format_args!("\"{}\" is {what} {}", show(&path), errno_text(&e)),
            );
            return Found::Status(status);
        }
        if !dir_tested {
            dir_tested = true;
            let d = dir
                .strip_suffix(b"/")
                .filter(|d| !d.is_empty())
                .unwrap_or(&dir);
            if let Err(e) = monoio::fs::metadata(os(d)).await {
                let (status, what) = match e.raw_os_error() {
                    Some(libc::ENOENT) => (404, "not found"),
                    Some(libc::EACCES) => (403, "forbidden"),
                    _ => {
                        log(
                            cx,
                            LogLevel::Crit,
                            format_args!("stat() \"{}\" failed {}", show(d), errno_text(&e)),
                        );
                        return Found::Status(500);
                    }
                };
                log(
                    cx,
                    LogLevel::Error,
                    format_args!("\"{}\" is {what} {}", show(d), errno_text(&e)),
                );
                return Found::Status(status);
            }
        }
        if code != libc::ENOENT {
            log(
                cx,
                LogLevel::Crit,
                format_args!("open() \"{}\" failed {}", show(&path), errno_text(&e)),
            );
            return Found::Status(500);
        }
    }
    // POST too: the static handler declines a URI ending in a slash, the content phase
    // answers 403.
    log(
        cx,
        LogLevel::Error,
        format_args!("directory index of \"{}\" is forbidden", show(&dir)),
    );
    Found::Status(403)
}

/// Opens `path` as nginx's static handler does, logging failures as it does: not there
/// is 404 (error), no permission 403 (error), anything else 500 (crit); neither a file nor
/// a directory is 404 (crit).
async fn open(cx: &Cx<'_>, path: &[u8]) -> Opened {
    match open_raw(path).await {
        Ok(Opened::Status(_)) => {
            log(
                cx,
                LogLevel::Crit,
                format_args!("\"{}\" is not a regular file", show(path)),
            );
            Opened::Status(404)
        }
        Ok(o) => o,
        Err(e) => {
            let (level, status) = match e.raw_os_error().unwrap_or(0) {
                libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG => (LogLevel::Error, 404),
                libc::EACCES => (LogLevel::Error, 403),
                _ => (LogLevel::Crit, 500),
            };
            log(
                cx,
                level,
                format_args!("open() \"{}\" failed {}", show(path), errno_text(&e)),
            );
            Opened::Status(status)
        }
    }
}

/// Opens and stats `path` (symbolic links followed). Neither a file nor a directory comes
/// back as `Opened::Status`.
async fn open_raw(path: &[u8]) -> std::io::Result<Opened> {
    let file = File::open(os(path)).await?;
    let meta = file.metadata().await?;
    Ok(if meta.is_dir() {
        Opened::Dir
    } else if meta.is_file() {
        Opened::File {
            file,
            size: meta.len(),
            mtime: meta.mtime(),
        }
    } else {
        Opened::Status(404)
    })
}

fn os(path: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(path))
}

fn show(path: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(path)
}

fn log(cx: &Cx<'_>, level: LogLevel, msg: std::fmt::Arguments<'_>) {
    cx.log(level, msg, None);
}
