//! nginx's index module: for a URI ending in `/` in a location that serves files, the
//! first `index` name (variables allowed) that exists in the folder is an internal
//! redirect to URI + name (a name starting with `/` is redirected to without a test);
//! none: 403 (`directory index of "..." is forbidden`, autoindex off), or 404 when the
//! folder itself is missing, with nginx's error-log lines.

use ringfront_config::LogLevel;

use crate::io::errno_text;
use crate::req::Req;
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, Snapshot};
use crate::static_path::map;
use crate::worker::Worker;

/// How the index module ended.
pub enum Indexed {
    /// Redirect internally to this URI.
    Redirect(String),
    Status(u16),
}

/// Where the module runs.
pub struct Here<'a> {
    pub w: &'a Worker,
    pub snap: &'a Snapshot,
    pub req: &'a Req<'a>,
    pub loc: &'a LocationRt,
}

impl Here<'_> {
    fn log(&self, level: LogLevel, msg: std::fmt::Arguments<'_>) {
        let ctx = self.req.log_context(None);
        let conn = self.req.conn_id;
        self.w
            .log(self.snap, level, conn, format_args!("{msg}{ctx}"));
    }
}

/// Runs the module for `uri` (normalised, ending in `/`).
pub async fn run(here: &Here<'_>, uri: &[u8], rw: &RwState) -> Indexed {
    let s = &here.loc.settings;
    let alias = s.files.alias;
    let dir = map(&s.root, alias, uri);
    let mut dir_tested = false;
    for t in &s.files.index {
        let name = crate::try_files::render(here.req, here.snap, rw, t);
        if name.first() == Some(&b'/') {
            return Indexed::Redirect(String::from_utf8_lossy(&name).into_owned());
        }
        let mut path = dir.clone();
        path.extend_from_slice(&name);
        let e = match monoio::fs::metadata(os(&path)).await {
            Ok(_) => {
                let mut to = uri.to_vec();
                to.extend_from_slice(&name);
                return Indexed::Redirect(String::from_utf8_lossy(&to).into_owned());
            }
            Err(e) => e,
        };
        let code = e.raw_os_error().unwrap_or(0);
        if [libc::ENOTDIR, libc::ENAMETOOLONG, libc::EACCES].contains(&code) {
            return failed(here, &path, &e);
        }
        if !dir_tested {
            dir_tested = true;
            let d = dir
                .strip_suffix(b"/")
                .filter(|d| !d.is_empty())
                .unwrap_or(&dir);
            if let Err(e) = monoio::fs::metadata(os(d)).await {
                if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EACCES)) {
                    return failed(here, d, &e);
                }
                here.log(
                    LogLevel::Crit,
                    format_args!("stat() \"{}\" failed {}", show(d), errno_text(&e)),
                );
                return Indexed::Status(500);
            }
        }
        if code != libc::ENOENT {
            here.log(
                LogLevel::Crit,
                format_args!("open() \"{}\" failed {}", show(&path), errno_text(&e)),
            );
            return Indexed::Status(500);
        }
    }
    here.log(
        LogLevel::Error,
        format_args!("directory index of \"{}\" is forbidden", show(&dir)),
    );
    Indexed::Status(403)
}

/// `"PATH" is forbidden` (403) or `"PATH" is not found` (404, unless `log_not_found off`).
fn failed(here: &Here<'_>, path: &[u8], e: &std::io::Error) -> Indexed {
    let (status, what) = match e.raw_os_error() {
        Some(libc::EACCES) => (403, "forbidden"),
        _ => (404, "not found"),
    };
    if status == 403 || here.loc.settings.files.log_not_found {
        here.log(
            LogLevel::Error,
            format_args!("\"{}\" is {what} {}", show(path), errno_text(e)),
        );
    }
    Indexed::Status(status)
}

fn os(path: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(path))
}

fn show(path: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(path)
}
