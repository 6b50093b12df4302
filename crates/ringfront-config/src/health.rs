//! Active health checks in both syntaxes, and the pages that show them:
//!
//! - nginx Plus: `match NAME { ... }` (http), `health_check [params]` (location), `api
//!   [write=off]` (location);
//! - Tengine's `ngx_http_upstream_check_module`: `check ...`, `check_http_send`,
//!   `check_http_expect_alive`, `check_keepalive_requests` (upstream), `check_status
//!   [FORMAT]` (location).
//!
//! Both are normalised to [`ActiveCheck`]. A `health_check` is only read here; it becomes an
//! `ActiveCheck` of its group when `proxy_pass` targets and `match` names are resolved, once
//! the whole http block is read.

use std::time::Duration;

use crate::error::ConfigError;
use crate::model::{
    ActiveCheck, Expect, HeaderOp, HttpProbe, Match, MatchTest, Origin, Probe, StatusFormat,
};
use crate::tree::Directive;
use crate::units::{parse_number, parse_time_mode, TimeMode};
use crate::values::{check_regex, directive_err, err, number, set_once};

/// nginx Plus `health_check` defaults.
const HC_INTERVAL: Duration = Duration::from_secs(5);

/// Tengine `check` defaults.
const CHECK_INTERVAL: Duration = Duration::from_millis(30_000);
const CHECK_TIMEOUT: Duration = Duration::from_millis(1000);
const CHECK_RISE: u32 = 2;
const CHECK_FALL: u32 = 5;
/// `check_http_send` default.
const CHECK_SEND: &[u8] = b"GET / HTTP/1.0\r\n\r\n";
/// `check_http_expect_alive` default: 2xx and 3xx (bit n = n xx).
const CHECK_ALIVE: u8 = (1 << 2) | (1 << 3);

/// Parameters nginx Plus documents that ringfront does not implement yet.
const HC_NOT_YET: &[&str] = &["grpc_service", "grpc_status", "keepalive_time"];

/// Tengine probe types ringfront does not implement yet.
const CHECK_TYPES_NOT_YET: &[&str] = &["ssl_hello", "mysql", "ajp", "fastcgi"];

// ---------------------------------------------------------------------------------------
// match NAME { ... }

/// Reads a `match NAME { ... }` block. Its lines are tests, not directives of the table:
/// `status`, `header`, `body` (and `require`, refused).
pub(crate) fn match_block(d: &Directive) -> Result<Match, ConfigError> {
    let mut tests = Vec::new();
    for t in d.children() {
        if t.block.is_some() {
            return Err(err(
                t,
                format!("directive \"{}\" is not terminated by \";\"", t.name),
            ));
        }
        let test = match t.name.as_str() {
            "status" => status_test(t)?,
            "header" => header_test(t)?,
            "body" => body_test(t)?,
            "require" => return Err(err(t, "\"require\" is not supported yet")),
            other => return Err(err(t, format!("unknown directive \"{other}\""))),
        };
        tests.push(test);
    }
    Ok(Match {
        name: d.arg(0).to_string(),
        tests,
        origin: d.origin.clone(),
    })
}

fn arg_count_error(t: &Directive) -> ConfigError {
    err(
        t,
        format!("invalid number of arguments in \"{}\" directive", t.name),
    )
}

/// A status code of a `match` test: 100 to 599.
fn status_code(t: &Directive, text: &str, whole: &str) -> Result<u16, ConfigError> {
    parse_number(text)
        .filter(|n| (100..=599).contains(n))
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| err(t, format!("invalid status \"{whole}\"")))
}

/// `status [!] CODE|LO-HI ...`.
fn status_test(t: &Directive) -> Result<MatchTest, ConfigError> {
    let (negate, codes) = match t.args.split_first() {
        Some((first, rest)) if first == "!" => (true, rest),
        _ => (false, &t.args[..]),
    };
    if codes.is_empty() {
        return Err(arg_count_error(t));
    }
    let mut ranges = Vec::with_capacity(codes.len());
    for text in codes {
        let range = match text.split_once('-') {
            Some((lo, hi)) => {
                let lo = status_code(t, lo, text)?;
                let hi = status_code(t, hi, text)?;
                if lo > hi {
                    return Err(err(t, format!("invalid status \"{text}\"")));
                }
                (lo, hi)
            }
            None => {
                let code = status_code(t, text, text)?;
                (code, code)
            }
        };
        ranges.push(range);
    }
    Ok(MatchTest::Status { negate, ranges })
}

/// `header NAME;`, `header ! NAME;`, `header NAME =|!=|~|!~ VALUE;`.
fn header_test(t: &Directive) -> Result<MatchTest, ConfigError> {
    let (name, op) = match t.args.as_slice() {
        [name] if name != "!" => (name, HeaderOp::Present),
        [bang, name] if bang == "!" => (name, HeaderOp::Absent),
        [name, op, value] => {
            let value = value.clone();
            let op = match op.as_str() {
                "=" => HeaderOp::Equals(value),
                "!=" => HeaderOp::NotEquals(value),
                "~" => HeaderOp::Matches(check_regex(t, &value, false)?),
                "!~" => HeaderOp::NotMatches(check_regex(t, &value, false)?),
                other => return Err(err(t, format!("invalid parameter \"{other}\""))),
            };
            (name, op)
        }
        [_, other] => return Err(err(t, format!("invalid parameter \"{other}\""))),
        _ => return Err(arg_count_error(t)),
    };
    if name.is_empty() || name == "!" {
        return Err(err(t, format!("invalid parameter \"{name}\"")));
    }
    Ok(MatchTest::Header {
        name: name.clone(),
        op,
    })
}

/// `body ~ RE;` / `body !~ RE;`.
fn body_test(t: &Directive) -> Result<MatchTest, ConfigError> {
    let [op, regex] = t.args.as_slice() else {
        return Err(arg_count_error(t));
    };
    let negate = match op.as_str() {
        "~" => false,
        "!~" => true,
        other => return Err(err(t, format!("invalid parameter \"{other}\""))),
    };
    let regex = check_regex(t, regex, false)?;
    Ok(MatchTest::Body { negate, regex })
}

// ---------------------------------------------------------------------------------------
// health_check [params] (nginx Plus)

/// A `health_check` line as written, before its group and `match` are known.
#[derive(Debug, Clone)]
pub(crate) struct HealthCheckRaw {
    pub interval: Duration,
    pub jitter: Duration,
    pub fails: u32,
    pub passes: u32,
    pub uri: String,
    pub match_name: Option<String>,
    pub port: Option<u16>,
    pub mandatory: bool,
    pub persistent: bool,
    pub origin: Origin,
}

impl HealthCheckRaw {
    /// The check for a group, with the location's proxy timeouts and the resolved `match`.
    pub(crate) fn to_check(
        &self,
        expect: Expect,
        connect_timeout: Duration,
        read_timeout: Duration,
    ) -> ActiveCheck {
        ActiveCheck {
            interval: self.interval,
            jitter: self.jitter,
            fails: self.fails,
            passes: self.passes,
            connect_timeout,
            read_timeout,
            port: self.port,
            probe: Probe::Http {
                request: HttpProbe::Uri(self.uri.clone()),
                expect,
            },
            mandatory: self.mandatory,
            persistent: self.persistent,
            tls: None,
            origin: self.origin.clone(),
        }
    }
}

/// A count of at least 1 (`fails=`, `passes=`, Tengine `rise=`, `fall=`).
fn count(v: &str) -> Option<u32> {
    parse_number(v)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n >= 1)
}

/// A port 1..=65535.
fn port(v: &str) -> Option<u16> {
    parse_number(v)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|&n| n >= 1)
}

/// A probe URI: not empty, no spaces or control characters (it is sent in a request line).
fn probe_uri(v: &str) -> Option<String> {
    let ok = !v.is_empty() && v.bytes().all(|b| b > b' ' && b != 0x7f);
    ok.then(|| v.to_string())
}

/// `health_check [interval=T] [jitter=T] [fails=N] [passes=N] [uri=URI] [match=NAME]
/// [port=N] [mandatory [persistent]]`.
pub(crate) fn health_check(d: &Directive) -> Result<HealthCheckRaw, ConfigError> {
    let mut hc = HealthCheckRaw {
        interval: HC_INTERVAL,
        jitter: Duration::ZERO,
        fails: 1,
        passes: 1,
        uri: "/".to_string(),
        match_name: None,
        port: None,
        mandatory: false,
        persistent: false,
        origin: d.origin.clone(),
    };
    for param in &d.args {
        let invalid = || err(d, format!("invalid parameter \"{param}\""));
        let (key, value) = match param.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (param.as_str(), None),
        };
        let time = |v: Option<&str>| v.and_then(|v| parse_time_mode(v, TimeMode::Msec));
        match (key, value) {
            ("interval", v) => {
                hc.interval = time(v).filter(|t| !t.is_zero()).ok_or_else(invalid)?;
            }
            ("jitter", v) => hc.jitter = time(v).ok_or_else(invalid)?,
            ("fails", v) => hc.fails = v.and_then(count).ok_or_else(invalid)?,
            ("passes", v) => hc.passes = v.and_then(count).ok_or_else(invalid)?,
            ("uri", v) => hc.uri = v.and_then(probe_uri).ok_or_else(invalid)?,
            ("match", Some(v)) if !v.is_empty() => hc.match_name = Some(v.to_string()),
            ("port", v) => hc.port = Some(v.and_then(port).ok_or_else(invalid)?),
            ("mandatory", None) => hc.mandatory = true,
            ("persistent", None) => hc.persistent = true,
            ("type", Some("grpc")) => {
                return Err(err(d, "\"type=grpc\" parameter is not supported yet"));
            }
            (k, Some(_)) if HC_NOT_YET.contains(&k) => {
                return Err(err(d, format!("\"{k}\" parameter is not supported yet")));
            }
            _ => return Err(invalid()),
        }
    }
    if hc.persistent && !hc.mandatory {
        return Err(err(d, "\"persistent\" parameter requires \"mandatory\""));
    }
    Ok(hc)
}

// ---------------------------------------------------------------------------------------
// Tengine: check, check_http_send, check_http_expect_alive, check_keepalive_requests

/// What an upstream block wrote of Tengine's check directives.
#[derive(Debug, Default)]
pub(crate) struct TengineRaw {
    check: Option<CheckLine>,
    send: Option<Vec<u8>>,
    alive: Option<u8>,
    keepalive_requests: Option<u64>,
    /// The first `check_http_send` / `check_http_expect_alive`, which need `type=http`.
    first_http_only: Option<(String, Origin)>,
}

#[derive(Debug)]
struct CheckLine {
    interval: Duration,
    timeout: Duration,
    rise: u32,
    fall: u32,
    http: bool,
    default_down: bool,
    port: Option<u16>,
    origin: Origin,
}

/// Tengine's milliseconds: a plain number is milliseconds (`interval=3000`); ringfront also
/// takes an nginx time with a unit (`3s`, `500ms`). Zero is refused, as Tengine does.
fn tengine_msec(v: &str) -> Option<Duration> {
    let t = match parse_number(v) {
        Some(ms) => Duration::from_millis(ms),
        None => parse_time_mode(v, TimeMode::Msec)?,
    };
    (!t.is_zero()).then_some(t)
}

impl TengineRaw {
    /// Reads `d` if it is one of Tengine's upstream directives; `Ok(false)` otherwise.
    pub(crate) fn apply(&mut self, d: &Directive) -> Result<bool, ConfigError> {
        match d.name.as_str() {
            "check" => {
                let line = check_line(d)?;
                set_once(&mut self.check, line, d)?;
            }
            "check_http_send" => {
                let bytes = d.arg(0).as_bytes().to_vec();
                if bytes.is_empty() {
                    return Err(directive_err(d, "invalid value"));
                }
                set_once(&mut self.send, bytes, d)?;
                self.note_http_only(d);
            }
            "check_http_expect_alive" => {
                let mut mask = 0u8;
                for word in &d.args {
                    let bit = match word.to_ascii_lowercase().as_str() {
                        "http_2xx" => 2,
                        "http_3xx" => 3,
                        "http_4xx" => 4,
                        "http_5xx" => 5,
                        _ => return Err(err(d, format!("invalid value \"{word}\""))),
                    };
                    mask |= 1 << bit;
                }
                set_once(&mut self.alive, mask, d)?;
                self.note_http_only(d);
            }
            "check_keepalive_requests" => {
                let n: u64 = number(d, d.arg(0))?;
                if n != 1 {
                    return Err(err(
                        d,
                        "\"check_keepalive_requests\" other than 1 is not supported yet",
                    ));
                }
                set_once(&mut self.keepalive_requests, n, d)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn note_http_only(&mut self, d: &Directive) {
        if self.first_http_only.is_none() {
            self.first_http_only = Some((d.name.clone(), d.origin.clone()));
        }
    }

    /// The group's Tengine check, once the whole block is read.
    pub(crate) fn finish(self) -> Result<Option<ActiveCheck>, ConfigError> {
        let http = self.check.as_ref().is_some_and(|c| c.http);
        if let (false, Some((name, origin))) = (http, &self.first_http_only) {
            return Err(ConfigError::at(
                format!("\"{name}\" requires \"check ... type=http\" in the same upstream"),
                origin,
            ));
        }
        let Some(c) = self.check else {
            return Ok(None);
        };
        let probe = if c.http {
            Probe::Http {
                request: HttpProbe::Raw(self.send.unwrap_or_else(|| CHECK_SEND.to_vec())),
                expect: Expect::Classes(self.alive.unwrap_or(CHECK_ALIVE)),
            }
        } else {
            Probe::Tcp
        };
        Ok(Some(ActiveCheck {
            interval: c.interval,
            jitter: Duration::ZERO,
            fails: c.fall,
            passes: c.rise,
            connect_timeout: c.timeout,
            read_timeout: c.timeout,
            port: c.port,
            probe,
            mandatory: c.default_down,
            persistent: false,
            tls: None,
            origin: c.origin,
        }))
    }
}

/// `check interval=MS [fall=N] [rise=N] [timeout=MS] [default_down=true|false]
/// [type=tcp|http] [port=N]`.
fn check_line(d: &Directive) -> Result<CheckLine, ConfigError> {
    let mut c = CheckLine {
        interval: CHECK_INTERVAL,
        timeout: CHECK_TIMEOUT,
        rise: CHECK_RISE,
        fall: CHECK_FALL,
        http: false,
        default_down: true,
        port: None,
        origin: d.origin.clone(),
    };
    for param in &d.args {
        let invalid = || err(d, format!("invalid parameter \"{param}\""));
        let Some((key, v)) = param.split_once('=') else {
            return Err(invalid());
        };
        match key {
            "interval" => c.interval = tengine_msec(v).ok_or_else(invalid)?,
            "timeout" => c.timeout = tengine_msec(v).ok_or_else(invalid)?,
            "rise" => c.rise = count(v).ok_or_else(invalid)?,
            "fall" => c.fall = count(v).ok_or_else(invalid)?,
            "port" => c.port = Some(port(v).ok_or_else(invalid)?),
            "default_down" => {
                c.default_down = match v.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(err(
                            d,
                            format!("invalid value \"{param}\", it must be \"true\" or \"false\""),
                        ));
                    }
                };
            }
            "type" => {
                c.http = match v {
                    "tcp" => false,
                    "http" => true,
                    t if CHECK_TYPES_NOT_YET.contains(&t) => {
                        return Err(err(d, format!("\"type={t}\" is not supported yet")));
                    }
                    _ => return Err(invalid()),
                };
            }
            "unique" => return Err(err(d, "\"unique\" parameter is not supported yet")),
            _ => return Err(invalid()),
        }
    }
    Ok(c)
}

// ---------------------------------------------------------------------------------------
// check_status [FORMAT] (Tengine) and api [write=on|off] (nginx Plus)

/// `check_status [html|csv|json|prometheus]`.
pub(crate) fn check_status(d: &Directive) -> Result<StatusFormat, ConfigError> {
    Ok(match d.args.first().map(String::as_str) {
        None | Some("html") => StatusFormat::Html,
        Some("csv") => StatusFormat::Csv,
        Some("json") => StatusFormat::Json,
        Some("prometheus") => StatusFormat::Prometheus,
        Some(other) => return Err(err(d, format!("invalid check format \"{other}\""))),
    })
}

/// `stub_status [on]`: nginx 1.22 still accepts the old `on` argument (and nothing else).
pub(crate) fn stub_status(d: &Directive) -> Result<(), ConfigError> {
    match d.args.first().map(String::as_str) {
        None => Ok(()),
        Some(a) if a.eq_ignore_ascii_case("on") => Ok(()),
        Some(other) => Err(err(d, format!("invalid parameter \"{other}\""))),
    }
}

/// `api [write=on|off]`: whether the API takes POST, PATCH and DELETE (off by default).
pub(crate) fn api(d: &Directive) -> Result<bool, ConfigError> {
    match d.args.first().map(String::as_str) {
        None | Some("write=off") => Ok(false),
        Some("write=on") => Ok(true),
        Some(other) => Err(err(d, format!("invalid parameter \"{other}\""))),
    }
}
