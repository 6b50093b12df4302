//! The plain data the status renderers read. The caller (the health checker's glue) fills a
//! [`StatusView`] from the live counters once per status request; the renderers never touch
//! shared state, so they are pure functions of this snapshot.

/// Everything one status page, document or API answer shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusView {
    /// Upstream groups in configuration order.
    pub upstreams: Vec<UpstreamView>,
    /// One entry per worker thread.
    pub workers: Vec<WorkerView>,
    /// The time of the snapshot, milliseconds since the Unix epoch.
    pub now_unix_ms: u64,
    /// The configuration generation (0 at start, +1 per reload).
    pub generation: u64,
    /// When the server started, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
}

/// One worker thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerView {
    /// The worker's index (0-based).
    pub id: usize,
    /// Client connections open now.
    pub connections: u64,
    /// Client requests handled since start.
    pub requests: u64,
}

/// One `upstream {}` group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamView {
    /// The group's name as configured.
    pub name: String,
    /// The balancing method: `"round_robin"`, `"least_conn"`, `"ip_hash"`, `"hash"`,
    /// `"random"`, ...
    pub balancer: &'static str,
    /// The active-check protocol shown in the Tengine-style JSON `type` field: `"http"`,
    /// `"tcp"`, ..., or `"none"` without active checks.
    pub check_type: &'static str,
    /// A human description of each active check, e.g. `"http GET / every 1s fails=1 passes=1"`.
    pub checks: Vec<String>,
    /// The passive health mode: `"nginx"` or `"confirm"`.
    pub passive: &'static str,
    /// The group's servers in configuration order (backups included).
    pub peers: Vec<PeerView>,
}

/// A peer's state as the balancer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PeerState {
    /// Selectable.
    #[default]
    Up,
    /// Failed by active health checks.
    Down,
    /// A confirm probe is in flight, or a mandatory peer has not been checked yet.
    Checking,
    /// Failed out passively (`max_fails` within `fail_timeout`).
    Unavail,
    /// Marked `down` in the configuration.
    Disabled,
    /// `drain`: only requests a `sticky` session binds to it.
    Draining,
}

impl PeerState {
    /// Every state, in the order the Prometheus `state` series are written.
    pub const ALL: [PeerState; 6] = [
        PeerState::Up,
        PeerState::Down,
        PeerState::Checking,
        PeerState::Unavail,
        PeerState::Disabled,
        PeerState::Draining,
    ];

    /// The name used by the page, CSV, JSON and Prometheus output.
    pub fn as_str(self) -> &'static str {
        match self {
            PeerState::Up => "up",
            PeerState::Down => "down",
            PeerState::Checking => "checking",
            PeerState::Unavail => "unavail",
            PeerState::Disabled => "disabled",
            PeerState::Draining => "draining",
        }
    }

    /// The nginx Plus API name: a health-check failure is `unhealthy`, a configured `down`
    /// is `down`.
    pub fn api_str(self) -> &'static str {
        match self {
            PeerState::Up => "up",
            PeerState::Down => "unhealthy",
            PeerState::Checking => "checking",
            PeerState::Unavail => "unavail",
            PeerState::Disabled => "down",
            PeerState::Draining => "draining",
        }
    }

    /// Tengine's two-valued status: `up` for [`PeerState::Up`], `down` for every other state.
    pub fn is_up(self) -> bool {
        self == PeerState::Up
    }
}

/// The outcome of the last health verdict of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verdict {
    /// No verdict yet (or no checks of this kind configured).
    #[default]
    Unknown,
    Pass,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Unknown => "unknown",
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// One server of an upstream group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerView {
    /// Index within the upstream (configuration order); the API's server id.
    pub id: usize,
    /// The resolved address, e.g. `"127.0.0.1:8081"`.
    pub name: String,
    /// The address as written in the configuration (may be a host name).
    pub server: String,
    /// A `backup` server.
    pub backup: bool,
    /// Marked `down` in the configuration.
    pub down_configured: bool,
    /// Marked `drain` (in the configuration or by the API).
    pub drain_configured: bool,
    /// The current state.
    pub state: PeerState,
    /// The last active-check verdict.
    pub active: Verdict,
    /// The passive verdict: `Fail` while failed out passively.
    pub passive: Verdict,
    /// Consecutive successful active checks (Tengine's `rise` counter).
    pub rise: u32,
    /// Consecutive failed active checks (Tengine's `fall` counter).
    pub fall: u32,
    /// The current passive failure count (within `fail_timeout`).
    pub fails: u32,
    /// `max_fails=` (0: passive failure accounting off).
    pub max_fails: u32,
    /// `fail_timeout=` in seconds.
    pub fail_timeout_s: u64,
    /// `weight=`.
    pub weight: u32,
    /// The weight after the slow-start ramp (equals `weight` outside slow start).
    pub effective_weight: u32,
    /// `slow_start=` in seconds (0: off).
    pub slow_start_s: u64,
    /// `max_conns=` (0: unlimited).
    pub max_conns: u32,
    /// Upstream connections in use now.
    pub active_conns: u32,
    /// Requests sent to this peer since start.
    pub requests: u64,
    /// Responses by class: `[1xx, 2xx, 3xx, 4xx, 5xx]`.
    pub responses: [u64; 5],
    /// Failed attempts by kind: `"error"`, `"timeout"`, `"invalid_header"`, `"http_5xx"`,
    /// `"http_4xx"`, ... (kinds with a zero count may be left out).
    pub failures: Vec<(&'static str, u64)>,
    /// Times the peer was failed out passively (nginx Plus `unavail`).
    pub unavail: u64,
    /// Average response time in milliseconds, 0 when there is none.
    pub response_time_ms: u64,
    /// Response-time histogram: `(upper bound in seconds, count in this bucket)`, ascending,
    /// counts NOT cumulative. Responses slower than the last bound count only in `rt_count`.
    pub rt_buckets: Vec<(f64, u64)>,
    /// The sum of all response times, seconds.
    pub rt_sum_s: f64,
    /// The number of timed responses.
    pub rt_count: u64,
    /// Active checks run against this peer.
    pub checks_total: u64,
    /// Active checks that failed.
    pub checks_failed: u64,
    /// Times active checks turned this peer down (nginx Plus `health_checks.unhealthy`).
    pub unhealthy: u64,
    /// When the state last changed, milliseconds since the Unix epoch.
    pub last_change_unix_ms: Option<u64>,
    /// Why the state last changed, e.g. `"active check: connect refused"`.
    pub last_change_cause: Option<String>,
    /// When the balancer last chose this peer, milliseconds since the Unix epoch.
    pub last_selected_unix_ms: Option<u64>,
    /// Total time spent in a state other than `Up`, milliseconds (including the current
    /// spell).
    pub downtime_ms: u64,
}

impl PeerView {
    /// All failed attempts, every kind together.
    pub fn failures_total(&self) -> u64 {
        self.failures
            .iter()
            .fold(0u64, |acc, (_, n)| acc.saturating_add(*n))
    }

    /// All responses, every class together.
    pub fn responses_total(&self) -> u64 {
        self.responses
            .iter()
            .fold(0u64, |acc, n| acc.saturating_add(*n))
    }
}
