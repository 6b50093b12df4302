//! nginx's round robin (`ngx_http_upstream_round_robin.c`): smooth weighted selection over
//! the peers not yet tried, not `down`, not failed out and not at `max_conns`, backups only
//! when no primary can be selected. Also the fallback of the hash and random balancers.

use crate::attempt::Attempt;
use crate::board::Board;
use crate::check::{at_max_conns, touch, usable};
use crate::topology::{full_weight, ramped_weight, PeerId, PeerList, Upstream};
use crate::tried::Tried;
use crate::worker::WorkerPeers;

/// Smooth weighted round robin over one list (`ngx_http_upstream_get_peer`).
pub(crate) fn get_peer(
    list: &PeerList,
    ws: &mut WorkerPeers,
    board: &Board,
    tried: &mut Tried,
    now: u64,
) -> Option<PeerId> {
    let mut best: Option<(usize, i64)> = None;
    let mut total: i64 = 0;
    for (i, spec) in list.peers.iter().enumerate() {
        if tried.contains(i) {
            continue;
        }
        let id = list.base + i;
        let Some(h) = board.get(id) else { continue };
        if !usable(spec, h, now) {
            continue;
        }
        let cap = ramped_weight(list, spec, h.ramp());
        let Some((current, added)) = ws.bump(id, full_weight(list, spec), list.scale, cap) else {
            continue;
        };
        total = total.saturating_add(added);
        if best.is_none_or(|(_, w)| current > w) {
            best = Some((i, current));
        }
    }
    let (i, _) = best?;
    let id = list.base + i;
    tried.insert(i);
    ws.take(id, total);
    if let (Some(spec), Some(h)) = (list.peers.get(i), board.get(id)) {
        touch(spec, h, now);
    }
    Some(id)
}

/// nginx's `peers->single` path: the one peer unless `down` or at `max_conns`; never failed
/// out, and no tried bit (a single peer is never retried). Active health checks still take
/// it out (`state` not `UP`), as nginx Plus does.
pub(crate) fn single(up: &Upstream, board: &Board) -> Option<PeerId> {
    let spec = up.primary.peers.first()?;
    let h = board.get(up.primary.base)?;
    (!spec.down && h.is_up() && !at_max_conns(spec, h)).then_some(up.primary.base)
}

/// `ngx_http_upstream_get_round_robin_peer` on the list the request is on, moving to the
/// backup list (tried bitmap reset) when no primary can be selected. Every balancer's
/// fallback comes here, so backups serve hash/ip_hash/random groups too, as in nginx.
pub(crate) fn pick(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    now: u64,
) -> Option<PeerId> {
    if at.in_backup {
        return get_peer(&up.backup, ws, board, &mut at.tried, now);
    }
    let primary = if up.single {
        single(up, board)
    } else {
        get_peer(&up.primary, ws, board, &mut at.tried, now)
    };
    if primary.is_some() || up.backup.is_empty() {
        return primary;
    }
    at.in_backup = true;
    at.tried.clear();
    if let Some(id) = crate::sticky::pinned(up, board, at, now) {
        return Some(id);
    }
    get_peer(&up.backup, ws, board, &mut at.tried, now)
}

#[cfg(test)]
mod tests;
