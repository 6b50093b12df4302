//! Active checks as the checker runs them: the configuration's `ActiveCheck` with the probe
//! request built, every regular expression compiled (once per configuration) and, for a
//! `health_check` in a `proxy_pass https://` location, that location's TLS settings.

use std::time::Duration;

use regex::bytes::Regex as BytesRegex;
use regex::Regex;
use ringfront_config::{ActiveCheck, Expect, HeaderOp, HttpProbe, MatchTest, Probe};

use crate::build_error::BuildError;
use crate::upstream_tls::{Handshake, TlsCache};

#[derive(Debug)]
pub struct CheckRt {
    pub interval: Duration,
    pub jitter: Duration,
    pub fails: u32,
    pub passes: u32,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub port: Option<u16>,
    pub kind: ProbeKind,
    pub mandatory: bool,
    pub persistent: bool,
    /// For status pages and log lines: `http GET /health every 1s fails=1 passes=2`.
    pub describe: String,
    /// Probes speak TLS (nginx Plus: a `health_check` where `proxy_pass` is `https://`).
    pub tls: Option<Handshake>,
}

#[derive(Debug)]
pub enum ProbeKind {
    Tcp,
    Http { request: Vec<u8>, expect: ExpectRt },
}

#[derive(Debug)]
pub enum ExpectRt {
    /// 2xx or 3xx.
    Default,
    /// Bit n set: status class n passes.
    Classes(u8),
    /// Every test must hold.
    Match(Vec<TestRt>),
}

#[derive(Debug)]
pub enum TestRt {
    Status {
        negate: bool,
        ranges: Vec<(u16, u16)>,
    },
    Header {
        name: String,
        op: HeaderOpRt,
    },
    Body {
        negate: bool,
        re: BytesRegex,
    },
}

#[derive(Debug)]
pub enum HeaderOpRt {
    Present,
    Absent,
    Equals(String),
    NotEquals(String),
    Matches(Regex),
    NotMatches(Regex),
}

fn regex(p: &str) -> Result<Regex, BuildError> {
    Regex::new(p).map_err(|e| BuildError::Regex(p.to_string(), e.to_string()))
}

/// `GET URI HTTP/1.1` with the group's host, asking the peer to close after answering.
fn probe_request(uri: &str, host: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut h = ringfront_http::HeadWriter::request(
        &mut out,
        b"GET",
        |o| o.extend_from_slice(uri.as_bytes()),
        false,
    );
    h.header(b"Host", host.as_bytes())
        .header(b"Connection", b"close")
        .header(b"User-Agent", b"ringfront-health-check");
    h.finish();
    out
}

impl CheckRt {
    /// `host` is the `Host` of nginx Plus style probes: the group's `$proxy_host`.
    pub fn build(
        c: &ActiveCheck,
        host: &str,
        tls: Option<Handshake>,
    ) -> Result<CheckRt, BuildError> {
        let (kind, what) = match &c.probe {
            Probe::Tcp => (ProbeKind::Tcp, "tcp connect".to_string()),
            Probe::Http { request, expect } => {
                let (bytes, what) = match request {
                    HttpProbe::Uri(uri) => (probe_request(uri, host), format!("http GET {uri}")),
                    HttpProbe::Raw(raw) => {
                        let line = raw.split(|&b| b == b'\r' || b == b'\n').next();
                        let line = String::from_utf8_lossy(line.unwrap_or_default());
                        (raw.clone(), format!("http \"{line}\""))
                    }
                };
                let expect = match expect {
                    Expect::Default => ExpectRt::Default,
                    Expect::Classes(bits) => ExpectRt::Classes(*bits),
                    Expect::Match(m) => ExpectRt::Match(
                        m.tests
                            .iter()
                            .map(|t| {
                                Ok(match t {
                                    MatchTest::Status { negate, ranges } => TestRt::Status {
                                        negate: *negate,
                                        ranges: ranges.clone(),
                                    },
                                    MatchTest::Header { name, op } => TestRt::Header {
                                        name: name.clone(),
                                        op: match op {
                                            HeaderOp::Present => HeaderOpRt::Present,
                                            HeaderOp::Absent => HeaderOpRt::Absent,
                                            HeaderOp::Equals(v) => HeaderOpRt::Equals(v.clone()),
                                            HeaderOp::NotEquals(v) => {
                                                HeaderOpRt::NotEquals(v.clone())
                                            }
                                            HeaderOp::Matches(p) => HeaderOpRt::Matches(regex(p)?),
                                            HeaderOp::NotMatches(p) => {
                                                HeaderOpRt::NotMatches(regex(p)?)
                                            }
                                        },
                                    },
                                    MatchTest::Body { negate, regex } => TestRt::Body {
                                        negate: *negate,
                                        re: BytesRegex::new(regex).map_err(|e| {
                                            BuildError::Regex(regex.clone(), e.to_string())
                                        })?,
                                    },
                                })
                            })
                            .collect::<Result<_, BuildError>>()?,
                    ),
                };
                (
                    ProbeKind::Http {
                        request: bytes,
                        expect,
                    },
                    what,
                )
            }
        };
        let port = c.port.map(|p| format!(" port={p}")).unwrap_or_default();
        let tls_probe = tls.is_some();
        let flags = match (c.mandatory, c.persistent) {
            (true, true) => " mandatory persistent",
            (true, false) => " mandatory",
            _ => "",
        };
        Ok(CheckRt {
            interval: c.interval,
            jitter: c.jitter,
            fails: c.fails.max(1),
            passes: c.passes.max(1),
            connect_timeout: c.connect_timeout,
            read_timeout: c.read_timeout,
            port: c.port,
            kind,
            mandatory: c.mandatory,
            persistent: c.persistent,
            tls,
            describe: format!(
                "{what}{} every {}ms fails={} passes={}{port}{flags}",
                if tls_probe { " (ssl)" } else { "" },
                c.interval.as_millis(),
                c.fails,
                c.passes
            ),
        })
    }

    /// The probe `passive_health confirm` uses in a group without active checks: a TCP
    /// connect, one pass brings the peer back, re-probed every `interval`.
    pub fn tcp_confirm(interval: Duration) -> CheckRt {
        CheckRt {
            interval,
            jitter: Duration::ZERO,
            fails: 1,
            passes: 1,
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(2),
            port: None,
            kind: ProbeKind::Tcp,
            mandatory: false,
            persistent: false,
            describe: format!("tcp connect every {}ms (confirm)", interval.as_millis()),
            tls: None,
        }
    }
}

/// The TLS of the probes of `c` (the location's `proxy_ssl_*` when its `proxy_pass` is
/// `https://`), sharing the rustls settings of the locations that write the same ones.
pub fn check_tls(
    c: &ActiveCheck,
    proxy_host: &str,
    cache: &mut TlsCache,
) -> Result<Option<Handshake>, BuildError> {
    let Some(p) = &c.tls else {
        return Ok(None);
    };
    Ok(Some(cache.location(p)?.probe_handshake(proxy_host)))
}
