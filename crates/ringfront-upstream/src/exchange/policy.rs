//! What one location says about moving on to the next peer and keeping upstream connections:
//! nginx's `proxy_next_upstream` flags, `_tries`, `_timeout`, and the keepalive settings of
//! the group. The proxy crate fills it from the configuration; this crate does not know it.

use std::time::Duration;

use super::failure::FailClass;

/// `proxy_next_upstream`: when a request may move on to the next peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextUpstream {
    pub error: bool,
    pub timeout: bool,
    pub invalid_header: bool,
    pub http_500: bool,
    pub http_502: bool,
    pub http_503: bool,
    pub http_504: bool,
    pub http_403: bool,
    pub http_404: bool,
    pub http_429: bool,
    pub non_idempotent: bool,
    /// `off`: never move on (failures are still counted).
    pub off: bool,
}

impl Default for NextUpstream {
    /// nginx's default: `error timeout`.
    fn default() -> Self {
        NextUpstream {
            error: true,
            timeout: true,
            invalid_header: false,
            http_500: false,
            http_502: false,
            http_503: false,
            http_504: false,
            http_403: false,
            http_404: false,
            http_429: false,
            non_idempotent: false,
            off: false,
        }
    }
}

impl NextUpstream {
    /// Whether a failure of this class is listed.
    pub fn lists_failure(&self, class: FailClass) -> bool {
        !self.off
            && match class {
                FailClass::Error => self.error,
                FailClass::Timeout => self.timeout,
                FailClass::InvalidHeader => self.invalid_header,
            }
    }

    /// Whether a response with this status is listed (only nginx's `http_*` statuses can be).
    pub fn lists_status(&self, status: u16) -> bool {
        !self.off
            && match status {
                500 => self.http_500,
                502 => self.http_502,
                503 => self.http_503,
                504 => self.http_504,
                403 => self.http_403,
                404 => self.http_404,
                429 => self.http_429,
                _ => false,
            }
    }
}

/// A listed status that moves on counts as a failure of the peer, except 403 and 404.
pub fn status_is_failure(status: u16) -> bool {
    !matches!(status, 403 | 404)
}

/// RFC 9110 9.2.2 methods nginx will not resend once sent (POST, LOCK, PATCH).
pub fn non_idempotent(method: &[u8]) -> bool {
    matches!(method, b"POST" | b"LOCK" | b"PATCH")
}

/// Everything the exchange needs to decide, per request.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub next: NextUpstream,
    /// `proxy_next_upstream_tries` (0: as many as the group has peers).
    pub tries: u32,
    /// `proxy_next_upstream_timeout` (zero: none).
    pub timeout: Duration,
    /// The request's method may be sent to another peer after it was sent to one.
    pub idempotent: bool,
    /// The client asked for a protocol upgrade (a `101` is then the expected answer).
    pub upgrade: bool,
    /// The group's `keepalive` cache size (0: connections are never kept).
    pub keepalive: usize,
    /// The group's `keepalive_requests`.
    pub keepalive_requests: u64,
    /// `proxy_http_version 1.0`: the connection closes after every response.
    pub http10: bool,
    /// `least_time last_byte` (true), `header` (false), or another balancer (None): which
    /// response time the balancer averages.
    pub least_time_last_byte: Option<bool>,
}

impl Policy {
    /// nginx's defaults for a request of `method`.
    pub fn new(method: &[u8]) -> Self {
        Policy {
            next: NextUpstream::default(),
            tries: 0,
            timeout: Duration::ZERO,
            idempotent: !non_idempotent(method),
            upgrade: false,
            keepalive: 0,
            keepalive_requests: 1000,
            http10: false,
            least_time_last_byte: None,
        }
    }

    /// Once sent, may the request go to another peer?
    pub fn may_resend(&self) -> bool {
        self.idempotent || self.next.non_idempotent
    }
}
