//! What runs between the rewrite phases and the content handler, as nginx's phases order
//! it: `try_files` (precontent), then, in a location that serves files, the index module
//! for a URI ending in `/`. Either may redirect internally (the caller searches the
//! locations again) or answer with a status.

use crate::req::Req;
use crate::rewrite::Outcome;
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, Snapshot};
use crate::static_index::{Here, Indexed};
use crate::try_files::Tried;
use crate::worker::Worker;

/// Whether the phase has nothing to do for `uri` in `loc`: no `try_files`, and no index
/// to look for (the answer is then `Continue`, found without waiting).
pub fn idle(req: &Req<'_>, loc: &LocationRt, uri: &str) -> bool {
    loc.settings.files.try_files.is_none() && !indexes(req, loc, uri)
}

/// Whether the index module looks for an index file: a location that serves files, a
/// GET, HEAD or POST, a URI that ends with `/`.
fn indexes(req: &Req<'_>, loc: &LocationRt, uri: &str) -> bool {
    let s = &loc.settings;
    let serves_files = !loc.proxies() && s.check_status.is_none() && !s.api && !s.stub_status;
    let method = req.head.method.get(req.buf);
    serves_files && matches!(method, b"GET" | b"HEAD" | b"POST") && uri.ends_with('/')
}

/// The answer, or `None`: `rw` holds a new URI to search the locations with.
pub async fn run<'s>(
    w: &Worker,
    snap: &Snapshot,
    req: &Req<'_>,
    loc: &LocationRt,
    outcome: Outcome<'s>,
    rw: &mut RwState,
) -> Option<Outcome<'s>> {
    if !matches!(outcome, Outcome::Continue) {
        return Some(outcome);
    }
    let s = &loc.settings;
    if let Some(tf) = &s.files.try_files {
        match crate::try_files::run(w, snap, req, loc, tf, rw).await {
            Tried::Serve => {}
            Tried::Status(code) => return Some(Outcome::Status(code)),
            Tried::Redirect => return None,
        }
    }
    let uri = rw.uri.as_deref().unwrap_or(req.path);
    if !indexes(req, loc, uri) {
        return Some(Outcome::Continue);
    }
    // A URI that cannot be mapped is the static handler's 400.
    let Ok(uri) = crate::static_path::normalise(uri.as_bytes()) else {
        return Some(Outcome::Continue);
    };
    let here = Here { w, snap, req, loc };
    match crate::static_index::run(&here, &uri, rw).await {
        Indexed::Redirect(to) => {
            rw.uri = Some(to);
            rw.internal = true;
            rw.rebuild = true;
            None
        }
        Indexed::Status(code) => Some(Outcome::Status(code)),
    }
}
