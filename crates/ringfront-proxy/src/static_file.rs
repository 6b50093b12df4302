//! nginx's static and index modules for a location with no other content handler: the
//! file at `root` + URI (or `alias`) for GET and HEAD (a folder's `index` file reaches it
//! by an internal redirect: static_index.rs), the redirect of a folder named without its
//! slash, and nginx's 403/404/405 with its
//! error-log lines. Files are opened, stat'ed and read through the ring (monoio's fs ops;
//! the epoll driver runs them inline), streamed in bounded chunks.

use std::os::unix::fs::MetadataExt;

use monoio::fs::File;
use ringfront_config::LogLevel;

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
            let mut made = crate::local::redirect(&mut out, cx, 301, url);
            let (r, o) = crate::io::write_all(&mut stream, out, cx.settings().send_timeout).await;
            cx.w.give_buf(o);
            made.reusable &= r.is_ok();
            return (made, Some(stream));
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
    let method = req.method();
    let post = method == b"POST";
    if !post && !matches!(method, b"GET" | b"HEAD") {
        return Found::Status(405);
    }
    let Ok(uri) = normalise(req.path.as_bytes()) else {
        return Found::Status(400);
    };
    let s = cx.settings();
    // A regex location's alias takes the URI after it when try_files found the file so
    // (nginx's `add_uri_to_alias`).
    let alias = match s.files.alias {
        Some(None) if req.rw.is_some_and(|r| r.add_uri_to_alias) => Some(Some(0)),
        a => a,
    };
    if uri.ends_with(b"/") {
        // The index module ran before (rewrite.rs) and found nothing it could redirect to
        // only when it answered itself; a folder reaching here has no index.
        let dir = map(&s.root, alias, &uri);
        log(
            cx,
            LogLevel::Error,
            format_args!("directory index of \"{}\" is forbidden", show(&dir)),
        );
        return Found::Status(403);
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
            if status == 404 && !cx.settings().files.log_not_found {
                return Opened::Status(404);
            }
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
