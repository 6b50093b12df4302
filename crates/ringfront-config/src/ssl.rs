//! The `ssl_*` directives (nginx's ssl module, read at http and server level) and the
//! `proxy_ssl_*` ones (proxy module, http/server/location), with nginx's checks and
//! messages. What a level wrote is kept as `Option`s and inherited field by field, as
//! nginx's merge does; files are only named here (ringfront-tls reads them).

use std::path::Path;

use crate::error::ConfigError;
use crate::model::{Origin, Template, TemplatePart};
use crate::ssl_model::{
    CertKey, CertKeyTemplate, ClientOcsp, ProxySsl, ServerSsl, SessionCache, SslFile, SslProtocols,
    Stapling, VerifyClient,
};
use crate::tree::Directive;
use crate::units::{parse_number, parse_size};
use crate::values::{err, flag, number, path, sec, set_once, template};

/// A file argument with the directive's place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    file: SslFile,
    /// The path as written (nginx's messages quote it so).
    written: String,
}

/// A `proxy_ssl_certificate(_key)` argument: a file, or (with variables) a template and
/// the folder relative names start from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NamedOrVars {
    named: Named,
    vars: Option<(Template, std::path::PathBuf)>,
}

/// Server-side settings as one level wrote them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SslLevel {
    /// The deprecated `ssl on` (every `listen` of the server speaks TLS).
    pub enable: Option<bool>,
    certificates: Option<Vec<Named>>,
    keys: Option<Vec<Named>>,
    protocols: Option<SslProtocols>,
    ciphers: Option<(String, Origin)>,
    prefer_server_ciphers: Option<bool>,
    session_cache: Option<SessionCache>,
    session_timeout: Option<std::time::Duration>,
    session_tickets: Option<bool>,
    ticket_keys: Option<Vec<SslFile>>,
    dhparam: Option<SslFile>,
    ecdh_curve: Option<(String, Origin)>,
    verify_client: Option<(VerifyClient, Origin)>,
    verify_depth: Option<u32>,
    client_certificate: Option<SslFile>,
    trusted_certificate: Option<SslFile>,
    crl: Option<SslFile>,
    password_file: Option<SslFile>,
    reject_handshake: Option<bool>,
    stapling: Option<bool>,
    stapling_file: Option<SslFile>,
    stapling_responder: Option<String>,
    stapling_verify: Option<bool>,
    ocsp: Option<(OcspMode, Origin)>,
    ocsp_responder: Option<String>,
    ocsp_cache: Option<Option<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OcspMode {
    Off,
    On,
    Leaf,
}

fn ocsp_mode(d: &Directive) -> Result<OcspMode, ConfigError> {
    Ok(match d.arg(0) {
        "off" => OcspMode::Off,
        "on" => OcspMode::On,
        "leaf" => OcspMode::Leaf,
        other => return Err(err(d, format!("invalid value \"{other}\""))),
    })
}

/// `ssl_ocsp_cache off | shared:NAME:SIZE`: the zone's name, `None` for off.
fn ocsp_cache(d: &Directive) -> Result<Option<String>, ConfigError> {
    let v = d.arg(0);
    if v == "off" {
        return Ok(None);
    }
    let invalid = || err(d, format!("invalid OCSP cache \"{v}\""));
    let rest = v
        .strip_prefix("shared:")
        .filter(|r| !r.is_empty())
        .ok_or_else(invalid)?;
    let (name, size) = rest.split_once(':').unwrap_or((rest, ""));
    if name.is_empty() {
        return Err(invalid());
    }
    let size = parse_size(size).ok_or_else(invalid)?;
    if size < 8 * 4096 {
        return Err(err(d, format!("OCSP cache \"{v}\" is too small")));
    }
    Ok(Some(name.to_string()))
}

/// `proxy_ssl_*` as one level wrote them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProxySslLevel {
    verify: Option<(bool, Origin)>,
    verify_depth: Option<u32>,
    trusted_certificate: Option<SslFile>,
    crl: Option<SslFile>,
    password_file: Option<SslFile>,
    server_name: Option<bool>,
    name: Option<crate::model::Template>,
    protocols: Option<SslProtocols>,
    ciphers: Option<(String, Origin)>,
    certificate: Option<NamedOrVars>,
    key: Option<NamedOrVars>,
    session_reuse: Option<bool>,
}

fn pick<T: Clone>(own: &Option<T>, outer: &Option<T>) -> Option<T> {
    own.clone().or_else(|| outer.clone())
}

fn file(prefix: &Path, d: &Directive) -> SslFile {
    SslFile {
        path: path(prefix, d.arg(0)),
        origin: d.origin.clone(),
    }
}

fn named(prefix: &Path, d: &Directive) -> Named {
    Named {
        file: file(prefix, d),
        written: d.arg(0).to_string(),
    }
}

/// `proxy_ssl_certificate(_key)`: with variables, a template evaluated per request.
fn named_or_vars(prefix: &Path, d: &Directive) -> Result<NamedOrVars, ConfigError> {
    let vars = match d.arg(0).contains('$') {
        true => Some((template(d, d.arg(0))?, prefix.to_path_buf())),
        false => None,
    };
    Ok(NamedOrVars {
        named: named(prefix, d),
        vars,
    })
}

/// Variables in server certificate names (nginx 1.15.9) need a handshake-time load; not yet.
fn no_variables(d: &Directive) -> Result<(), ConfigError> {
    if d.arg(0).contains('$') {
        return Err(err(
            d,
            format!("variables in \"{}\" are not supported by ringfront", d.name),
        ));
    }
    Ok(())
}

/// `ssl_protocols` / `proxy_ssl_protocols`: nginx's bitmask words. SSLv2, SSLv3, TLSv1 and
/// TLSv1.1 are accepted (stock configurations list them) and never offered; a list with
/// neither TLSv1.2 nor TLSv1.3 is refused, since ringfront could offer nothing it names.
fn protocols(d: &Directive) -> Result<SslProtocols, ConfigError> {
    let mut p = SslProtocols {
        tls12: false,
        tls13: false,
    };
    for word in &d.args {
        match word.as_str() {
            "SSLv2" | "SSLv3" | "TLSv1" | "TLSv1.1" => {}
            "TLSv1.2" => p.tls12 = true,
            "TLSv1.3" => p.tls13 = true,
            other => return Err(err(d, format!("invalid value \"{other}\""))),
        }
    }
    if !p.tls12 && !p.tls13 {
        return Err(err(
            d,
            format!(
                "\"{}\" names no protocol ringfront offers (TLSv1.2, TLSv1.3)",
                d.name
            ),
        ));
    }
    Ok(p)
}

/// nginx's page size on these machines; a shared cache must hold 8 pages.
const PAGE: u64 = 4096;
/// nginx's `builtin` default and its documented ~4000 sessions per megabyte of `shared`.
const BUILTIN_SESSIONS: usize = 20480;
const SESSIONS_PER_MIB: u64 = 4000;

/// `ssl_session_cache off | none | [builtin[:SIZE]] [shared:NAME:SIZE]`. ringfront keeps one
/// cache shared by every worker either way, sized by the larger of the two.
fn session_cache(d: &Directive) -> Result<SessionCache, ConfigError> {
    let mut sessions: Option<usize> = None;
    let mut off = None;
    for word in &d.args {
        let invalid = || err(d, format!("invalid session cache \"{word}\""));
        match word.as_str() {
            "off" => off = Some(SessionCache::Off),
            "none" => off = Some(SessionCache::None),
            "builtin" => sessions = Some(sessions.unwrap_or(0).max(BUILTIN_SESSIONS)),
            w if w.len() > 8 && w.starts_with("builtin:") => {
                let n = parse_number(&w[8..]).ok_or_else(invalid)?;
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                sessions = Some(sessions.unwrap_or(0).max(n));
            }
            w if w.len() > 7 && w.starts_with("shared:") => {
                let (name, size) = w[7..].split_once(':').ok_or_else(invalid)?;
                if name.is_empty() {
                    return Err(invalid());
                }
                let bytes = parse_size(size).ok_or_else(invalid)?;
                if bytes < 8 * PAGE {
                    return Err(err(d, format!("session cache \"{word}\" is too small")));
                }
                let n = (bytes.saturating_mul(SESSIONS_PER_MIB) >> 20).max(1);
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                sessions = Some(sessions.unwrap_or(0).max(n));
            }
            _ => return Err(invalid()),
        }
    }
    Ok(match (sessions, off) {
        (Some(sessions), _) => SessionCache::Cache { sessions },
        (None, Some(off)) => off,
        (None, None) => SessionCache::None,
    })
}

fn verify_client(d: &Directive) -> Result<VerifyClient, ConfigError> {
    Ok(match d.arg(0) {
        "on" => VerifyClient::On,
        "off" => VerifyClient::Off,
        "optional" => VerifyClient::Optional,
        "optional_no_ca" => VerifyClient::OptionalNoCa,
        other => return Err(err(d, format!("invalid value \"{other}\""))),
    })
}

impl SslLevel {
    /// Reads `d` if it is a server-side `ssl_*` directive; `Ok(false)` if it is not one.
    pub(crate) fn apply(&mut self, d: &Directive, prefix: &Path) -> Result<bool, ConfigError> {
        let arg = d.arg(0);
        match d.name.as_str() {
            "ssl" => set_once(&mut self.enable, flag(d)?, d)?,
            "ssl_certificate" => {
                no_variables(d)?;
                let list = self.certificates.get_or_insert_with(Vec::new);
                list.push(named(prefix, d));
            }
            "ssl_certificate_key" => {
                no_variables(d)?;
                self.keys
                    .get_or_insert_with(Vec::new)
                    .push(named(prefix, d));
            }
            "ssl_protocols" => set_once(&mut self.protocols, protocols(d)?, d)?,
            "ssl_ciphers" => set_once(&mut self.ciphers, (arg.into(), d.origin.clone()), d)?,
            "ssl_prefer_server_ciphers" => set_once(&mut self.prefer_server_ciphers, flag(d)?, d)?,
            "ssl_session_cache" => set_once(&mut self.session_cache, session_cache(d)?, d)?,
            "ssl_session_timeout" => set_once(&mut self.session_timeout, sec(d, arg)?, d)?,
            "ssl_session_tickets" => set_once(&mut self.session_tickets, flag(d)?, d)?,
            "ssl_session_ticket_key" => {
                let keys = self.ticket_keys.get_or_insert_with(Vec::new);
                keys.push(file(prefix, d));
            }
            "ssl_dhparam" => set_once(&mut self.dhparam, file(prefix, d), d)?,
            "ssl_ecdh_curve" => set_once(&mut self.ecdh_curve, (arg.into(), d.origin.clone()), d)?,
            "ssl_verify_client" => {
                let v = (verify_client(d)?, d.origin.clone());
                set_once(&mut self.verify_client, v, d)?
            }
            "ssl_verify_depth" => set_once(&mut self.verify_depth, number(d, arg)?, d)?,
            "ssl_client_certificate" => set_once(&mut self.client_certificate, file(prefix, d), d)?,
            "ssl_trusted_certificate" => {
                set_once(&mut self.trusted_certificate, file(prefix, d), d)?
            }
            "ssl_crl" => set_once(&mut self.crl, file(prefix, d), d)?,
            "ssl_password_file" => set_once(&mut self.password_file, file(prefix, d), d)?,
            "ssl_reject_handshake" => set_once(&mut self.reject_handshake, flag(d)?, d)?,
            "ssl_stapling" => set_once(&mut self.stapling, flag(d)?, d)?,
            "ssl_stapling_file" => set_once(&mut self.stapling_file, file(prefix, d), d)?,
            "ssl_stapling_responder" => set_once(&mut self.stapling_responder, arg.into(), d)?,
            "ssl_stapling_verify" => set_once(&mut self.stapling_verify, flag(d)?, d)?,
            "ssl_ocsp" => set_once(&mut self.ocsp, (ocsp_mode(d)?, d.origin.clone()), d)?,
            "ssl_ocsp_responder" => set_once(&mut self.ocsp_responder, arg.into(), d)?,
            "ssl_ocsp_cache" => set_once(&mut self.ocsp_cache, ocsp_cache(d)?, d)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(crate) fn inherit(&self, outer: &SslLevel) -> SslLevel {
        SslLevel {
            enable: self.enable,
            certificates: pick(&self.certificates, &outer.certificates),
            keys: pick(&self.keys, &outer.keys),
            protocols: pick(&self.protocols, &outer.protocols),
            ciphers: pick(&self.ciphers, &outer.ciphers),
            prefer_server_ciphers: pick(&self.prefer_server_ciphers, &outer.prefer_server_ciphers),
            session_cache: pick(&self.session_cache, &outer.session_cache),
            session_timeout: pick(&self.session_timeout, &outer.session_timeout),
            session_tickets: pick(&self.session_tickets, &outer.session_tickets),
            ticket_keys: pick(&self.ticket_keys, &outer.ticket_keys),
            dhparam: pick(&self.dhparam, &outer.dhparam),
            ecdh_curve: pick(&self.ecdh_curve, &outer.ecdh_curve),
            verify_client: pick(&self.verify_client, &outer.verify_client),
            verify_depth: pick(&self.verify_depth, &outer.verify_depth),
            client_certificate: pick(&self.client_certificate, &outer.client_certificate),
            trusted_certificate: pick(&self.trusted_certificate, &outer.trusted_certificate),
            crl: pick(&self.crl, &outer.crl),
            password_file: pick(&self.password_file, &outer.password_file),
            reject_handshake: pick(&self.reject_handshake, &outer.reject_handshake),
            stapling: pick(&self.stapling, &outer.stapling),
            stapling_file: pick(&self.stapling_file, &outer.stapling_file),
            stapling_responder: pick(&self.stapling_responder, &outer.stapling_responder),
            stapling_verify: pick(&self.stapling_verify, &outer.stapling_verify),
            ocsp: pick(&self.ocsp, &outer.ocsp),
            ocsp_responder: pick(&self.ocsp_responder, &outer.ocsp_responder),
            ocsp_cache: pick(&self.ocsp_cache, &outer.ocsp_cache),
        }
    }

    /// The merged settings with nginx's defaults and merge-time checks.
    pub(crate) fn finish(self) -> Result<ServerSsl, ConfigError> {
        let d = ServerSsl::default();
        let certs = self.certificates.unwrap_or_default();
        let keys = self.keys.unwrap_or_default();
        let mut certificates = Vec::with_capacity(certs.len());
        for (i, cert) in certs.into_iter().enumerate() {
            let Some(key) = keys.get(i) else {
                return Err(ConfigError::at(
                    format!(
                        "no \"ssl_certificate_key\" is defined for certificate \"{}\"",
                        cert.written
                    ),
                    &cert.file.origin,
                ));
            };
            certificates.push(CertKey {
                cert: cert.file,
                key: key.file.clone(),
                passwords: self.password_file.clone(),
            });
        }
        let verify_client = self.verify_client.clone();
        // As nginx, a server with no certificate of its own (and no `ssl_reject_handshake`)
        // has no TLS context to check: its handshakes are the default server's.
        let has_context = !certificates.is_empty() || self.reject_handshake == Some(true);
        if let (Some((v, origin)), true) = (&verify_client, has_context) {
            let needs_ca = matches!(v, VerifyClient::On | VerifyClient::Optional);
            if needs_ca && self.client_certificate.is_none() && self.trusted_certificate.is_none() {
                return Err(ConfigError::at(
                    "no ssl_client_certificate for ssl_verify_client",
                    origin,
                ));
            }
        }
        let ocsp = match &self.ocsp {
            Some((OcspMode::Off, _)) | None => None,
            Some((mode, origin)) => {
                if has_context && matches!(&verify_client, Some((VerifyClient::OptionalNoCa, _))) {
                    return Err(ConfigError::at(
                        "\"ssl_ocsp\" is incompatible with \"ssl_verify_client optional_no_ca\"",
                        origin,
                    ));
                }
                Some(ClientOcsp {
                    leaf_only: *mode == OcspMode::Leaf,
                    responder: self.ocsp_responder.clone(),
                    cache: self.ocsp_cache.clone().flatten(),
                })
            }
        };
        let (ciphers, ciphers_origin) = split(self.ciphers, d.ciphers);
        let (ecdh_curve, ecdh_curve_origin) = split(self.ecdh_curve, d.ecdh_curve);
        Ok(ServerSsl {
            certificates,
            protocols: self.protocols.unwrap_or(d.protocols),
            ciphers,
            ciphers_origin,
            prefer_server_ciphers: self.prefer_server_ciphers.unwrap_or(false),
            session_cache: self.session_cache.unwrap_or(d.session_cache),
            session_timeout: self.session_timeout.unwrap_or(d.session_timeout),
            session_tickets: self.session_tickets.unwrap_or(d.session_tickets),
            ticket_keys: self.ticket_keys.unwrap_or_default(),
            dhparam: self.dhparam,
            ecdh_curve,
            ecdh_curve_origin,
            verify_client: verify_client.map_or(d.verify_client, |(v, _)| v),
            verify_depth: self.verify_depth.unwrap_or(d.verify_depth),
            client_certificate: self.client_certificate,
            trusted_certificate: self.trusted_certificate,
            crl: self.crl,
            reject_handshake: self.reject_handshake.unwrap_or(false),
            stapling: match self.stapling {
                Some(true) => Some(Stapling {
                    file: self.stapling_file,
                    responder: self.stapling_responder,
                    verify: self.stapling_verify.unwrap_or(false),
                }),
                _ => None,
            },
            ocsp,
        })
    }
}

fn split(v: Option<(String, Origin)>, default: String) -> (String, Option<Origin>) {
    match v {
        Some((s, o)) => (s, Some(o)),
        None => (default, None),
    }
}

impl ProxySslLevel {
    /// Reads `d` if it is a `proxy_ssl_*` directive; `Ok(false)` if it is not one.
    pub(crate) fn apply(&mut self, d: &Directive, prefix: &Path) -> Result<bool, ConfigError> {
        let arg = d.arg(0);
        match d.name.as_str() {
            "proxy_ssl_verify" => set_once(&mut self.verify, (flag(d)?, d.origin.clone()), d)?,
            "proxy_ssl_verify_depth" => set_once(&mut self.verify_depth, number(d, arg)?, d)?,
            "proxy_ssl_trusted_certificate" => {
                set_once(&mut self.trusted_certificate, file(prefix, d), d)?
            }
            "proxy_ssl_crl" => set_once(&mut self.crl, file(prefix, d), d)?,
            "proxy_ssl_password_file" => set_once(&mut self.password_file, file(prefix, d), d)?,
            "proxy_ssl_server_name" => set_once(&mut self.server_name, flag(d)?, d)?,
            "proxy_ssl_name" => set_once(&mut self.name, template(d, arg)?, d)?,
            "proxy_ssl_protocols" => set_once(&mut self.protocols, protocols(d)?, d)?,
            "proxy_ssl_ciphers" => set_once(&mut self.ciphers, (arg.into(), d.origin.clone()), d)?,
            "proxy_ssl_certificate" => {
                set_once(&mut self.certificate, named_or_vars(prefix, d)?, d)?
            }
            "proxy_ssl_certificate_key" => set_once(&mut self.key, named_or_vars(prefix, d)?, d)?,
            "proxy_ssl_session_reuse" => set_once(&mut self.session_reuse, flag(d)?, d)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(crate) fn inherit(&self, outer: &ProxySslLevel) -> ProxySslLevel {
        ProxySslLevel {
            verify: pick(&self.verify, &outer.verify),
            verify_depth: pick(&self.verify_depth, &outer.verify_depth),
            trusted_certificate: pick(&self.trusted_certificate, &outer.trusted_certificate),
            crl: pick(&self.crl, &outer.crl),
            password_file: pick(&self.password_file, &outer.password_file),
            server_name: pick(&self.server_name, &outer.server_name),
            name: pick(&self.name, &outer.name),
            protocols: pick(&self.protocols, &outer.protocols),
            ciphers: pick(&self.ciphers, &outer.ciphers),
            certificate: pick(&self.certificate, &outer.certificate),
            key: pick(&self.key, &outer.key),
            session_reuse: pick(&self.session_reuse, &outer.session_reuse),
        }
    }

    /// The merged settings; `tls` (the location's `proxy_pass` is https) turns on nginx's
    /// merge-time checks, which only run for TLS upstreams.
    pub(crate) fn finish(self, tls: bool) -> Result<ProxySsl, ConfigError> {
        let d = ProxySsl::default();
        let mut certificate_vars = None;
        let certificate = match (self.certificate, self.key) {
            (Some(cert), Some(key)) if cert.vars.is_some() || key.vars.is_some() => {
                certificate_vars = Some(CertKeyTemplate {
                    cert: as_template(&cert),
                    key: as_template(&key),
                    prefix: cert.vars.or(key.vars).map(|(_, p)| p).unwrap_or_default(),
                    passwords: self.password_file.clone(),
                });
                None
            }
            (Some(cert), Some(key)) => Some(CertKey {
                cert: cert.named.file,
                key: key.named.file,
                passwords: self.password_file.clone(),
            }),
            (Some(NamedOrVars { named: cert, .. }), None) if tls => {
                return Err(ConfigError::at(
                    format!(
                        "no \"proxy_ssl_certificate_key\" is defined for certificate \"{}\"",
                        cert.written
                    ),
                    &cert.file.origin,
                ));
            }
            _ => None,
        };
        if let Some((true, origin)) = &self.verify {
            if tls && self.trusted_certificate.is_none() {
                return Err(ConfigError::at(
                    "no proxy_ssl_trusted_certificate for proxy_ssl_verify",
                    origin,
                ));
            }
        }
        let (ciphers, ciphers_origin) = split(self.ciphers, d.ciphers);
        Ok(ProxySsl {
            verify: self.verify.is_some_and(|(v, _)| v),
            verify_depth: self.verify_depth.unwrap_or(d.verify_depth),
            trusted_certificate: self.trusted_certificate,
            crl: self.crl,
            server_name: self.server_name.unwrap_or(d.server_name),
            name: self.name,
            protocols: self.protocols.unwrap_or(d.protocols),
            ciphers,
            ciphers_origin,
            certificate,
            certificate_vars,
            session_reuse: self.session_reuse.unwrap_or(d.session_reuse),
        })
    }
}

/// A file name as a template: its own, or the literal path as written.
fn as_template(n: &NamedOrVars) -> Template {
    match &n.vars {
        Some((t, _)) => t.clone(),
        None => Template {
            parts: vec![TemplatePart::Literal(n.named.written.clone())],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Directive;

    fn dir(name: &str, args: &[&str]) -> Directive {
        Directive {
            name: name.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            origin: Origin {
                file: "/t/ringfront.conf".into(),
                line: 7,
            },
            block: None,
            end_line: 7,
        }
    }

    #[test]
    fn proxy_certificates_with_variables_become_templates() {
        let prefix = Path::new("/conf");
        let mut l = ProxySslLevel::default();
        assert!(l
            .apply(&dir("proxy_ssl_certificate", &["$arg_c.crt"]), prefix)
            .unwrap());
        l.apply(&dir("proxy_ssl_certificate_key", &["fixed.key"]), prefix)
            .unwrap();
        let p = l.finish(true).unwrap();
        assert!(p.certificate.is_none());
        let v = p.certificate_vars.unwrap();
        assert_eq!(v.prefix, Path::new("/conf"));
        assert_eq!(v.key.parts, [TemplatePart::Literal("fixed.key".into())]);
        assert!(v.cert.parts.len() == 2, "{:?}", v.cert.parts);
        // Without a key, nginx's message names the certificate as written.
        let mut l = ProxySslLevel::default();
        l.apply(&dir("proxy_ssl_certificate", &["$arg_c"]), prefix)
            .unwrap();
        let e = l.finish(true).unwrap_err().to_string();
        assert!(
            e.contains("no \"proxy_ssl_certificate_key\" is defined for certificate \"$arg_c\""),
            "{e}"
        );
    }

    #[test]
    fn session_cache_words_and_sizes() {
        let c = |args: &[&str]| session_cache(&dir("ssl_session_cache", args));
        assert_eq!(c(&["off"]).unwrap(), SessionCache::Off);
        assert_eq!(c(&["none"]).unwrap(), SessionCache::None);
        assert_eq!(
            c(&["builtin"]).unwrap(),
            SessionCache::Cache { sessions: 20480 }
        );
        assert_eq!(
            c(&["shared:SSL:10m"]).unwrap(),
            SessionCache::Cache { sessions: 40000 }
        );
        assert_eq!(
            c(&["builtin:1000", "shared:SSL:1m"]).unwrap(),
            SessionCache::Cache { sessions: 4000 }
        );
        let e = c(&["shared:SSL:16k"]).unwrap_err().to_string();
        assert!(
            e.contains("session cache \"shared:SSL:16k\" is too small"),
            "{e}"
        );
        let e = c(&["shared::1m"]).unwrap_err().to_string();
        assert!(e.contains("invalid session cache \"shared::1m\""), "{e}");
        assert!(c(&["builtin:x"]).is_err());
        assert!(c(&["Off"]).is_err(), "nginx compares with strcmp");
    }

    #[test]
    fn protocols_accept_old_names_but_need_one_offered() {
        let p = |args: &[&str]| protocols(&dir("ssl_protocols", args));
        let all = p(&["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"]).unwrap();
        assert!(all.tls12 && all.tls13);
        let only13 = p(&["TLSv1.3"]).unwrap();
        assert!(!only13.tls12 && only13.tls13);
        assert!(p(&["TLSv1", "TLSv1.1"])
            .unwrap_err()
            .to_string()
            .contains("names no protocol ringfront offers"));
        assert!(p(&["TLSv2"])
            .unwrap_err()
            .to_string()
            .contains("invalid value \"TLSv2\""));
    }

    #[test]
    fn a_certificate_needs_its_key_and_verify_needs_a_ca() {
        let prefix = Path::new("/etc/rf");
        let mut l = SslLevel::default();
        l.apply(&dir("ssl_certificate", &["a.pem"]), prefix)
            .unwrap();
        let e = l.clone().finish().unwrap_err().to_string();
        assert!(
            e.contains("no \"ssl_certificate_key\" is defined for certificate \"a.pem\""),
            "{e}"
        );
        l.apply(&dir("ssl_certificate_key", &["a.key"]), prefix)
            .unwrap();
        let s = l.clone().finish().unwrap();
        assert_eq!(s.certificates[0].cert.path, Path::new("/etc/rf/a.pem"));
        l.apply(&dir("ssl_verify_client", &["on"]), prefix).unwrap();
        let e = l.clone().finish().unwrap_err().to_string();
        assert!(e.contains("no ssl_client_certificate for ssl_verify_client"));
        // Without a certificate of its own the server has no TLS context: nginx checks
        // nothing (its handshakes are the default server's).
        let mut bare = SslLevel::default();
        bare.apply(&dir("ssl_verify_client", &["on"]), prefix)
            .unwrap();
        assert!(bare.finish().is_ok());
        let mut p = ProxySslLevel::default();
        p.apply(&dir("proxy_ssl_verify", &["on"]), prefix).unwrap();
        assert!(p.clone().finish(false).is_ok(), "checked only for https");
        assert!(p.finish(true).is_err());
    }

    #[test]
    fn levels_inherit_what_they_do_not_write() {
        let prefix = Path::new("/");
        let mut http = SslLevel::default();
        http.apply(&dir("ssl_protocols", &["TLSv1.3"]), prefix)
            .unwrap();
        http.apply(&dir("ssl_session_tickets", &["off"]), prefix)
            .unwrap();
        let mut server = SslLevel::default();
        server
            .apply(&dir("ssl_session_tickets", &["on"]), prefix)
            .unwrap();
        let s = server.inherit(&http).finish().unwrap();
        assert!(!s.protocols.tls12 && s.protocols.tls13);
        assert!(s.session_tickets);
    }
}
