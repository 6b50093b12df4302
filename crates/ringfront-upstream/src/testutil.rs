//! Builders the unit tests share.

use crate::*;

pub(crate) fn peer(port: u16, weight: u32) -> PeerSpec {
    PeerSpec {
        name: format!("127.0.0.1:{port}"),
        server: String::new(),
        addr: ([127, 0, 0, 1], port).into(),
        weight,
        max_fails: 1,
        fail_timeout: 10,
        max_conns: 0,
        down: false,
        drain: false,
        slow_start_ms: 0,
    }
}

pub(crate) fn topo_with(
    balancer: Balancer,
    primary: Vec<PeerSpec>,
    backup: Vec<PeerSpec>,
) -> Topology {
    Topology::new(vec![UpstreamSpec {
        name: "b".into(),
        primary,
        backup,
        balancer,
        revive: false,
    }])
}

pub(crate) fn topo(primary: Vec<PeerSpec>, backup: Vec<PeerSpec>) -> Topology {
    topo_with(Balancer::RoundRobin, primary, backup)
}

/// Everything one test needs: topology, board, one worker's state.
pub(crate) struct Bench {
    pub t: Topology,
    pub b: Board,
    pub ws: WorkerPeers,
}

impl Bench {
    pub fn new(t: Topology) -> Self {
        let b = Board::new(t.peer_count);
        let ws = WorkerPeers::new(&t, 7);
        Bench { t, b, ws }
    }

    pub fn attempt(&self) -> Attempt {
        Attempt::new(&self.t, 0, 0)
    }

    pub fn select(&mut self, at: &mut Attempt, key: &RequestKey, now: u64) -> Selection {
        select(&self.t, &mut self.ws, &self.b, at, key, now)
    }

    pub fn free(&mut self, at: &mut Attempt, failed: bool, now: u64) -> FreeOutcome {
        free(&self.t, &mut self.ws, &self.b, at, failed, None, now)
    }

    /// One whole request that succeeds on its first pick.
    pub fn pick(&mut self, key: &RequestKey, now: u64) -> Option<PeerId> {
        let mut at = self.attempt();
        match self.select(&mut at, key, now) {
            Selection::Peer(id) => {
                self.free(&mut at, false, now);
                Some(id)
            }
            Selection::NoLive => None,
        }
    }

    /// One request pinned to `pin` that succeeds on its first pick.
    pub fn pick_pinned(&mut self, pin: Option<PeerId>, now: u64) -> Option<PeerId> {
        let mut at = self.attempt();
        at.pin(pin);
        match self.select(&mut at, &NO_KEY, now) {
            Selection::Peer(id) => {
                self.free(&mut at, false, now);
                Some(id)
            }
            Selection::NoLive => None,
        }
    }

    /// Fail peer `id` once (as a request whose only try went there would).
    pub fn fail(&mut self, id: PeerId, now: u64) {
        let h = self.b.get(id).unwrap();
        h.fails.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        h.accessed.store(now, std::sync::atomic::Ordering::Relaxed);
        h.checked.store(now, std::sync::atomic::Ordering::Relaxed);
    }
}

pub(crate) const NO_KEY: RequestKey<'static> = RequestKey {
    client: None,
    hash: b"",
};
