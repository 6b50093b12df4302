//! `try_files FILE ... URI | =CODE` as nginx's try_files phase runs it, after the
//! location's rewrite directives: the first file there (a name written ending in `/` must
//! be a folder, and is the URI without that slash, so `/dir` gets the static module's 301;
//! others must not be folders) becomes the URI the content handler serves; none: the status,
//! or an internal redirect to the URI (its `?` splitting off new arguments; without one
//! the arguments are dropped, as nginx), which searches the locations again.

use ringfront_config::{LogLevel, TryFiles, TryLast};

use crate::req::Req;
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, Snapshot};
use crate::static_path::{map, normalise};
use crate::worker::Worker;

/// How the phase ended.
pub enum Tried {
    /// A file was found (`rw.uri` names it): on to the content handler.
    Serve,
    /// `=CODE`.
    Status(u16),
    /// `rw` holds the new URI and arguments: search the locations again.
    Redirect,
}

/// Runs `tf` of `loc` for the request.
pub async fn run(
    w: &Worker,
    snap: &Snapshot,
    req: &Req<'_>,
    loc: &LocationRt,
    tf: &TryFiles,
    rw: &mut RwState,
) -> Tried {
    let s = &loc.settings;
    // A regex location's alias is a root here; the file found is then the alias + URI
    // (nginx's `add_uri_to_alias`).
    let whole = s.files.alias == Some(None);
    let alias = if whole { None } else { s.files.alias };
    for (t, test_dir) in &tf.files {
        let name = render(req, snap, rw, t);
        let name = normalise(&name).unwrap_or(name);
        let path = map(&s.root, alias, &name);
        match monoio::fs::metadata(os(&path)).await {
            Ok(m) if m.is_dir() == *test_dir => {
                rw.uri = Some(String::from_utf8_lossy(&name).into_owned());
                rw.add_uri_to_alias = whole && !*test_dir;
                return Tried::Serve;
            }
            Ok(_) => {}
            Err(e) => {
                let quiet = [libc::ENOENT, libc::ENOTDIR, libc::ENAMETOOLONG];
                if !e.raw_os_error().is_some_and(|c| quiet.contains(&c)) {
                    let ctx = req.log_context(None);
                    let msg = format!(
                        "stat() \"{}\" failed {}{ctx}",
                        String::from_utf8_lossy(&path),
                        crate::io::errno_text(&e)
                    );
                    w.log(snap, LogLevel::Crit, req.conn_id, format_args!("{msg}"));
                }
            }
        }
    }
    match &tf.last {
        TryLast::Code(code) => Tried::Status(*code),
        TryLast::Named(name) => {
            rw.named = Some(name.clone());
            rw.internal = true;
            Tried::Redirect
        }
        TryLast::Uri(t) => {
            let target = render(req, snap, rw, t);
            let (uri, args) = match target.iter().position(|&b| b == b'?') {
                Some(i) => (&target[..i], target[i + 1..].to_vec()),
                None => (&target[..], Vec::new()),
            };
            rw.uri = Some(String::from_utf8_lossy(uri).into_owned());
            rw.args = Some(args);
            rw.internal = true;
            rw.rebuild = true;
            Tried::Redirect
        }
    }
}

pub(crate) fn render(
    req: &Req<'_>,
    snap: &Snapshot,
    rw: &RwState,
    t: &ringfront_config::Template,
) -> Vec<u8> {
    let mut v = req.vars("", None, Some(snap));
    v.rw = Some(rw);
    let mut out = Vec::new();
    crate::vars::render(&mut out, t, &v, false);
    out
}

fn os(path: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(path))
}
