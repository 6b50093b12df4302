//! The view the renderer tests share: two upstreams, peers in different states, a cause that
//! needs escaping everywhere.

use super::view::*;

/// The cause that every format must escape.
pub const NASTY_CAUSE: &str = "active check: <script>alert(\"x\")</script>, status 503\nnext";

pub const NOW: u64 = 1_700_000_000_000;

fn peer(id: usize, name: &str, state: PeerState) -> PeerView {
    PeerView {
        id,
        name: name.to_string(),
        server: name.to_string(),
        state,
        weight: 1,
        effective_weight: 1,
        max_fails: 1,
        fail_timeout_s: 10,
        ..PeerView::default()
    }
}

pub fn sample() -> StatusView {
    let up = PeerView {
        active: Verdict::Pass,
        passive: Verdict::Pass,
        rise: 5,
        weight: 5,
        effective_weight: 3,
        slow_start_s: 30,
        max_conns: 100,
        active_conns: 2,
        requests: 120,
        responses: [0, 110, 2, 3, 5],
        failures: vec![("error", 1), ("timeout", 2), ("http_5xx", 5)],
        response_time_ms: 12,
        rt_buckets: vec![(0.005, 10), (0.01, 40), (0.1, 60), (1.0, 5)],
        rt_sum_s: 1.5,
        rt_count: 120,
        checks_total: 40,
        checks_failed: 1,
        last_change_unix_ms: Some(NOW - 65_000),
        last_change_cause: Some("active check passed".into()),
        last_selected_unix_ms: Some(NOW - 10),
        ..peer(0, "127.0.0.1:8081", PeerState::Up)
    };
    let down = PeerView {
        active: Verdict::Fail,
        fall: 3,
        requests: 7,
        responses: [0, 4, 0, 0, 3],
        failures: vec![("http_5xx", 3)],
        rt_buckets: vec![(0.005, 1), (0.01, 0), (0.1, 2)],
        rt_sum_s: 0.2,
        rt_count: 4,
        checks_total: 40,
        checks_failed: 12,
        unhealthy: 2,
        last_change_unix_ms: Some(NOW - 3_000),
        last_change_cause: Some(NASTY_CAUSE.into()),
        downtime_ms: 3_000,
        ..peer(1, "127.0.0.1:8082", PeerState::Down)
    };
    let backup = PeerView {
        backup: true,
        server: "backup.example:8083".into(),
        ..peer(2, "127.0.0.1:8083", PeerState::Checking)
    };
    let unavail = PeerView {
        passive: Verdict::Fail,
        fails: 1,
        requests: 3,
        failures: vec![("timeout", 3)],
        unavail: 1,
        last_change_unix_ms: Some(NOW - 500),
        last_change_cause: Some("passive: 1 failure in 10s".into()),
        downtime_ms: 500,
        ..peer(0, "10.0.0.1:80", PeerState::Unavail)
    };
    let plain = PeerView {
        requests: 1,
        responses: [0, 1, 0, 0, 0],
        ..peer(1, "10.0.0.2:80", PeerState::Up)
    };
    let disabled = PeerView {
        down_configured: true,
        ..peer(2, "10.0.0.3:80", PeerState::Disabled)
    };
    StatusView {
        upstreams: vec![
            UpstreamView {
                name: "backend".into(),
                balancer: "round_robin",
                check_type: "http",
                checks: vec!["http GET / every 1s fails=1 passes=1".into()],
                passive: "nginx",
                peers: vec![up, down, backup],
            },
            UpstreamView {
                name: "api \"v2\"".into(),
                balancer: "least_conn",
                check_type: "none",
                checks: vec![],
                passive: "confirm",
                peers: vec![unavail, plain, disabled],
            },
        ],
        workers: vec![
            WorkerView {
                id: 0,
                connections: 3,
                requests: 100,
            },
            WorkerView {
                id: 1,
                connections: 1,
                requests: 31,
            },
        ],
        now_unix_ms: NOW,
        generation: 4,
        started_unix_ms: NOW - 3_600_000,
    }
}
