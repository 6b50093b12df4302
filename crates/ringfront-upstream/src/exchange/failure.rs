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
    /// The TLS handshake of `proxy_pass https://`, after the TCP connect.
    Handshake,
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
            Phase::Handshake => "SSL handshaking to upstream",
            Phase::SendRequest => "sending request to upstream",
            Phase::ReadHead => "reading response header from upstream",
            Phase::ReadBody => "reading upstream",
        }
    }

    /// The system call nginx names for an OS error in this phase.
    fn syscall(self) -> &'static str {
        match self {
            Phase::Connect => "connect()",
            Phase::Handshake => "SSL_do_handshake()",
            Phase::SendRequest => "writev()",
            Phase::ReadHead | Phase::ReadBody => "recv()",
        }
    }

    /// Whether some of the request may have reached the peer (matters for POST).
    pub fn request_sent(self) -> bool {
        !matches!(self, Phase::Connect | Phase::Handshake)
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
    /// The TLS handshake failed (nginx counts it as `error`).
    Ssl(SslFault),
}

/// Why a TLS handshake to the upstream failed, in the words nginx logs (OpenSSL's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslFault {
    /// `proxy_ssl_verify on` and the certificate did not verify: OpenSSL's X.509 verify
    /// code and text (`20`, `unable to get local issuer certificate`).
    Verify(i32, &'static str),
    /// The certificate does not name `proxy_ssl_name` (the caller words it with the name).
    NameMismatch,
    /// The handshake broke off: the TLS library's reason (`wrong version number`,
    /// `tlsv1 alert unknown ca`, ...).
    Protocol(&'static str),
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
            Cause::Os(_) | Cause::Closed | Cause::InvalidChunked | Cause::Ssl(_) => {
                FailClass::Error
            }
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
        let handshake = self.phase == Phase::Handshake;
        match self.cause {
            // OpenSSL's SSL_ERROR_SYSCALL / EOF in a handshake, as nginx words it.
            Cause::Os(code) if handshake => {
                write!(f, "peer closed connection in SSL handshake {}", Errno(code))?
            }
            Cause::Closed if handshake => f.write_str("peer closed connection in SSL handshake")?,
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
            Cause::Ssl(SslFault::Verify(code, text)) => {
                write!(f, "upstream SSL certificate verify error: ({code}:{text})")?
            }
            Cause::Ssl(SslFault::NameMismatch) => {
                f.write_str("upstream SSL certificate does not match the expected name")?
            }
            Cause::Ssl(SslFault::Protocol(why)) => {
                write!(f, "{} failed (SSL: {why})", self.phase.syscall())?
            }
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
            (
                Failure::new(
                    Phase::Handshake,
                    Cause::Ssl(SslFault::Protocol("wrong version number")),
                ),
                "SSL_do_handshake() failed (SSL: wrong version number) while SSL handshaking to upstream",
            ),
            (
                Failure::new(
                    Phase::Handshake,
                    Cause::Ssl(SslFault::Verify(20, "unable to get local issuer certificate")),
                ),
                "upstream SSL certificate verify error: (20:unable to get local issuer certificate) while SSL handshaking to upstream",
            ),
            (
                Failure::new(Phase::Handshake, Cause::Closed),
                "peer closed connection in SSL handshake while SSL handshaking to upstream",
            ),
            (
                Failure::new(Phase::Handshake, Cause::Os(104)),
                "peer closed connection in SSL handshake (104: Connection reset by peer) while SSL handshaking to upstream",
            ),
            (
                Failure::new(Phase::Handshake, Cause::TimedOut),
                "upstream timed out (110: Connection timed out) while SSL handshaking to upstream",
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
        // nginx: NGX_HTTP_UPSTREAM_FT_ERROR for a failed handshake, FT_TIMEOUT for a slow one.
        let tls = Failure::new(Phase::Handshake, Cause::Ssl(SslFault::NameMismatch));
        assert_eq!(tls.class(), FailClass::Error);
        assert_eq!(tls.kind(), FailKind::Error);
        assert_eq!(tls.status(), 502);
        assert!(!tls.phase.request_sent());
        let slow = Failure::new(Phase::Handshake, Cause::TimedOut);
        assert_eq!(slow.class(), FailClass::Timeout);
    }
}
