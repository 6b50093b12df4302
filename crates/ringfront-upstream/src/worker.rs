//! One worker's own peer state: nginx's `current_weight` and `effective_weight` for every
//! peer (nginx keeps them per worker process too) and the pseudo-random sequence `random`
//! draws from, seeded by the caller so runs can be replayed.

use crate::topology::{PeerId, Topology};

#[derive(Debug, Clone)]
pub struct WorkerPeers {
    current: Vec<i64>,
    effective: Vec<i64>,
    /// splitmix64 state.
    rng: u64,
}

impl WorkerPeers {
    pub fn new(topo: &Topology, seed: u64) -> Self {
        let mut effective = vec![0; topo.peer_count];
        for up in &topo.upstreams {
            for list in [&up.primary, &up.backup] {
                for (i, p) in list.peers.iter().enumerate() {
                    if let Some(e) = effective.get_mut(list.base + i) {
                        *e = crate::topology::full_weight(list, p);
                    }
                }
            }
        }
        WorkerPeers {
            current: vec![0; topo.peer_count],
            effective,
            rng: seed,
        }
    }

    pub fn effective_weight(&self, id: PeerId) -> i64 {
        self.effective.get(id).copied().unwrap_or(0)
    }

    pub fn current_weight(&self, id: PeerId) -> i64 {
        self.current.get(id).copied().unwrap_or(0)
    }

    /// One step of smooth weighted round robin for a candidate: `current += effective`, and
    /// `effective` creeps back towards `weight` after a failure lowered it. Returns the new
    /// current weight and the effective weight added (the candidate's share of `total`);
    /// `None` for an id this state does not know (a board or topology mismatch).
    ///
    /// `weight` is the full weight and `step` the creep per selection, both in the list's
    /// fixed point (`weight * scale`, `scale`); `cap` bounds what is added (a slow start's
    /// ramped weight; `weight` otherwise). With scale 1 this is nginx's arithmetic exactly.
    pub(crate) fn bump(
        &mut self,
        id: PeerId,
        weight: i64,
        step: i64,
        cap: i64,
    ) -> Option<(i64, i64)> {
        let e = self.effective.get_mut(id)?;
        let c = self.current.get_mut(id)?;
        let added = (*e).min(cap);
        *c = c.saturating_add(added);
        if *e < weight {
            *e = e.saturating_add(step).min(weight);
        }
        Some((*c, added))
    }

    /// The chosen peer gives back what every candidate gained: `current -= total`.
    pub(crate) fn take(&mut self, id: PeerId, total: i64) {
        if let Some(c) = self.current.get_mut(id) {
            *c = c.saturating_sub(total);
        }
    }

    /// A failure's penalty: `effective -= weight / max_fails`, not below 0.
    pub(crate) fn penalize(&mut self, id: PeerId, penalty: i64) {
        if let Some(e) = self.effective.get_mut(id) {
            *e = e.saturating_sub(penalty).max(0);
        }
    }

    /// The next pseudo-random number.
    pub(crate) fn next_random(&mut self) -> u64 {
        splitmix64(&mut self.rng)
    }
}

/// splitmix64: a small, fast, seedable (not cryptographic) generator; advances `state`.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
