//! What one probe found, as data: a pass (and what passed) or a failure (and why). The
//! checker's log lines and status pages use the `Display` texts
//! (`HTTP 503: not 2xx or 3xx`, `connect refused`, `timed out`, ...).

use std::fmt;

use ringfront_upstream::exchange::{Errno, Failure};

/// The probe's verdict.
pub type Outcome = Result<Passed, ProbeFailure>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passed {
    /// A `tcp` check connected.
    Connected,
    /// An HTTP check got an acceptable answer; `matched` when a `match` block judged it.
    Http { status: u16, matched: bool },
}

/// Why an answer was not acceptable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Not 2xx or 3xx (nginx Plus's default expectation).
    NotSuccess,
    /// Tengine's `check_http_expect_alive`: this class (e.g. 5) is not listed.
    ClassNotExpected(u16),
    /// A `match` test failed; which one.
    MatchFailed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeFailure {
    Refused,
    Reset,
    Os(i32),
    ConnectTimedOut,
    SendTimedOut,
    TimedOut,
    ClosedBeforeResponse,
    ClosedMidBody,
    HeadTooLarge,
    /// The bytes are not a response head (`httparse`'s words).
    InvalidResponse(String),
    InvalidChunked(String),
    /// The TLS handshake of a probe to an `https://` location's peer failed.
    Handshake(Failure),
    Rejected {
        status: u16,
        why: Rejection,
    },
}

impl ProbeFailure {
    pub fn io(e: &std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::ConnectionRefused => ProbeFailure::Refused,
            std::io::ErrorKind::ConnectionReset => ProbeFailure::Reset,
            _ => ProbeFailure::Os(e.raw_os_error().unwrap_or(0)),
        }
    }
}

impl fmt::Display for Passed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Passed::Connected => f.write_str("connected"),
            Passed::Http {
                status,
                matched: false,
            } => write!(f, "HTTP {status}"),
            Passed::Http {
                status,
                matched: true,
            } => write!(f, "HTTP {status}, match passed"),
        }
    }
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeFailure::Refused => f.write_str("connect refused"),
            ProbeFailure::Reset => f.write_str("connection reset"),
            ProbeFailure::Os(code) => write!(f, "error {}", Errno(*code)),
            ProbeFailure::ConnectTimedOut => f.write_str("connect timed out"),
            ProbeFailure::SendTimedOut => f.write_str("send timed out"),
            ProbeFailure::TimedOut => f.write_str("timed out"),
            ProbeFailure::ClosedBeforeResponse => {
                f.write_str("connection closed before a response")
            }
            ProbeFailure::ClosedMidBody => f.write_str("connection closed mid-body"),
            ProbeFailure::HeadTooLarge => f.write_str("response head too large"),
            ProbeFailure::InvalidResponse(e) => write!(f, "invalid response ({e})"),
            ProbeFailure::InvalidChunked(e) => write!(f, "invalid chunked body ({e})"),
            ProbeFailure::Handshake(e) => write!(f, "{e}"),
            ProbeFailure::Rejected { status, why } => {
                write!(f, "HTTP {status}: ")?;
                match why {
                    Rejection::NotSuccess => f.write_str("not 2xx or 3xx"),
                    Rejection::ClassNotExpected(c) => write!(f, "{c}xx not expected"),
                    Rejection::MatchFailed(t) => write!(f, "match failed on {t}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        assert_eq!(Passed::Connected.to_string(), "connected");
        assert_eq!(
            Passed::Http {
                status: 200,
                matched: true
            }
            .to_string(),
            "HTTP 200, match passed"
        );
        let f = ProbeFailure::Rejected {
            status: 503,
            why: Rejection::MatchFailed("status".into()),
        };
        assert_eq!(f.to_string(), "HTTP 503: match failed on status");
        assert_eq!(
            ProbeFailure::Rejected {
                status: 500,
                why: Rejection::ClassNotExpected(5)
            }
            .to_string(),
            "HTTP 500: 5xx not expected"
        );
        assert_eq!(
            ProbeFailure::Os(113).to_string(),
            "error (113: No route to host)"
        );
        let refused = std::io::Error::from_raw_os_error(111);
        assert_eq!(ProbeFailure::io(&refused), ProbeFailure::Refused);
    }
}
