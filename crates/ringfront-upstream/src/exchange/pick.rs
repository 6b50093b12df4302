//! The balancer as one request sees it: `select` and `free` (nginx's `peer.get` and
//! `peer.free`) behind a guard that owns the request's `Attempt`. A peer that was selected
//! and never freed — the request's future dropped mid-try, an early return — is freed as a
//! success when the guard goes, as nginx's `ngx_http_upstream_finalize_request` frees it with
//! state 0: no path can leak a `conns` count or a `max_conns` slot.

use std::cell::RefCell;
use std::time::Duration;

use crate::attempt::{Attempt, Selection};
use crate::board::Board;
use crate::select::{free, select, FreeOutcome, RequestKey};
use crate::topology::{PeerId, Topology, UpstreamId};
use crate::worker::WorkerPeers;

/// What the balancer works on: the snapshot's topology and board, and this worker's peers.
#[derive(Clone, Copy)]
pub struct Peers<'a> {
    pub topo: &'a Topology,
    pub board: &'a Board,
    pub worker: &'a RefCell<WorkerPeers>,
}

/// One request's selections in one group.
pub struct Pick<'a> {
    peers: Peers<'a>,
    at: Attempt,
}

impl<'a> Pick<'a> {
    /// `cap` is `proxy_next_upstream_tries` (0 = no cap).
    pub fn new(peers: Peers<'a>, upstream: UpstreamId, cap: u32) -> Self {
        Pick {
            peers,
            at: Attempt::new(peers.topo, upstream, cap),
        }
    }

    pub fn peers(&self) -> Peers<'a> {
        self.peers
    }

    pub fn upstream(&self) -> UpstreamId {
        self.at.upstream
    }

    /// `sticky`: prefer this peer of the group while it can be selected (`backup`: the
    /// backup with its server id, on the backup list).
    pub fn pin(&mut self, id: Option<PeerId>, backup: Option<PeerId>) {
        self.at.pin(id);
        self.at.pin_backup(backup);
    }

    /// Tries left, the current one included.
    pub fn tries(&self) -> u32 {
        self.at.tries
    }

    /// nginx's give-back: a try that failed on a reused keepalive connection does not count.
    pub fn give_back_try(&mut self) {
        self.at.tries = self.at.tries.saturating_add(1);
    }

    /// The peer selected and not yet freed.
    pub fn current(&self) -> Option<PeerId> {
        self.at.current()
    }

    /// Selects the next peer. A peer still held is freed first (as a success).
    pub fn select(&mut self, key: &RequestKey, now_secs: u64) -> Selection {
        if self.at.current().is_some() {
            self.free(false, None, now_secs);
        }
        let mut ws = self.peers.worker.borrow_mut();
        select(
            self.peers.topo,
            &mut ws,
            self.peers.board,
            &mut self.at,
            key,
            now_secs,
        )
    }

    /// Reports the current try (`failed` or not; `response_time` for `least_time`).
    pub fn free(
        &mut self,
        failed: bool,
        response_time: Option<Duration>,
        now_secs: u64,
    ) -> FreeOutcome {
        let mut ws = self.peers.worker.borrow_mut();
        free(
            self.peers.topo,
            &mut ws,
            self.peers.board,
            &mut self.at,
            failed,
            response_time,
            now_secs,
        )
    }
}

impl Drop for Pick<'_> {
    fn drop(&mut self) {
        if self.at.current().is_some() {
            // A success needs no time: only failures stamp `accessed`/`checked`.
            self.free(false, None, 0);
        }
    }
}
