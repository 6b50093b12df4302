//! The per-peer checks every nginx balancer makes, in nginx's order after the tried bitmap:
//! `down`, failed out (`max_fails` within `fail_timeout`), at `max_conns`; and the step that
//! lets one request probe a peer whose quiet period is over.

use std::sync::atomic::Ordering;

use crate::board::PeerHealth;
use crate::topology::PeerSpec;

/// `max_fails != 0 && fails >= max_fails && now - checked <= fail_timeout`: nginx's passive
/// verdict (status pages show it as `unavail`).
pub fn failed_out(spec: &PeerSpec, h: &PeerHealth, now: u64) -> bool {
    spec.max_fails != 0
        && h.fails() >= spec.max_fails
        && now.saturating_sub(h.checked()) <= spec.fail_timeout
}

/// `max_conns != 0 && conns >= max_conns`, over every worker's active requests.
pub(crate) fn at_max_conns(spec: &PeerSpec, h: &PeerHealth) -> bool {
    spec.max_conns != 0 && h.balance_conns() >= spec.max_conns
}

/// Not `down`, up for the health checker, not failed out, not at `max_conns`.
pub(crate) fn usable(spec: &PeerSpec, h: &PeerHealth, now: u64) -> bool {
    !spec.down && h.is_up() && !failed_out(spec, h, now) && !at_max_conns(spec, h)
}

/// What a `sticky` pin needs of its peer: [`usable`], except that a draining peer
/// (`drain`) is taken, as nginx's `peer->down & ~NGX_HTTP_UPSTREAM_DRAINING`.
pub(crate) fn pinnable(spec: &PeerSpec, h: &PeerHealth, now: u64) -> bool {
    (!spec.down || spec.drain) && h.is_up() && !failed_out(spec, h, now) && !at_max_conns(spec, h)
}

/// nginx's `if (now - peer->checked > peer->fail_timeout) peer->checked = now;` on the chosen
/// peer. After a quiet period the first request that selects a failed peer is the probe;
/// moving `checked` keeps every other request off it until it answers. Compare-and-swap, so
/// across workers exactly one request is that probe.
pub(crate) fn touch(spec: &PeerSpec, h: &PeerHealth, now: u64) {
    let checked = h.checked();
    if now.saturating_sub(checked) > spec.fail_timeout {
        let _ = h
            .checked
            .compare_exchange(checked, now, Ordering::Relaxed, Ordering::Relaxed);
    }
}
