//! The worker's keepalive sweep: one task per worker, no timer per idle connection. It
//! sleeps until the earliest `keepalive_timeout` comes due (at most `TICK`), closes what is
//! due, and closes the idle connections of peers the health board marks down (the board is
//! shared atomics with no wake-up, so a down peer's connections close within one `TICK`).

use std::rc::Rc;
use std::time::Duration;

use ringfront_upstream::{Board, PeerId, DOWN};

use crate::worker::Worker;

/// The longest the sweep sleeps, so that a peer going down is noticed.
const TICK: Duration = Duration::from_millis(250);

/// Runs the sweep of `w`'s current keepalive pool until the worker ends.
pub async fn run(w: Rc<Worker>) {
    loop {
        let wait = {
            let snap = w.snapshot();
            let state = w.peer_state(&snap);
            let now = crate::clock::now_ms();
            let next = state.pool.borrow_mut().sweep(now, |p| down(&snap.board, p));
            next.map_or(TICK, |at| {
                Duration::from_millis(at.saturating_sub(now)).min(TICK)
            })
        };
        monoio::time::sleep(wait.max(Duration::from_millis(1))).await;
    }
}

fn down(board: &Board, peer: PeerId) -> bool {
    board.get(peer).is_some_and(|h| h.state() == DOWN)
}
