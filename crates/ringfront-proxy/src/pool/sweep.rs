//! The worker's keepalive sweep: one task per worker, no timer per idle connection. It
//! sleeps until the earliest `keepalive_timeout` comes due, closes what is due, and closes
//! the idle connections of peers the health board marks down. It wakes for nothing else:
//! the checker rings every worker when it marks a peer down, a reload rings them too, and
//! with nothing pooled the sweep waits, without a timer, for the next connection pooled.

use std::rc::Rc;
use std::time::Duration;

use ringfront_upstream::{Board, PeerId, DOWN};

use crate::worker::Worker;

/// Runs the sweep of `w`'s current keepalive pool until the worker ends.
pub async fn run(w: Rc<Worker>) {
    loop {
        let wait = {
            let snap = w.snapshot();
            let state = w.peer_state(&snap);
            let now = crate::clock::now_ms();
            let next = state.pool.borrow_mut().sweep(now, |p| down(&snap.board, p));
            next.map(|at| {
                Duration::from_millis(at.saturating_sub(now)).max(Duration::from_millis(1))
            })
        };
        match wait {
            Some(wait) => {
                monoio::select! {
                    _ = monoio::time::sleep(wait) => {}
                    _ = w.sweep.wait() => {}
                }
            }
            None => {
                w.sweep_parked.set(true);
                w.sweep.wait().await;
                w.sweep_parked.set(false);
            }
        }
    }
}

fn down(board: &Board, peer: PeerId) -> bool {
    board.get(peer).is_some_and(|h| h.state() == DOWN)
}
