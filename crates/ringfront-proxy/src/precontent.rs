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
    let serves_files = !loc.proxies() && s.check_status.is_none() && !s.api && !s.stub_status;
    let method = req.head.method.get(req.buf);
    let uri = rw.uri.as_deref().unwrap_or(req.path);
    if !serves_files || !matches!(method, b"GET" | b"HEAD" | b"POST") || !uri.ends_with('/') {
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
