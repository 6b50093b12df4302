//! Strings with variables (`"$host:$server_port"`), split at load time into literals and
//! [`Variable`]s with nginx's rules (`ngx_http_script_compile`): `$name` or `${name}`, names of
//! `[A-Za-z0-9_]`, case-insensitive; an unknown name is an error (`unknown "foo" variable`).

use crate::model::{ProxyProtocolVar, SslVar, Template, TemplatePart, Variable};

/// Variables known by their whole (lower-cased) name.
const NAMED: &[(&str, Variable)] = &[
    ("host", Variable::Host),
    ("remote_addr", Variable::RemoteAddr),
    ("remote_port", Variable::RemotePort),
    ("remote_user", Variable::RemoteUser),
    ("server_addr", Variable::ServerAddr),
    ("server_port", Variable::ServerPort),
    ("server_name", Variable::ServerName),
    ("server_protocol", Variable::ServerProtocol),
    ("scheme", Variable::Scheme),
    ("request_method", Variable::RequestMethod),
    ("request_uri", Variable::RequestUri),
    ("uri", Variable::Uri),
    ("document_uri", Variable::Uri),
    ("args", Variable::Args),
    ("query_string", Variable::Args),
    ("is_args", Variable::IsArgs),
    ("request", Variable::Request),
    ("status", Variable::Status),
    ("body_bytes_sent", Variable::BodyBytesSent),
    ("bytes_sent", Variable::BytesSent),
    ("limit_rate", Variable::LimitRate),
    ("limit_req_status", Variable::LimitReqStatus),
    ("limit_conn_status", Variable::LimitConnStatus),
    ("request_length", Variable::RequestLength),
    ("request_time", Variable::RequestTime),
    ("time_local", Variable::TimeLocal),
    ("time_iso8601", Variable::TimeIso8601),
    ("msec", Variable::Msec),
    ("pid", Variable::Pid),
    ("connection", Variable::ConnectionId),
    ("connection_requests", Variable::ConnectionRequests),
    ("proxy_host", Variable::ProxyHost),
    ("proxy_port", Variable::ProxyPort),
    ("proxy_add_x_forwarded_for", Variable::ProxyAddXForwardedFor),
    ("upstream_addr", Variable::UpstreamAddr),
    ("upstream_status", Variable::UpstreamStatus),
    ("upstream_response_time", Variable::UpstreamResponseTime),
    ("upstream_connect_time", Variable::UpstreamConnectTime),
    ("upstream_header_time", Variable::UpstreamHeaderTime),
    ("https", Variable::Https),
    ("ssl_server_name", Variable::SslServerName),
    ("ssl_protocol", Variable::SslProtocol),
    ("ssl_cipher", Variable::SslCipher),
    ("ssl_session_reused", Variable::SslSessionReused),
    ("ssl_client_verify", Variable::SslClientVerify),
    ("request_body", Variable::RequestBody),
    ("request_body_file", Variable::RequestBodyFile),
    ("content_length", Variable::ContentLength),
    ("content_type", Variable::ContentType),
    ("connection_time", Variable::ConnectionTime),
    ("connections_active", Variable::ConnectionsActive),
    ("connections_reading", Variable::ConnectionsReading),
    ("connections_writing", Variable::ConnectionsWriting),
    ("connections_waiting", Variable::ConnectionsWaiting),
    ("upstream_response_length", Variable::UpstreamResponseLength),
    ("upstream_bytes_received", Variable::UpstreamBytesReceived),
    ("upstream_bytes_sent", Variable::UpstreamBytesSent),
    ("request_id", Variable::RequestId),
    ("hostname", Variable::Hostname),
    ("binary_remote_addr", Variable::BinaryRemoteAddr),
    (
        "proxy_protocol_addr",
        Variable::ProxyProtocol(ProxyProtocolVar::Addr),
    ),
    (
        "proxy_protocol_port",
        Variable::ProxyProtocol(ProxyProtocolVar::Port),
    ),
    (
        "proxy_protocol_server_addr",
        Variable::ProxyProtocol(ProxyProtocolVar::ServerAddr),
    ),
    (
        "proxy_protocol_server_port",
        Variable::ProxyProtocol(ProxyProtocolVar::ServerPort),
    ),
    ("realip_remote_addr", Variable::RealipRemoteAddr),
    ("realip_remote_port", Variable::RealipRemotePort),
    ("upstream_cache_status", Variable::UpstreamCacheStatus),
    ("ssl_session_id", Variable::Ssl(SslVar::SessionId)),
    ("ssl_curve", Variable::Ssl(SslVar::Curve)),
    ("ssl_curves", Variable::Ssl(SslVar::Curves)),
    ("ssl_client_cert", Variable::Ssl(SslVar::ClientCert)),
    ("ssl_client_raw_cert", Variable::Ssl(SslVar::ClientRawCert)),
    (
        "ssl_client_escaped_cert",
        Variable::Ssl(SslVar::ClientEscapedCert),
    ),
    ("ssl_client_s_dn", Variable::Ssl(SslVar::ClientSDn)),
    ("ssl_client_i_dn", Variable::Ssl(SslVar::ClientIDn)),
    ("ssl_ciphers", Variable::Ssl(SslVar::Ciphers)),
    (
        "ssl_client_s_dn_legacy",
        Variable::Ssl(SslVar::ClientSDnLegacy),
    ),
    (
        "ssl_client_i_dn_legacy",
        Variable::Ssl(SslVar::ClientIDnLegacy),
    ),
    ("ssl_client_serial", Variable::Ssl(SslVar::ClientSerial)),
    (
        "ssl_client_fingerprint",
        Variable::Ssl(SslVar::ClientFingerprint),
    ),
    ("ssl_client_v_start", Variable::Ssl(SslVar::ClientVStart)),
    ("ssl_client_v_end", Variable::Ssl(SslVar::ClientVEnd)),
    ("ssl_client_v_remain", Variable::Ssl(SslVar::ClientVRemain)),
];

/// Variable families known by a prefix; the rest of the name is the header, argument or
/// cookie name.
type MakeVariable = fn(String) -> Variable;

const PREFIXED: &[(&str, MakeVariable)] = &[
    ("http_", Variable::Http),
    ("sent_http_", Variable::SentHttp),
    ("sent_trailer_", Variable::SentTrailer),
    ("upstream_http_", Variable::UpstreamHttp),
    ("upstream_cookie_", Variable::UpstreamCookie),
    ("cookie_", Variable::Cookie),
    ("arg_", Variable::Arg),
];

std::thread_local! {
    /// The variables `map` and `split_clients` blocks define in the `http` block being read
    /// (its first pass registers them), with what each means.
    static CUSTOM: std::cell::RefCell<Vec<(String, Variable)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

std::thread_local! {
    /// Whether a template parsed since the last [`take_captures_used`] uses `$1`..`$9`.
    static CAPTURES_USED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether templates parsed since the last call use regex captures; resets the flag.
pub(crate) fn take_captures_used() -> bool {
    CAPTURES_USED.with(|c| c.replace(false))
}

/// Variables whose values cost something to keep on every request, so requests keep them
/// only when some template reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uses {
    /// `$request_body`: the body is kept for the logs and response headers.
    pub request_body: bool,
    /// `$sent_http_*`, `$upstream_http_*`, `$upstream_cookie_*`: the response heads are
    /// kept for the logs.
    pub response_heads: bool,
    /// `$request_id`: each request draws one.
    pub request_id: bool,
    /// `$request_body_file`: a body longer than `client_body_buffer_size` goes to a file.
    pub request_body_file: bool,
}

std::thread_local! {
    /// What templates parsed since the last [`take_uses`] read.
    static USES: std::cell::Cell<Uses> = const {
        std::cell::Cell::new(Uses {
            request_body: false,
            response_heads: false,
            request_id: false,
            request_body_file: false,
        })
    };
}

/// What templates parsed since the last call use; resets it.
pub(crate) fn take_uses() -> Uses {
    USES.with(|u| u.replace(Uses::default()))
}

/// Notes a variable that [`Uses`] tracks.
fn note_use(var: &Variable) {
    USES.with(|u| {
        let mut now = u.get();
        match var {
            Variable::RequestBody => now.request_body = true,
            Variable::RequestId => now.request_id = true,
            Variable::RequestBodyFile => now.request_body_file = true,
            Variable::SentHttp(_) | Variable::UpstreamHttp(_) | Variable::UpstreamCookie(_) => {
                now.response_heads = true
            }
            _ => return,
        }
        u.set(now);
    });
}

/// Makes the variables `vars` known to templates until the guard is dropped.
pub(crate) fn with_custom(vars: Vec<(String, Variable)>) -> impl Drop {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CUSTOM.with(|m| m.borrow_mut().clear());
        }
    }
    CUSTOM.with(|m| *m.borrow_mut() = vars);
    Reset
}

/// Whether nginx has a variable of this (lower-case) name built in.
pub(crate) fn builtin(lower: &str) -> bool {
    NAMED.iter().any(|(n, _)| *n == lower)
}

/// The variable a name means, if ringfront knows it. `name` is matched case-insensitively.
pub fn variable(name: &str) -> Option<Variable> {
    let lower = name.to_ascii_lowercase();
    if let Some((_, v)) = NAMED.iter().find(|(n, _)| *n == lower) {
        return Some(v.clone());
    }
    if let Some(tlv) = lower.strip_prefix("proxy_protocol_tlv_") {
        return Some(Variable::ProxyProtocolTlv(proxy_protocol_tlv(tlv)));
    }
    let custom = CUSTOM.with(|m| {
        m.borrow()
            .iter()
            .find(|(n, _)| *n == lower)
            .map(|(_, v)| v.clone())
    });
    if custom.is_some() {
        return custom;
    }
    // An empty rest is a name too (`$arg_`): it finds nothing, as in nginx.
    PREFIXED.iter().find_map(|(prefix, make)| {
        let rest = lower.strip_prefix(prefix)?;
        Some(make(rest.to_string()))
    })
}

/// What `$proxy_protocol_tlv_NAME` names, as nginx 1.23.2+: `alpn`, `authority`,
/// `unique_id`, `ssl`, `netns`, `0xHH`; `ssl_version`, `ssl_cn`, `ssl_cipher`, `ssl_sig_alg`,
/// `ssl_key_alg`, `ssl_0xHH` inside the SSL TLV, and `ssl_verify`. nginx accepts any name
/// and finds nothing for one it does not know.
fn proxy_protocol_tlv(name: &str) -> crate::model::ProxyProtocolTlv {
    use crate::model::TlvKind;
    let (in_ssl, rest) = match name.strip_prefix("ssl_") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let named: &[(&str, u64)] = if in_ssl {
        &[
            ("version", 0x21),
            ("cn", 0x22),
            ("cipher", 0x23),
            ("sig_alg", 0x24),
            ("key_alg", 0x25),
        ]
    } else {
        &[
            ("alpn", 0x01),
            ("authority", 0x02),
            ("unique_id", 0x05),
            ("ssl", 0x20),
            ("netns", 0x30),
        ]
    };
    let kind = if in_ssl && rest == "verify" {
        TlvKind::Verify
    } else if let Some(hex) = rest.strip_prefix("0x") {
        match u64::from_str_radix(hex, 16) {
            Ok(t) if !hex.starts_with('+') => TlvKind::Type(t),
            _ => TlvKind::Unknown,
        }
    } else {
        named
            .iter()
            .find(|(n, _)| *n == rest)
            .map_or(TlvKind::Unknown, |(_, t)| TlvKind::Type(*t))
    };
    crate::model::ProxyProtocolTlv { in_ssl, kind }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Splits `text` into literals and variables; the error is nginx's message.
pub fn parse_template(text: &str) -> Result<Template, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        literal.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let bracket = after.starts_with('{');
        let body = if bracket { &after[1..] } else { after };
        let len = body.bytes().take_while(|&b| is_name_byte(b)).count();
        let name = &body[..len];
        let mut consumed = len + usize::from(bracket);
        if bracket {
            if !body[len..].starts_with('}') {
                return Err(format!(
                    "the closing bracket in \"{name}\" variable is missing"
                ));
            }
            consumed += 1;
        }
        // `$1`..`$9`: a regex capture, one digit only (`$12` is `$1` then "2"), as nginx's
        // `ngx_http_script_compile`.
        if let Some(n @ b'1'..=b'9') = (!bracket).then(|| after.bytes().next()).flatten() {
            if !literal.is_empty() {
                parts.push(TemplatePart::Literal(std::mem::take(&mut literal)));
            }
            parts.push(TemplatePart::Var(Variable::Capture(n - b'0')));
            CAPTURES_USED.with(|c| c.set(true));
            rest = &after[1..];
            continue;
        }
        if name.is_empty() {
            return Err("invalid variable name".to_string());
        }
        let var = variable(name)
            .ok_or_else(|| format!("unknown \"{}\" variable", name.to_ascii_lowercase()))?;
        note_use(&var);
        if !literal.is_empty() {
            parts.push(TemplatePart::Literal(std::mem::take(&mut literal)));
        }
        parts.push(TemplatePart::Var(var));
        rest = &after[consumed..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(TemplatePart::Literal(literal));
    }
    Ok(Template { parts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use TemplatePart::{Literal, Var};

    fn parts(text: &str) -> Vec<TemplatePart> {
        parse_template(text).expect("parses").parts
    }

    #[test]
    fn proxy_protocol_tlv_names_as_nginx_reads_them() {
        use crate::model::{ProxyProtocolTlv as T, TlvKind::*};
        let tlv = |name: &str| match variable(&format!("proxy_protocol_tlv_{name}")) {
            Some(Variable::ProxyProtocolTlv(t)) => t,
            other => panic!("{name}: {other:?}"),
        };
        let top = |kind| T {
            in_ssl: false,
            kind,
        };
        let ssl = |kind| T { in_ssl: true, kind };
        assert_eq!(tlv("alpn"), top(Type(1)));
        assert_eq!(tlv("ssl"), top(Type(0x20)));
        assert_eq!(tlv("0x000ae"), top(Type(0xae)));
        assert_eq!(tlv("0x3"), top(Type(3)));
        assert_eq!(tlv("ssl_cn"), ssl(Type(0x22)));
        assert_eq!(tlv("ssl_0x21"), ssl(Type(0x21)));
        assert_eq!(tlv("ssl_verify"), ssl(Verify));
        assert_eq!(tlv("nope"), top(Unknown));
        assert_eq!(tlv("0x"), top(Unknown));
        assert_eq!(tlv("0xzz"), top(Unknown));
        assert_eq!(tlv("ssl_alpn"), ssl(Unknown));
    }

    #[test]
    fn literals_and_variables() {
        assert_eq!(parts(""), vec![]);
        assert_eq!(parts("plain"), vec![Literal("plain".into())]);
        assert_eq!(
            parts("$host:$server_port"),
            vec![
                Var(Variable::Host),
                Literal(":".into()),
                Var(Variable::ServerPort)
            ]
        );
        assert_eq!(
            parts("${host}x"),
            vec![Var(Variable::Host), Literal("x".into())]
        );
        assert_eq!(parts("$HOST"), vec![Var(Variable::Host)]);
        assert_eq!(
            parts("a-$uri-b"),
            vec![
                Literal("a-".into()),
                Var(Variable::Uri),
                Literal("-b".into())
            ]
        );
    }

    #[test]
    fn prefixed_families() {
        assert_eq!(
            parts("$http_x_user"),
            vec![Var(Variable::Http("x_user".into()))]
        );
        assert_eq!(
            parts("$HTTP_X_User"),
            vec![Var(Variable::Http("x_user".into()))]
        );
        assert_eq!(parts("$arg_foo"), vec![Var(Variable::Arg("foo".into()))]);
        assert_eq!(
            parts("$cookie_sid"),
            vec![Var(Variable::Cookie("sid".into()))]
        );
        assert_eq!(
            parts("$sent_http_x"),
            vec![Var(Variable::SentHttp("x".into()))]
        );
        assert_eq!(
            parts("$upstream_http_x"),
            vec![Var(Variable::UpstreamHttp("x".into()))]
        );
        assert_eq!(
            parts("$http_referer"),
            vec![Var(Variable::Http("referer".into()))]
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse_template("$foo").unwrap_err(),
            "unknown \"foo\" variable"
        );
        assert_eq!(parts("$http_"), vec![Var(Variable::Http(String::new()))]);
        assert_eq!(
            parse_template("$http").unwrap_err(),
            "unknown \"http\" variable"
        );
        assert_eq!(
            parse_template("a $ b").unwrap_err(),
            "invalid variable name"
        );
        assert_eq!(parse_template("x$").unwrap_err(), "invalid variable name");
        assert_eq!(
            parse_template("${host").unwrap_err(),
            "the closing bracket in \"host\" variable is missing"
        );
        assert_eq!(parts("$1"), vec![Var(Variable::Capture(1))]);
        assert_eq!(
            parts("/a$12"),
            vec![
                Literal("/a".into()),
                Var(Variable::Capture(1)),
                Literal("2".into())
            ]
        );
        assert!(parse_template("${é}").is_err());
    }
}
