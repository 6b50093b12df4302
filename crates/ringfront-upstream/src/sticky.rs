//! Session persistence (`sticky`): a request that names a server — by the cookie ringfront
//! set, by a route, by a learned session — goes to that peer if the peer could be selected
//! at all (nginx's `ngx_http_upstream_get_rr_peer_by_sid` hint): on the list the request is
//! on, not yet tried, not `down` (a `drain` peer is taken), up, not failed out, not at
//! `max_conns`. Otherwise the
//! group's own balancer chooses, whichever it is, and the response names the new peer.

use crate::attempt::Attempt;
use crate::board::Board;
use crate::check::{pinnable, touch};
use crate::topology::{PeerId, Upstream};

/// The pinned peer of this try, taken (tried bit set, `checked` moved as any pick does), or
/// `None` when there is no pin or the pinned peer cannot be selected now. Every balancer but
/// round robin takes the pin this way, leaving its own state alone, as nginx's do; round
/// robin weighs it in (`rr::get_peer`).
pub(crate) fn pinned(up: &Upstream, board: &Board, at: &mut Attempt, now: u64) -> Option<PeerId> {
    let id = at.pin_here()?;
    let list = if at.in_backup {
        &up.backup
    } else {
        &up.primary
    };
    let i = id.checked_sub(list.base).filter(|&i| i < list.len())?;
    let spec = list.peers.get(i)?;
    let h = board.get(id)?;
    if at.tried.contains(i) || !pinnable(spec, h, now) {
        return None;
    }
    at.tried.insert(i);
    touch(spec, h, now);
    Some(id)
}

/// The peer whose server id is `id` in a group's table of ids (one per peer id of the
/// group, primaries then backups, as [`Upstream::ids`] counts them).
pub fn find(up: &Upstream, ids: &[impl AsRef<[u8]>], id: &[u8]) -> Option<PeerId> {
    if id.is_empty() {
        return None;
    }
    ids.iter()
        .position(|s| s.as_ref() == id)
        .map(|i| up.primary.base + i)
        .filter(|p| up.ids().contains(p))
}

/// The first backup of the group whose server id is `id` (`ids` as for [`find`]): where a
/// request pinned to a primary goes once it is on the backup list, as nginx's hint is
/// looked up again there.
pub fn find_backup(up: &Upstream, ids: &[impl AsRef<[u8]>], id: &[u8]) -> Option<PeerId> {
    let from = up.backup.base.checked_sub(up.primary.base)?;
    let backups = ids.get(from..)?;
    let i = backups
        .iter()
        .take(up.backup.len())
        .position(|s| s.as_ref() == id)?;
    (!id.is_empty()).then_some(up.backup.base + i)
}

#[cfg(test)]
mod tests;
