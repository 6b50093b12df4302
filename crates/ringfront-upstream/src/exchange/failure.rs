//! Why a try failed, as data: the phase of the exchange and the cause. nginx's wording
//! (`connect() failed (111: Connection refused) while connecting to upstream`) comes from
//! `Display`; the `proxy_next_upstream` class and the health board's kind are derived, so no
//! caller ever looks inside a message.

use std::fmt;

use crate::board::FailKind;

/// Where in the exchange with the upstream the failure happened (nginx's "while ..." part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connect,
    SendRequest,
    ReadHead,
    /// After the response head was accepted and relaying began: never a failure of the peer.
    ReadBody,
}

impl Phase {
    /// nginx's `while ...` text.
    pub fn doing(self) -> &'static str {
        match self {
            Phase::Connect => "connecting to upstream",
            Phase::SendRequest => "sending request to upstream",
            Phase::ReadHead => "reading response header from upstream",
            Phase::ReadBody => "reading upstream",
        }
    }

    /// The system call nginx names for an OS error in this phase.
    fn syscall(self) -> &'static str {
        match self {
            Phase::Connect => "connect()",
            Phase::SendRequest => "writev()",
            Phase::ReadHead | Phase::ReadBody => "recv()",
        }
    }

    /// Whether some of the request may have reached the peer (matters for POST).
    pub fn request_sent(self) -> bool {
        !matches!(self, Phase::Connect)
    }
}

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// An OS error (errno): refused, reset, unreachable, broken pipe, ...
    Os(i32),
    /// The phase's deadline passed (`proxy_connect_timeout`, `_send_timeout`, `_read_timeout`).
    TimedOut,
    /// The peer closed the connection before the head (or body) was complete.
    Closed,
    /// A head that does not parse.
    InvalidHeader,
    /// Not HTTP at all (nginx's HTTP/0.9 case; ringfront refuses it).
    NoValidHeader,
    /// A head larger than ringfront accepts.
    TooBigHeader,
    /// `101 Switching Protocols` to a request that asked for no upgrade.
    Unexpected101,
    /// Broken chunked framing in the response body.
    InvalidChunked,
}

/// nginx's `proxy_next_upstream` failure classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailClass {
    Error,
    Timeout,
    InvalidHeader,
}

/// Linux's ECONNREFUSED.
pub const ECONNREFUSED: i32 = 111;

/// One failed step of a try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub phase: Phase,
    pub cause: Cause,
}

impl Failure {
    pub fn new(phase: Phase, cause: Cause) -> Self {
        Failure { phase, cause }
    }

    /// From an I/O error of `phase` (its errno, or a plain error without one).
    pub fn io(phase: Phase, e: &std::io::Error) -> Self {
        let cause = match e.raw_os_error() {
            Some(code) => Cause::Os(code),
            None if e.kind() == std::io::ErrorKind::TimedOut => Cause::TimedOut,
            None => Cause::Closed,
        };
        Failure { phase, cause }
    }

    pub fn class(&self) -> FailClass {
        match self.cause {
            Cause::TimedOut => FailClass::Timeout,
            Cause::InvalidHeader
            | Cause::NoValidHeader
            | Cause::TooBigHeader
            | Cause::Unexpected101 => FailClass::InvalidHeader,
            Cause::Os(_) | Cause::Closed | Cause::InvalidChunked => FailClass::Error,
        }
    }

    /// The kind the health board counts.
    pub fn kind(&self) -> FailKind {
        match (self.class(), self.cause) {
            (FailClass::Timeout, _) => FailKind::Timeout,
            (FailClass::InvalidHeader, _) => FailKind::InvalidHeader,
            (_, Cause::Os(ECONNREFUSED)) => FailKind::Refused,
            _ => FailKind::Error,
        }
    }

    /// The status the client gets when this is the last try: 504 for a timeout, else 502.
    pub fn status(&self) -> u16 {
        if self.class() == FailClass::Timeout {
            504
        } else {
            502
        }
    }
}

/// nginx's `(111: Connection refused)`.
pub struct Errno(pub i32);

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = std::io::Error::from_raw_os_error(self.0).to_string();
        let text = e.split(" (os error").next().unwrap_or(&e);
        write!(f, "({}: {text})", self.0)
    }
}

impl fmt::Display for Failure {
    /// The error-log message without the request context, as nginx words it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let doing = self.phase.doing();
        match self.cause {
            Cause::Os(code) => write!(f, "{} failed {}", self.phase.syscall(), Errno(code))?,
            Cause::TimedOut => write!(f, "upstream timed out {}", Errno(110))?,
            Cause::Closed => f.write_str("upstream prematurely closed connection")?,
            Cause::InvalidHeader => f.write_str("upstream sent invalid header")?,
            Cause::NoValidHeader => f.write_str("upstream sent no valid HTTP/1.0 header")?,
            Cause::TooBigHeader => f.write_str("upstream sent too big header")?,
            Cause::Unexpected101 => {
                f.write_str("upstream sent unexpected 101 Switching Protocols")?
            }
            Cause::InvalidChunked => f.write_str("upstream sent invalid chunked response")?,
        }
        write!(f, " while {doing}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_wording() {
        let cases = [
            (
                Failure::new(Phase::Connect, Cause::Os(111)),
                "connect() failed (111: Connection refused) while connecting to upstream",
            ),
            (
                Failure::new(Phase::Connect, Cause::TimedOut),
                "upstream timed out (110: Connection timed out) while connecting to upstream",
            ),
            (
                Failure::new(Phase::SendRequest, Cause::Os(32)),
                "writev() failed (32: Broken pipe) while sending request to upstream",
            ),
            (
                Failure::new(Phase::ReadHead, Cause::Os(104)),
                "recv() failed (104: Connection reset by peer) while reading response header from upstream",
            ),
            (
                Failure::new(Phase::ReadHead, Cause::Closed),
                "upstream prematurely closed connection while reading response header from upstream",
            ),
            (
                Failure::new(Phase::ReadHead, Cause::NoValidHeader),
                "upstream sent no valid HTTP/1.0 header while reading response header from upstream",
            ),
            (
                Failure::new(Phase::ReadHead, Cause::TooBigHeader),
                "upstream sent too big header while reading response header from upstream",
            ),
            (
                Failure::new(Phase::ReadBody, Cause::TimedOut),
                "upstream timed out (110: Connection timed out) while reading upstream",
            ),
            (
                Failure::new(Phase::ReadBody, Cause::InvalidChunked),
                "upstream sent invalid chunked response while reading upstream",
            ),
        ];
        for (f, text) in cases {
            assert_eq!(f.to_string(), text);
        }
    }

    #[test]
    fn classes_kinds_and_statuses() {
        let refused = Failure::new(Phase::Connect, Cause::Os(ECONNREFUSED));
        assert_eq!(refused.class(), FailClass::Error);
        assert_eq!(refused.kind(), FailKind::Refused);
        assert_eq!(refused.status(), 502);
        assert!(!refused.phase.request_sent());
        let reset = Failure::new(Phase::ReadHead, Cause::Os(104));
        assert_eq!(reset.kind(), FailKind::Error);
        assert!(reset.phase.request_sent());
        let slow = Failure::new(Phase::ReadHead, Cause::TimedOut);
        assert_eq!(slow.class(), FailClass::Timeout);
        assert_eq!(slow.kind(), FailKind::Timeout);
        assert_eq!(slow.status(), 504);
        for c in [
            Cause::InvalidHeader,
            Cause::NoValidHeader,
            Cause::TooBigHeader,
            Cause::Unexpected101,
        ] {
            let f = Failure::new(Phase::ReadHead, c);
            assert_eq!(f.class(), FailClass::InvalidHeader);
            assert_eq!(f.kind(), FailKind::InvalidHeader);
            assert_eq!(f.status(), 502);
        }
    }
}
