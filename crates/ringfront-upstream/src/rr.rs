//! nginx's round robin (`ngx_http_upstream_round_robin.c`): smooth weighted selection over
//! the peers not yet tried, not `down` and not failed out, backups only when no primary can
//! be selected, and the feedback step that counts failures and forgives them after a quiet
//! `fail_timeout`.

use std::sync::atomic::Ordering;

use crate::board::{Board, PeerHealth};
use crate::topology::{PeerId, PeerList, PeerSpec, Topology, UpstreamId};
use crate::tried::Tried;

/// One worker's `current_weight`, `effective_weight` and `conns` for every peer. Owned by one
/// worker thread; nginx keeps these per worker process too.
#[derive(Debug, Clone)]
pub struct WorkerPeers {
    current: Vec<i64>,
    effective: Vec<i64>,
    conns: Vec<u32>,
}

impl WorkerPeers {
    pub fn new(topo: &Topology) -> Self {
        let mut effective = vec![0; topo.peer_count];
        for up in &topo.upstreams {
            for list in [&up.primary, &up.backup] {
                for (i, p) in list.peers.iter().enumerate() {
                    effective[list.base + i] = i64::from(p.weight);
                }
            }
        }
        WorkerPeers {
            current: vec![0; topo.peer_count],
            effective,
            conns: vec![0; topo.peer_count],
        }
    }

    pub fn conns(&self, id: PeerId) -> u32 {
        self.conns.get(id).copied().unwrap_or(0)
    }

    pub fn effective_weight(&self, id: PeerId) -> i64 {
        self.effective.get(id).copied().unwrap_or(0)
    }

    pub fn current_weight(&self, id: PeerId) -> i64 {
        self.current.get(id).copied().unwrap_or(0)
    }
}

/// Per-request selection state: which list is in use, what was tried, tries left.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub upstream: UpstreamId,
    in_backup: bool,
    tried: Tried,
    /// Tries left including the current one; 0 means no more peers may be tried.
    pub tries: u32,
    current: Option<PeerId>,
}

impl Attempt {
    /// `cap` is `proxy_next_upstream_tries` (0 = no cap).
    pub fn new(topo: &Topology, upstream: UpstreamId, cap: u32) -> Self {
        let up = &topo.upstreams[upstream.min(topo.upstreams.len().saturating_sub(1))];
        let mut tries = up.tries();
        if cap != 0 {
            tries = tries.min(cap);
        }
        Attempt {
            upstream,
            in_backup: false,
            tried: Tried::new(up.primary.len().max(up.backup.len())),
            tries,
            current: None,
        }
    }

    pub fn current(&self) -> Option<PeerId> {
        self.current
    }
}

/// What `select` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    Peer(PeerId),
    /// Nothing selectable: nginx's "no live upstreams" (`NGX_BUSY`).
    NoLive,
}

fn failed_out(spec: &PeerSpec, h: &PeerHealth, now: u64) -> bool {
    spec.max_fails != 0
        && h.fails() >= spec.max_fails
        && now.saturating_sub(h.checked()) <= spec.fail_timeout
}

/// Smooth weighted round robin over one list (`ngx_http_upstream_get_peer`).
fn get_peer(
    list: &PeerList,
    ws: &mut WorkerPeers,
    board: &Board,
    tried: &mut Tried,
    now: u64,
) -> Option<PeerId> {
    let mut best: Option<(usize, i64)> = None;
    let mut total: i64 = 0;
    for (i, spec) in list.peers.iter().enumerate() {
        let id = list.base + i;
        if tried.contains(i) || spec.down {
            continue;
        }
        let Some(h) = board.get(id) else { continue };
        if failed_out(spec, h, now) {
            continue;
        }
        ws.current[id] += ws.effective[id];
        total += ws.effective[id];
        if ws.effective[id] < i64::from(spec.weight) {
            ws.effective[id] += 1;
        }
        if best.is_none_or(|(_, w)| ws.current[id] > w) {
            best = Some((i, ws.current[id]));
        }
    }
    let (i, _) = best?;
    let id = list.base + i;
    tried.insert(i);
    ws.current[id] -= total;
    let spec = &list.peers[i];
    if let Some(h) = board.get(id) {
        // The first request after a quiet period is let through as the probe; moving
        // `checked` keeps every other request off the peer until it answers.
        let checked = h.checked();
        if now.saturating_sub(checked) > spec.fail_timeout {
            let _ = h
                .checked
                .compare_exchange(checked, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
    Some(id)
}

/// Pick the next peer for this request (`ngx_http_upstream_get_round_robin_peer`).
pub fn select(
    topo: &Topology,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    now: u64,
) -> Selection {
    let Some(up) = topo.upstreams.get(at.upstream) else {
        return Selection::NoLive;
    };
    let picked = if up.single {
        let spec = &up.primary.peers[0];
        (!spec.down).then_some(up.primary.base)
    } else if at.in_backup {
        get_peer(&up.backup, ws, board, &mut at.tried, now)
    } else {
        get_peer(&up.primary, ws, board, &mut at.tried, now).or_else(|| {
            if up.backup.is_empty() {
                return None;
            }
            at.in_backup = true;
            at.tried.clear();
            get_peer(&up.backup, ws, board, &mut at.tried, now)
        })
    };
    match picked {
        Some(id) => {
            ws.conns[id] += 1;
            at.current = Some(id);
            Selection::Peer(id)
        }
        None => {
            at.current = None;
            Selection::NoLive
        }
    }
}

/// What `free` did, for the caller's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FreeOutcome {
    /// This failure reached `max_fails`: nginx logs "upstream server temporarily disabled".
    pub disabled: bool,
}

/// Report the outcome of the current try (`ngx_http_upstream_free_round_robin_peer`).
pub fn free(
    topo: &Topology,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    failed: bool,
    now: u64,
) -> FreeOutcome {
    let mut out = FreeOutcome::default();
    let Some(id) = at.current.take() else {
        return out;
    };
    let Some(up) = topo.upstreams.get(at.upstream) else {
        return out;
    };
    ws.conns[id] = ws.conns[id].saturating_sub(1);
    if up.single {
        at.tries = 0;
        return out;
    }
    let (Some(spec), Some(h)) = (up.peer(id), board.get(id)) else {
        return out;
    };
    if failed {
        let fails = h.fails.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        h.accessed.store(now, Ordering::Relaxed);
        h.checked.store(now, Ordering::Relaxed);
        if let Some(penalty) = spec.weight.checked_div(spec.max_fails) {
            ws.effective[id] = (ws.effective[id] - i64::from(penalty)).max(0);
            out.disabled = fails >= spec.max_fails;
        }
    } else if h.accessed.load(Ordering::Relaxed) < h.checked() {
        h.fails.store(0, Ordering::Relaxed);
    }
    at.tries = at.tries.saturating_sub(1);
    out
}

#[cfg(test)]
mod tests;
