//! The worker's keepalive sweep: one task per worker, no timer per idle connection. It
//! sleeps until the earliest `keepalive_timeout` comes due, closes what is due, and closes
//! the idle connections of peers the health board marks down. It wakes for nothing else:
//! the checker rings every worker when it marks a peer down, a reload rings them too, and
//! with nothing pooled the sweep waits, without a timer, for the next connection pooled.

use ringfront_upstream::{Board, PeerId, DOWN};

/// Whether the board says the peer is down (its idle connections are closed).
pub fn down(board: &Board, peer: PeerId) -> bool {
    board.get(peer).is_some_and(|h| h.state() == DOWN)
}
