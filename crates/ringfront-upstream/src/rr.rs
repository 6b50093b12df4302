//! nginx's round robin (`ngx_http_upstream_round_robin.c`): smooth weighted selection over
//! the peers not yet tried, not `down`, not failed out and not at `max_conns`, backups only
//! when no primary can be selected. Also the fallback of the hash and random balancers.

use crate::attempt::Attempt;
use crate::board::Board;
use crate::check::{at_max_conns, pinnable, touch, usable};
use crate::topology::{full_weight, ramped_weight, PeerId, PeerList, Upstream};
use crate::tried::Tried;
use crate::worker::WorkerPeers;

/// The index in `list` of the `sticky` peer `pin`, if it is on this list and can be
/// selected (nginx's `ngx_http_upstream_get_rr_peer_by_sid`).
fn pinned_index(
    list: &PeerList,
    board: &Board,
    tried: &Tried,
    pin: Option<PeerId>,
    now: u64,
) -> Option<usize> {
    let i = pin?.checked_sub(list.base).filter(|&i| i < list.len())?;
    let (spec, h) = (list.peers.get(i)?, board.get(list.base + i)?);
    (!tried.contains(i) && pinnable(spec, h, now)).then_some(i)
}

/// Smooth weighted round robin over one list (`ngx_http_upstream_get_peer`). A `sticky`
/// peer `pin` that can be selected is chosen as nginx 1.29.6 chooses it: it takes its turn
/// in the weights (every candidate gains, it gives back the total) unless it is already a
/// whole round behind (`current_weight <= -(total_weight - weight)`), when the weights are
/// left as they are.
pub(crate) fn get_peer(
    list: &PeerList,
    ws: &mut WorkerPeers,
    board: &Board,
    tried: &mut Tried,
    pin: Option<PeerId>,
    now: u64,
) -> Option<PeerId> {
    let st = pinned_index(list, board, tried, pin, now);
    if let Some(i) = st {
        let weight = list.peers.get(i).map_or(0, |p| u64::from(p.weight));
        let behind = i64::try_from(list.total_weight.saturating_sub(weight))
            .unwrap_or(i64::MAX)
            .saturating_mul(list.scale);
        if ws.current_weight(list.base + i) <= -behind {
            tried.insert(i);
            if let (Some(spec), Some(h)) = (list.peers.get(i), board.get(list.base + i)) {
                touch(spec, h, now);
            }
            return Some(list.base + i);
        }
    }
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
    // The pin wins over the round's best; a draining pin is chosen even when nothing
    // else could be.
    let i = match (st, best) {
        (Some(s), _) => s,
        (None, Some((b, _))) => b,
        (None, None) => return None,
    };
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
/// it out (`state` not `UP`), as nginx Plus does. A `sticky` pin to it that could be taken
/// as a pin is taken (so a draining single peer still serves its sessions).
pub(crate) fn single(
    up: &Upstream,
    board: &Board,
    pin: Option<PeerId>,
    now: u64,
) -> Option<PeerId> {
    let spec = up.primary.peers.first()?;
    let h = board.get(up.primary.base)?;
    let pinned = pin == Some(up.primary.base) && pinnable(spec, h, now);
    (pinned || (!spec.down && h.is_up() && !at_max_conns(spec, h))).then_some(up.primary.base)
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
        let pin = at.pin_here();
        return get_peer(&up.backup, ws, board, &mut at.tried, pin, now);
    }
    let primary = if up.single {
        single(up, board, at.pin, now)
    } else {
        get_peer(&up.primary, ws, board, &mut at.tried, at.pin, now)
    };
    if primary.is_some() || up.backup.is_empty() {
        return primary;
    }
    at.in_backup = true;
    at.tried.clear();
    let pin = at.pin_here();
    get_peer(&up.backup, ws, board, &mut at.tried, pin, now)
}

#[cfg(test)]
mod tests;
