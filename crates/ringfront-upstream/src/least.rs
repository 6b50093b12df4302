//! `least_conn` (`ngx_http_upstream_get_least_conn_peer`) and `least_time`
//! (`ngx_http_upstream_get_least_time_peer`): the peer with the smallest score per unit of
//! weight, compared as `score * best.weight < best.score * weight`; when several tie,
//! smooth weighted round robin among the tied. Backups when no primary can be selected.
//!
//! `least_time` scores a peer by its estimated time to finish what it has (the score
//! nginx's open-source `least_time` module computes, in milliseconds):
//!
//! 1. `rt` = the moving average response time (α = 0.05) of the configured kind — the
//!    caller feeds header or last-byte times to `free` — in whole milliseconds;
//! 2. a peer not selected for longer than `fail_timeout` (`now - checked > fail_timeout`)
//!    gets `rt >>= (now - checked) / (fail_timeout + 1)`, so slow peers get a chance again;
//! 3. with `inflight`, `rt = max(rt, average age of its in-flight requests)`; the age is
//!    measured in whole seconds (the crate's clock), nginx measures it in milliseconds and
//!    smooths it;
//! 4. buckets: `rt > 5000` counts as 5000, otherwise `rt += 20 - rt % 20` (so 0..19 -> 20,
//!    20..39 -> 40: peers within the same 20 ms share a score and take turns);
//! 5. score = `rt * (1 + conns)`, `conns` being the peer's active requests in all workers.

use crate::attempt::Attempt;
use crate::board::{Board, PeerHealth};
use crate::check::{touch, usable};
use crate::rr;
use crate::topology::{full_weight, ramped_weight, PeerId, PeerList, PeerSpec, Upstream};
use crate::tried::Tried;
use crate::worker::WorkerPeers;

/// What "least" means.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Score {
    Conns,
    Time { inflight: bool },
}

/// A peer not worse than this (ms) is "equally bad": `least_time` degrades to `least_conn`.
const MAX_RT_MS: u64 = 5000;
/// Width of the response-time buckets (ms).
const BUCKET_MS: u64 = 20;

impl Score {
    fn of(self, spec: &PeerSpec, h: &PeerHealth, now: u64) -> u64 {
        match self {
            Score::Conns => u64::from(h.balance_conns()),
            Score::Time { inflight } => eta(spec, h, now, inflight),
        }
    }
}

/// `least_time`'s estimate, in milliseconds (see the module documentation).
pub(crate) fn eta(spec: &PeerSpec, h: &PeerHealth, now: u64, inflight: bool) -> u64 {
    let mut rt = h.response_time_us() / 1000;
    let idle = now.saturating_sub(h.checked());
    if idle > spec.fail_timeout {
        let shift = idle / spec.fail_timeout.saturating_add(1);
        rt = if shift < 64 { rt >> shift } else { 0 };
    }
    if inflight {
        if let Some(age) = h.inflight_age(now) {
            rt = rt.max(age.saturating_mul(1000));
        }
    }
    rt = if rt > MAX_RT_MS {
        MAX_RT_MS
    } else {
        rt + BUCKET_MS - rt % BUCKET_MS
    };
    rt.saturating_mul(1 + u64::from(h.balance_conns()))
}

/// `a.score / a.weight` against `b.score / b.weight` without division or overflow.
fn ratio(a_score: u64, a_weight: i64, b_score: u64, b_weight: i64) -> std::cmp::Ordering {
    let (aw, bw) = (a_weight.max(1) as u128, b_weight.max(1) as u128);
    (u128::from(a_score) * bw).cmp(&(u128::from(b_score) * aw))
}

fn least(
    list: &PeerList,
    ws: &mut WorkerPeers,
    board: &Board,
    tried: &mut Tried,
    now: u64,
    score: Score,
) -> Option<PeerId> {
    // First pass: the first peer with the smallest ratio, and whether another ties with it.
    let mut best: Option<(usize, u64, i64)> = None;
    let mut many = false;
    for (i, spec) in list.peers.iter().enumerate() {
        if tried.contains(i) {
            continue;
        }
        let Some(h) = board.get(list.base + i) else {
            continue;
        };
        if !usable(spec, h, now) {
            continue;
        }
        let s = score.of(spec, h, now);
        let w = ramped_weight(list, spec, h.ramp());
        match best {
            Some((_, bs, bw)) => match ratio(s, w, bs, bw) {
                std::cmp::Ordering::Less => {
                    best = Some((i, s, w));
                    many = false;
                }
                std::cmp::Ordering::Equal => many = true,
                std::cmp::Ordering::Greater => {}
            },
            None => best = Some((i, s, w)),
        }
    }
    let (first, bs, bw) = best?;
    let mut p = first;
    let mut total: i64 = 0;
    if many {
        // Second pass, from the first best on: smooth weighted round robin among the tied.
        for (i, spec) in list.peers.iter().enumerate().skip(first) {
            let id = list.base + i;
            if tried.contains(i) {
                continue;
            }
            let Some(h) = board.get(id) else { continue };
            let w = ramped_weight(list, spec, h.ramp());
            if !usable(spec, h, now) || ratio(score.of(spec, h, now), w, bs, bw).is_ne() {
                continue;
            }
            let Some((current, added)) = ws.bump(id, full_weight(list, spec), list.scale, w) else {
                continue;
            };
            total = total.saturating_add(added);
            if current > ws.current_weight(list.base + p) {
                p = i;
            }
        }
    }
    let id = list.base + p;
    ws.take(id, total);
    tried.insert(p);
    if let (Some(spec), Some(h)) = (list.peers.get(p), board.get(id)) {
        touch(spec, h, now);
    }
    Some(id)
}

/// The whole `get_least_conn_peer` / `get_least_time_peer`: a single peer goes through round
/// robin; primaries, then (tried bitmap reset) backups.
pub(crate) fn pick(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    now: u64,
    score: Score,
) -> Option<PeerId> {
    if at.in_backup {
        return least(&up.backup, ws, board, &mut at.tried, now, score);
    }
    let primary = if up.single {
        rr::single(up, board, at.pin, now)
    } else {
        least(&up.primary, ws, board, &mut at.tried, now, score)
    };
    if primary.is_some() || up.backup.is_empty() {
        return primary;
    }
    at.in_backup = true;
    at.tried.clear();
    if let Some(id) = crate::sticky::pinned(up, board, at, now) {
        return Some(id);
    }
    least(&up.backup, ws, board, &mut at.tried, now, score)
}

#[cfg(test)]
mod tests;
