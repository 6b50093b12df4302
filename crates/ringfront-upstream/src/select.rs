//! The two calls a request makes per try: `select` (nginx's `peer.get` of the group's
//! balancer) and `free` (`peer.free`: `conns--`, failure accounting and forgiveness, the
//! response-time average of `least_time`). Also the `revive` policy.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::attempt::{Attempt, Selection};
use crate::board::Board;
use crate::least::Score;
use crate::topology::{Balancer, PeerId, Topology, Upstream};
use crate::worker::WorkerPeers;
use crate::{chash, hash, least, random, rr};

/// What the hash balancers hash, per request.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestKey<'a> {
    /// The client address (`ip_hash`); `None` for a client that has none (a unix socket),
    /// which nginx hashes as the pseudo address 0.0.0.x.
    pub client: Option<std::net::IpAddr>,
    /// The evaluated `hash` key; empty makes `hash` use round robin, as nginx does.
    pub hash: &'a [u8],
}

fn pick(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    key: &RequestKey,
    now: u64,
) -> Option<PeerId> {
    match up.balancer {
        Balancer::RoundRobin => rr::pick(up, ws, board, at, now),
        Balancer::LeastConn => least::pick(up, ws, board, at, now, Score::Conns),
        Balancer::LeastTime { inflight, .. } => {
            least::pick(up, ws, board, at, now, Score::Time { inflight })
        }
        Balancer::IpHash => hash::ip_hash(up, ws, board, at, key, now),
        Balancer::Hash { consistent: false } => hash::hash(up, ws, board, at, key, now),
        Balancer::Hash { consistent: true } => chash::pick(up, ws, board, at, key, now),
        Balancer::Random { two: false, .. } => random::one(up, ws, board, at, now),
        Balancer::Random { two: true, .. } => random::two(up, ws, board, at, now),
    }
}

/// Forget every peer's failures, primaries and backups (nginx < 1.11.5's "mark them as live
/// for quick recovery").
fn revive(up: &Upstream, board: &Board) {
    for id in up.ids() {
        if let Some(h) = board.get(id) {
            h.fails.store(0, Ordering::Relaxed);
        }
    }
}

/// Pick the next peer for this request. Call `free` for it before the next `select`.
pub fn select(
    topo: &Topology,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    key: &RequestKey,
    now: u64,
) -> Selection {
    at.current = None;
    let Some(up) = topo.upstreams.get(at.upstream) else {
        return Selection::NoLive;
    };
    // Round robin weighs a `sticky` peer in (rr.rs); every other method takes it as is.
    let mut picked = match up.balancer {
        Balancer::RoundRobin => None,
        _ => crate::sticky::pinned(up, board, at, now),
    }
    .or_else(|| pick(up, ws, board, at, key, now));
    if picked.is_none() && up.revive && !at.revived {
        at.revived = true;
        revive(up, board);
        picked = pick(up, ws, board, at, key, now);
    }
    let Some(id) = picked else {
        return Selection::NoLive;
    };
    if let Some(h) = board.get(id) {
        h.pick(up.counts_conns);
        if let Balancer::LeastTime { inflight: true, .. } = up.balancer {
            h.inflight_start(now);
            at.inflight_since = Some(now);
        }
    }
    at.current = Some(id);
    Selection::Peer(id)
}

/// What `free` did, for the caller's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FreeOutcome {
    /// This failure reached `max_fails`: nginx logs "upstream server temporarily disabled".
    pub disabled: bool,
    /// This success ended a failed-out period (the failures were forgiven): the peer is
    /// back, and a `slow_start` ramp may begin.
    pub recovered: bool,
}

/// Report the outcome of the current try (`ngx_http_upstream_free_round_robin_peer`, and for
/// `least_time` its own free first). `response_time` is the time `least_time` averages —
/// until the response header or until its last byte, as the group is configured — and only
/// a successful try with a response is averaged; pass `None` otherwise.
pub fn free(
    topo: &Topology,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    failed: bool,
    response_time: Option<Duration>,
    now: u64,
) -> FreeOutcome {
    let mut out = FreeOutcome::default();
    let Some(id) = at.current.take() else {
        return out;
    };
    let inflight_since = at.inflight_since.take();
    let Some(up) = topo.upstreams.get(at.upstream) else {
        return out;
    };
    let (Some(spec), Some(h)) = (up.peer(id), board.get(id)) else {
        return out;
    };
    h.unpick(up.counts_conns);
    if let Some(since) = inflight_since {
        h.inflight_done(since);
    }
    if let (Balancer::LeastTime { .. }, false, Some(rt)) = (up.balancer, failed, response_time) {
        h.record_response_time(u64::try_from(rt.as_micros()).unwrap_or(u64::MAX));
    }
    if up.single && !at.in_backup {
        at.tries = 0;
        return out;
    }
    // Across workers a success may run concurrently with a failure. The failure writes its
    // times first and publishes the count last (Release); the success reads the count first
    // (Acquire) and forgives only that count (compare-and-swap), so a failure is never
    // forgiven by a success that did not see its times (a lost ejection).
    if failed {
        h.accessed.store(now, Ordering::Relaxed);
        h.checked.store(now, Ordering::Relaxed);
        let fails = h.fails.fetch_add(1, Ordering::Release).saturating_add(1);
        if let Some(penalty) = spec.weight.checked_div(spec.max_fails) {
            let list = if at.in_backup {
                &up.backup
            } else {
                &up.primary
            };
            ws.penalize(id, i64::from(penalty).saturating_mul(list.scale));
            out.disabled = fails >= spec.max_fails;
            if fails == spec.max_fails {
                h.unavail.fetch_add(1, Ordering::Relaxed);
            }
        }
    } else {
        let before = h.fails.load(Ordering::Acquire);
        if before != 0
            && h.accessed.load(Ordering::Relaxed) < h.checked()
            && h.fails
                .compare_exchange(before, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            out.recovered = spec.max_fails != 0 && before >= spec.max_fails;
        }
    }
    at.tries = at.tries.saturating_sub(1);
    out
}

#[cfg(test)]
mod tests;
