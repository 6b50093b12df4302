//! The nginx Plus API's server objects for the write methods: a POST or PATCH body (JSON)
//! laid over an [`UpstreamServer`], and a server written back as the API's JSON. Pure: the
//! caller (api_write.rs) finds the server and publishes the change.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ringfront_config::UpstreamServer;
use serde_json::Value;

use super::json::Writer;

/// A refused body: the HTTP status, the error's text and its nginx Plus code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub text: String,
    pub code: &'static str,
}

fn refused(code: &'static str, text: impl Into<String>) -> Refused {
    Refused {
        status: 400,
        text: text.into(),
        code,
    }
}

fn format_error(text: impl Into<String>) -> Refused {
    refused("UpstreamConfFormatError", text)
}

fn invalid(field: &str) -> Refused {
    format_error(format!("invalid \"{field}\" field"))
}

/// A server as a POST starts it: nginx's defaults (weight 1, max_fails 1, fail_timeout 10s).
pub fn fresh() -> UpstreamServer {
    UpstreamServer {
        text: String::new(),
        addrs: Vec::new(),
        unix: None,
        weight: 1,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        backup: false,
        down: false,
        drain: false,
        max_conns: 0,
        slow_start: Duration::ZERO,
        route: None,
        origin: ringfront_config::Origin::default(),
        resolve: None,
    }
}

/// `base` with the fields of `body` (a JSON object) laid over it. A POST (`creating`) must
/// name the server.
pub fn apply(
    base: &UpstreamServer,
    body: &[u8],
    creating: bool,
) -> Result<UpstreamServer, Refused> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| format_error(format!("error while parsing JSON: {e}")))?;
    let Value::Object(fields) = doc else {
        return Err(format_error("the body is not a JSON object"));
    };
    if creating && !fields.contains_key("server") {
        return Err(format_error("missing \"server\" field"));
    }
    let mut s = base.clone();
    for (k, v) in &fields {
        field(&mut s, k, v)?;
    }
    Ok(s)
}

fn field(s: &mut UpstreamServer, k: &str, v: &Value) -> Result<(), Refused> {
    match k {
        "server" => {
            let text = v.as_str().ok_or_else(|| invalid(k))?;
            s.addrs = vec![address(text)?];
            s.text = text.to_string();
        }
        "weight" => {
            s.weight = uint(k, v)?;
            if s.weight == 0 {
                return Err(refused("UpstreamBadWeight", "invalid \"weight\" field"));
            }
        }
        "max_conns" => s.max_conns = uint(k, v)?,
        "max_fails" => s.max_fails = uint(k, v)?,
        "fail_timeout" => s.fail_timeout = time(k, v)?,
        "slow_start" => s.slow_start = time(k, v)?,
        "backup" => s.backup = v.as_bool().ok_or_else(|| invalid(k))?,
        // `down` and `drain` exclude each other: setting one clears the other, as the
        // configuration's last word wins.
        "down" => {
            s.down = v.as_bool().ok_or_else(|| invalid(k))?;
            s.drain &= !s.down;
        }
        "drain" => {
            s.drain = v.as_bool().ok_or_else(|| invalid(k))?;
            s.down &= !s.drain;
        }
        "route" => {
            let r = v
                .as_str()
                .filter(|r| r.len() <= 32)
                .ok_or_else(|| invalid(k))?;
            s.route = (!r.is_empty()).then(|| r.to_string());
        }
        // The id is the path's; nginx Plus accepts it in the body and ignores it.
        "id" => {}
        _ => return Err(format_error(format!("unknown parameter \"{k}\""))),
    }
    Ok(())
}

/// `IP:PORT`, `[IPv6]:PORT` or a bare address (port 80). Names are refused: resolving
/// them would block the worker.
fn address(text: &str) -> Result<SocketAddr, Refused> {
    let bad = || refused("UpstreamBadAddress", format!("invalid server \"{text}\""));
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
    let ip: IpAddr = bare.unwrap_or(text).parse().map_err(|_| bad())?;
    Ok(SocketAddr::new(ip, 80))
}

fn uint(k: &str, v: &Value) -> Result<u32, Refused> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| invalid(k))
}

/// An nginx time as a string (`"10s"`, `"1m"`) or a number of seconds.
fn time(k: &str, v: &Value) -> Result<Duration, Refused> {
    match v {
        Value::Number(n) => n.as_u64().map(Duration::from_secs),
        Value::String(t) => ringfront_config::parse_time(t),
        _ => None,
    }
    .ok_or_else(|| invalid(k))
}

/// One server as the API writes it (`GET .../servers/ID`, and the answers of POST/PATCH).
pub fn conf(out: &mut String, id: usize, s: &UpstreamServer) {
    let mut o = Writer::object(out);
    o.num("id", id as u64);
    o.str("server", &s.text);
    o.num("weight", u64::from(s.weight));
    o.num("max_conns", u64::from(s.max_conns));
    o.num("max_fails", u64::from(s.max_fails));
    o.str("fail_timeout", &format!("{}s", s.fail_timeout.as_secs()));
    o.str("slow_start", &format!("{}s", s.slow_start.as_secs()));
    o.str("route", s.route.as_deref().unwrap_or(""));
    o.bool("backup", s.backup);
    o.bool("down", s.down);
    // nginx Plus writes `drain` only for a draining server.
    if s.drain {
        o.bool("drain", true);
    }
    o.end();
}

/// The servers of a group as a JSON array (the answer of a DELETE).
pub fn list(out: &mut String, servers: &[(usize, UpstreamServer)]) {
    let mut a = Writer::array(out);
    for (id, s) in servers {
        conf(a.item(), *id, s);
    }
    a.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conf_of(s: &UpstreamServer) -> Value {
        let mut out = String::new();
        conf(&mut out, 3, s);
        serde_json::from_str(&out).unwrap()
    }

    #[test]
    fn a_post_body_gives_a_server_with_defaults() {
        let s = apply(&fresh(), br#"{"server":"127.0.0.1:8085","weight":4}"#, true).unwrap();
        assert_eq!(s.addrs, vec!["127.0.0.1:8085".parse().unwrap()]);
        assert_eq!(
            conf_of(&s),
            json!({"id": 3, "server": "127.0.0.1:8085", "weight": 4, "max_conns": 0,
                   "max_fails": 1, "fail_timeout": "10s", "slow_start": "0s", "route": "",
                   "backup": false, "down": false})
        );
        let s = apply(&fresh(), br#"{"server":"[::1]"}"#, true).unwrap();
        assert_eq!(s.addrs, vec!["[::1]:80".parse().unwrap()]);
    }

    #[test]
    fn a_patch_changes_only_its_fields() {
        let base = apply(
            &fresh(),
            br#"{"server":"127.0.0.1:81","max_fails":3}"#,
            true,
        )
        .unwrap();
        let body = br#"{"down":true,"fail_timeout":"1m","slow_start":5,"id":9,"drain":false}"#;
        let s = apply(&base, body, false).unwrap();
        assert!(s.down);
        assert_eq!(s.max_fails, 3);
        assert_eq!(s.fail_timeout, Duration::from_secs(60));
        assert_eq!(s.slow_start, Duration::from_secs(5));
        assert_eq!(s.text, "127.0.0.1:81");
    }

    #[test]
    fn bad_bodies_are_refused_with_nginx_plus_codes() {
        let code = |body: &str, creating| {
            let r = apply(&fresh(), body.as_bytes(), creating).unwrap_err();
            (r.status, r.code, r.text)
        };
        let fmt = "UpstreamConfFormatError";
        assert_eq!(
            code("{}", true),
            (400, fmt, "missing \"server\" field".into())
        );
        assert_eq!(code("[1]", false).1, fmt);
        assert_eq!(code("{", false).1, fmt);
        assert_eq!(
            code(r#"{"wieght":1}"#, false),
            (400, fmt, "unknown parameter \"wieght\"".into())
        );
        assert_eq!(
            code(r#"{"max_fails":-1}"#, false),
            (400, fmt, "invalid \"max_fails\" field".into())
        );
        assert_eq!(code(r#"{"down":"yes"}"#, false).1, fmt);
        assert_eq!(code(r#"{"fail_timeout":"10x"}"#, false).1, fmt);
        assert_eq!(code(r#"{"weight":0}"#, false).1, "UpstreamBadWeight");
        assert_eq!(
            code(r#"{"server":"backend.example:80"}"#, true).1,
            "UpstreamBadAddress"
        );
        assert_eq!(code(r#"{"drain":1}"#, false).1, fmt);
    }

    #[test]
    fn drain_and_down_exclude_each_other() {
        let up = apply(&fresh(), br#"{"server":"127.0.0.1:81"}"#, true).unwrap();
        let drained = apply(&up, br#"{"drain":true}"#, false).unwrap();
        assert!(drained.drain && !drained.down);
        assert_eq!(conf_of(&drained)["drain"], json!(true));
        assert_eq!(
            conf_of(&up).get("drain"),
            None,
            "written only when draining"
        );
        let down = apply(&drained, br#"{"down":true}"#, false).unwrap();
        assert!(down.down && !down.drain);
        let back = apply(&drained, br#"{"drain":false}"#, false).unwrap();
        assert!(!back.drain && !back.down);
    }
}
