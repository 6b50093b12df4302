//! Fills a [`StatusView`] from the running configuration, the shared health board and the
//! workers' counters: plain atomic loads, done per status request (never on the proxy path).

use std::sync::atomic::Ordering;

use ringfront_upstream::{
    failed_out, FailKind, PeerHealth, PeerSpec, CHECKING, DOWN, RT_BUCKETS_US,
};

use super::view::{PeerState, PeerView, StatusView, UpstreamView, Verdict, WorkerView};
use crate::check_rt::ProbeKind;
use crate::snapshot::Snapshot;
use crate::Shared;

fn state(spec: &PeerSpec, h: &PeerHealth, now_s: u64) -> PeerState {
    if spec.down && !spec.drain {
        return PeerState::Disabled;
    }
    match h.state() {
        DOWN => PeerState::Down,
        CHECKING => PeerState::Checking,
        _ if failed_out(spec, h, now_s) => PeerState::Unavail,
        _ if spec.drain => PeerState::Draining,
        _ => PeerState::Up,
    }
}

fn peer(
    index: usize,
    spec: &PeerSpec,
    h: &PeerHealth,
    backup: bool,
    single: bool,
    now_s: u64,
) -> PeerView {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let st = state(spec, h, now_s);
    let ramp = if single { 1000 } else { h.ramp() };
    let effective = if ramp >= 1000 {
        spec.weight
    } else {
        u32::try_from(u64::from(spec.weight) * u64::from(ramp) / 1000)
            .unwrap_or(spec.weight)
            .max(1)
            .min(spec.weight)
    };
    let mut rt_buckets: Vec<(f64, u64)> = RT_BUCKETS_US
        .iter()
        .enumerate()
        .map(|(i, &le)| (le as f64 / 1e6, h.rt_bucket(i)))
        .collect();
    rt_buckets.push((f64::INFINITY, h.rt_bucket(RT_BUCKETS_US.len())));
    let rt_count: u64 = rt_buckets.iter().map(|(_, c)| c).sum();
    let rt_sum_us = h.rt_sum_us();
    let change = h.change.get();
    let failures: Vec<(&'static str, u64)> = FailKind::ALL
        .iter()
        .map(|&k| (k.name(), h.failures_of(k)))
        .collect();
    PeerView {
        id: index,
        name: spec.name.clone(),
        server: spec.server_text().to_string(),
        backup,
        down_configured: spec.down && !spec.drain,
        drain_configured: spec.drain,
        state: st,
        active: match h.last_probe.load(Ordering::Relaxed) {
            1 => Verdict::Pass,
            2 => Verdict::Fail,
            _ => Verdict::Unknown,
        },
        passive: match st {
            PeerState::Unavail => Verdict::Fail,
            _ if h.requests() == 0 => Verdict::Unknown,
            _ => Verdict::Pass,
        },
        rise: h.rise.load(Ordering::Relaxed),
        fall: h.fall.load(Ordering::Relaxed),
        fails: h.fails(),
        max_fails: spec.max_fails,
        fail_timeout_s: spec.fail_timeout,
        weight: spec.weight,
        effective_weight: effective,
        slow_start_s: spec.slow_start_ms / 1000,
        max_conns: spec.max_conns,
        active_conns: h.conns(),
        requests: h.requests(),
        responses: std::array::from_fn(|i| h.responses(i + 1)),
        failures,
        unavail: load(&h.unavail),
        response_time_ms: (rt_sum_us / 1000).checked_div(rt_count).unwrap_or(0),
        rt_buckets,
        rt_sum_s: rt_sum_us as f64 / 1e6,
        rt_count,
        checks_total: load(&h.checks),
        checks_failed: load(&h.checks_failed),
        unhealthy: load(&h.ejections),
        last_change_unix_ms: change.as_ref().map(|c| c.at_unix_ms),
        last_change_cause: change.map(|c| c.cause.clone()),
        last_selected_unix_ms: None,
        downtime_ms: load(&h.downtime_ms),
    }
}

/// The API's server ids of group `name`'s peers, in the view's order (empty when the
/// snapshot has no configuration).
fn api_ids(snap: &Snapshot, name: &str) -> Vec<usize> {
    let up = snap
        .config
        .as_ref()
        .and_then(|c| c.http.upstreams.iter().find(|u| u.name == name));
    up.map_or_else(Vec::new, |u| crate::members::peer_ids(u, &snap.members))
}

/// Everything a status page shows, now.
pub fn collect(snap: &Snapshot, shared: &Shared) -> StatusView {
    let now_s = crate::clock::now_secs();
    let upstreams = snap
        .topology
        .upstreams
        .iter()
        .enumerate()
        .map(|(gi, up)| {
            let g = snap.groups.get(gi);
            let checks = g.map_or(&[][..], |g| &g.checks[..]);
            let mut peers = Vec::with_capacity(up.ids().len());
            let ids = api_ids(snap, &up.name);
            for (list, backup) in [(&up.primary, false), (&up.backup, true)] {
                for (i, spec) in list.peers.iter().enumerate() {
                    let id = list.base + i;
                    if let Some(h) = snap.board.get(id) {
                        let shown = ids.get(peers.len()).copied();
                        peers.push(peer(
                            shown.unwrap_or(id - up.primary.base),
                            spec,
                            h,
                            backup,
                            up.single,
                            now_s,
                        ));
                    }
                }
            }
            UpstreamView {
                name: up.name.clone(),
                balancer: g.map_or("round_robin", |g| g.balancer),
                check_type: match checks.first().map(|c| &c.kind) {
                    Some(ProbeKind::Http { .. }) => "http",
                    Some(ProbeKind::Tcp) => "tcp",
                    None => "none",
                },
                checks: checks.iter().map(|c| c.describe.clone()).collect(),
                passive: if g.is_some_and(|g| g.confirm) {
                    "confirm"
                } else {
                    "nginx"
                },
                peers,
            }
        })
        .collect();
    StatusView {
        upstreams,
        workers: shared
            .workers
            .iter()
            .enumerate()
            .map(|(id, w)| WorkerView {
                id,
                connections: w.connections.load(Ordering::Relaxed),
                requests: w.requests.load(Ordering::Relaxed),
            })
            .collect(),
        now_unix_ms: crate::clock::unix_ms(),
        generation: snap.generation,
        started_unix_ms: shared.started_unix_ms,
    }
}
