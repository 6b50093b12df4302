//! `hash KEY consistent`: nginx's ketama ring (`ngx_http_upstream_init_chash`) and its
//! lookup (`ngx_http_upstream_get_chash_peer`). The ring is built once per topology; a pick
//! only binary-searches it and walks forward.

use std::collections::HashMap;

use crate::attempt::Attempt;
use crate::board::Board;
use crate::check::{touch, usable};
use crate::crc32;
use crate::rr;
use crate::select::RequestKey;
use crate::topology::{full_weight, PeerId, PeerSpec, Upstream};
use crate::worker::WorkerPeers;

/// Points per unit of weight, as nginx (and Cache::Memcached::Fast).
const POINTS_PER_WEIGHT: u64 = 160;
/// A guard against absurd weights: a ring never grows past this many points (128 MiB);
/// peers that would add more get no further points. nginx would try to allocate them all.
const MAX_POINTS: usize = 1 << 24;
/// nginx gives up walking the ring after 20 steps and falls back to round robin.
const MAX_STEPS: u32 = 20;

#[derive(Debug, Clone, Copy)]
struct Point {
    hash: u32,
    /// Index of the `server` text the point belongs to.
    server: u32,
}

/// The sorted, de-duplicated points, and for each distinct `server` text the peers (indices
/// into the primary list, in configuration order) that share it.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    points: Vec<Point>,
    members: Vec<u32>,
    offsets: Vec<u32>,
}

/// nginx's split of a `server` text into host and port: `unix:PATH` has no port; otherwise
/// the port is the run of digits after the last `:`, if the text ends in one.
fn host_port(server: &str) -> (&[u8], &[u8]) {
    let b = server.as_bytes();
    if b.len() >= 5 && b[..5].eq_ignore_ascii_case(b"unix:") {
        return (&b[5..], &[]);
    }
    for j in 0..b.len() {
        let at = b.len() - j - 1;
        match b[at] {
            b':' => return (&b[..at], &b[at + 1..]),
            b'0'..=b'9' => {}
            _ => break,
        }
    }
    (b, &[])
}

impl Ring {
    pub(crate) fn new(peers: &[PeerSpec]) -> Self {
        Self::with_cap(peers, MAX_POINTS)
    }

    fn with_cap(peers: &[PeerSpec], cap: usize) -> Self {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let mut server_of = Vec::with_capacity(peers.len());
        for (i, p) in peers.iter().enumerate() {
            let g = *index.entry(p.server_text()).or_insert_with(|| {
                groups.push(Vec::new());
                (groups.len() - 1) as u32
            });
            groups[g as usize].push(i as u32);
            server_of.push(g);
        }
        let wanted: u64 = peers
            .iter()
            .map(|p| u64::from(p.weight.max(1)) * POINTS_PER_WEIGHT)
            .sum();
        let mut points = Vec::with_capacity(wanted.min(cap as u64) as usize);
        'peers: for (p, &server) in peers.iter().zip(&server_of) {
            // crc32(HOST \0 PORT PREV_HASH), PREV_HASH as 4 little-endian bytes, from 0.
            let (host, port) = host_port(p.server_text());
            let base = crc32::update(crc32::update(crc32::update(crc32::INIT, host), &[0]), port);
            let mut prev = 0u32;
            for _ in 0..u64::from(p.weight.max(1)) * POINTS_PER_WEIGHT {
                if points.len() >= cap {
                    break 'peers;
                }
                let hash = crc32::finish(crc32::update(base, &prev.to_le_bytes()));
                points.push(Point { hash, server });
                prev = hash;
            }
        }
        points.sort_by_key(|p| p.hash);
        points.dedup_by_key(|p| p.hash);
        let mut members = Vec::with_capacity(peers.len());
        let mut offsets = Vec::with_capacity(groups.len() + 1);
        offsets.push(0);
        for g in groups {
            members.extend(g);
            offsets.push(members.len() as u32);
        }
        Ring {
            points,
            members,
            offsets,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    /// Index of the first point >= `hash` (may be `len()`, which wraps to 0).
    fn find(&self, hash: u32) -> usize {
        self.points.partition_point(|p| p.hash < hash)
    }

    /// The peers of the server owning point `at` (taken modulo the ring's size).
    fn server_at(&self, at: usize) -> &[u32] {
        let Some(p) = self.points.get(at % self.points.len().max(1)) else {
            return &[];
        };
        let g = p.server as usize;
        match (self.offsets.get(g), self.offsets.get(g + 1)) {
            (Some(&s), Some(&e)) => self.members.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// `ngx_http_upstream_get_chash_peer`: from the key's point, the first server (walking the
/// ring forward) with a usable, untried peer; among the peers sharing that server text,
/// smooth weighted round robin. An empty key, a single peer, or 20 fruitless steps fall back
/// to round robin over the primaries.
pub(crate) fn pick(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    key: &RequestKey,
    now: u64,
) -> Option<PeerId> {
    let ring = match &up.ring {
        Some(r) if r.len() > 0 => r,
        _ => return rr::pick(up, ws, board, at, now),
    };
    if at.bal.tries > MAX_STEPS || up.single || key.hash.is_empty() {
        return rr::pick(up, ws, board, at, now);
    }
    if !at.bal.keyed {
        // nginx finds the point when the request is set up, before the first pick.
        at.bal.keyed = true;
        at.bal.hash = ring.find(crc32::crc32(key.hash)) as u64;
    }
    let list = &up.primary;
    loop {
        let mut best: Option<usize> = None;
        let mut total: i64 = 0;
        for &m in ring.server_at(at.bal.hash as usize) {
            let i = m as usize;
            let id = list.base + i;
            let (Some(spec), Some(h)) = (list.peers.get(i), board.get(id)) else {
                continue;
            };
            if at.tried.contains(i) || !usable(spec, h, now) {
                continue;
            }
            let w = full_weight(list, spec);
            let Some((current, added)) = ws.bump(id, w, list.scale, w) else {
                continue;
            };
            total = total.saturating_add(added);
            if best.is_none_or(|b| current > ws.current_weight(list.base + b)) {
                best = Some(i);
            }
        }
        if let Some(i) = best {
            let id = list.base + i;
            ws.take(id, total);
            at.tried.insert(i);
            if let (Some(spec), Some(h)) = (list.peers.get(i), board.get(id)) {
                touch(spec, h, now);
            }
            return Some(id);
        }
        at.bal.hash = at.bal.hash.wrapping_add(1);
        at.bal.tries += 1;
        if at.bal.tries > MAX_STEPS {
            return rr::pick(up, ws, board, at, now);
        }
    }
}

#[cfg(test)]
mod tests;
