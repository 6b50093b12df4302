//! `random` (`ngx_http_upstream_get_random_peer`) and `random two`
//! (`ngx_http_upstream_get_random2_peer`): a peer drawn with probability proportional to its
//! weight (`x = random % total_weight`, binary search over the cumulative weights); with
//! `two`, two different usable peers are drawn and the one with fewer active requests per
//! unit of weight is kept (the second on a tie). Every fruitless draw counts, and so does the
//! first draw of a successful `two` pick: past 20, round robin takes over for the rest of the
//! request. The numbers come from the worker's seeded generator.

use crate::attempt::Attempt;
use crate::board::Board;
use crate::check::{touch, usable};
use crate::rr;
use crate::topology::{PeerId, Upstream};
use crate::worker::WorkerPeers;

const MAX_DRAWS: u32 = 20;

/// `ngx_http_upstream_peek_random_peer`: index of a primary, weighted.
fn peek(up: &Upstream, ws: &mut WorkerPeers) -> usize {
    let x = ws.next_random() % up.primary.total_weight.max(1);
    up.primary.walk(x)
}

/// Untried and usable.
fn eligible(up: &Upstream, board: &Board, at: &Attempt, p: usize, now: u64) -> bool {
    let list = &up.primary;
    match (list.peers.get(p), board.get(list.base + p)) {
        (Some(spec), Some(h)) => !at.tried.contains(p) && usable(spec, h, now),
        _ => false,
    }
}

fn take(up: &Upstream, board: &Board, at: &mut Attempt, p: usize, now: u64) -> PeerId {
    let id = up.primary.base + p;
    if let (Some(spec), Some(h)) = (up.primary.peers.get(p), board.get(id)) {
        touch(spec, h, now);
    }
    at.tried.insert(p);
    id
}

pub(crate) fn one(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    now: u64,
) -> Option<PeerId> {
    if at.bal.tries > MAX_DRAWS || up.single || up.primary.is_empty() {
        return rr::pick(up, ws, board, at, now);
    }
    loop {
        let p = peek(up, ws);
        if eligible(up, board, at, p, now) {
            return Some(take(up, board, at, p, now));
        }
        at.bal.tries += 1;
        if at.bal.tries > MAX_DRAWS {
            return rr::pick(up, ws, board, at, now);
        }
    }
}

pub(crate) fn two(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    now: u64,
) -> Option<PeerId> {
    if at.bal.tries > MAX_DRAWS || up.single || up.primary.is_empty() {
        return rr::pick(up, ws, board, at, now);
    }
    let list = &up.primary;
    let mut prev: Option<usize> = None;
    loop {
        let p = peek(up, ws);
        if prev != Some(p) && eligible(up, board, at, p, now) {
            if let Some(q) = prev {
                // Keep the earlier draw only if the new one is strictly busier per weight.
                let (pw, qw) = (list.peers[p].weight, list.peers[q].weight);
                let (pc, qc) = (
                    board.balance_conns(list.base + p),
                    board.balance_conns(list.base + q),
                );
                let busier = u64::from(pc) * u64::from(qw) > u64::from(qc) * u64::from(pw);
                let chosen = if busier { q } else { p };
                return Some(take(up, board, at, chosen, now));
            }
            prev = Some(p);
        }
        at.bal.tries += 1;
        if at.bal.tries > MAX_DRAWS {
            return rr::pick(up, ws, board, at, now);
        }
    }
}

#[cfg(test)]
mod tests;
