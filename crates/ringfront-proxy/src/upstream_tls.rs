//! `proxy_pass https://`: a location's `proxy_ssl_*` as the workers use them (the rustls
//! client settings built once per configuration load and shared by the locations that
//! write the same ones), the handshake after the TCP connect under what is left of
//! `proxy_connect_timeout`, and its failures as typed causes in nginx's (OpenSSL's) words.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use monoio::net::TcpStream;
use std::os::unix::ffi::OsStrExt;

use ringfront_config::{CertKeyTemplate, ProxySsl, Template, TemplatePart, Variable};
use ringfront_tls::rustls::pki_types::ServerName;
use ringfront_tls::rustls::{self, AlertDescription, CertificateError, InvalidMessage};
use ringfront_tls::{TlsError, UpstreamTls};
use ringfront_upstream::exchange::{Cause, Failure, Phase, SslFault};

use crate::stream::UpstreamStream;
use crate::vars::{self, Vars};

/// One location's TLS to its upstream.
#[derive(Debug)]
pub struct TlsRt {
    pub config: Arc<UpstreamTls>,
    /// `proxy_ssl_name`; `None`: `$proxy_host`.
    pub name: Option<Template>,
    /// The settings' fingerprint: a pooled connection is reused only for a handshake that
    /// would have been the same (settings and name), so one location's `proxy_ssl_verify
    /// off` connection never serves another's `proxy_ssl_verify on`.
    profile: u64,
    /// `proxy_ssl_certificate` / `_key` with variables.
    certificate: Option<CertKeyTemplate>,
}

/// What one request's handshakes use: the name verified (and sent as SNI when
/// `proxy_ssl_server_name on`) and the pool tag of connections made with it.
#[derive(Debug)]
pub struct Handshake {
    pub config: Arc<UpstreamTls>,
    /// `proxy_ssl_name` as evaluated, port removed; `None` when it is no valid name.
    pub server_name: Option<ServerName<'static>>,
    pub name: String,
    pub tag: u64,
}

impl TlsRt {
    /// The handshake settings of one request (`proxy_host`: the location's `$proxy_host`).
    pub fn handshake(&self, v: &Vars<'_>) -> Handshake {
        let name = match &self.name {
            Some(t) => {
                let mut out = Vec::new();
                vars::render(&mut out, t, v, false);
                String::from_utf8_lossy(&out).into_owned()
            }
            None => v.proxy_host.to_string(),
        };
        self.settings_for(name)
    }

    /// [`TlsRt::handshake`] with the request's certificate when `proxy_ssl_certificate` has
    /// variables (an empty name: none, as nginx); `Err`: the files could not be loaded, for
    /// the error log and a 500, as nginx's `ngx_http_upstream_ssl_certificate`.
    pub fn request_handshake(&self, v: &Vars<'_>) -> Result<Handshake, TlsError> {
        let mut hs = self.handshake(v);
        let Some(c) = &self.certificate else {
            return Ok(hs);
        };
        let render = |t: &Template| {
            let mut out = Vec::new();
            vars::render(&mut out, t, v, false);
            out
        };
        let cert = render(&c.cert);
        if cert.is_empty() {
            return Ok(hs);
        }
        let key = render(&c.key);
        let path = |b: &[u8]| c.prefix.join(std::ffi::OsStr::from_bytes(b));
        let (cert, key) = (path(&cert), path(&key));
        hs.config = self.config.with_certificate(&cert, &key)?;
        // A pooled connection made with one certificate (as loaded then) serves only it.
        let mut h = DefaultHasher::new();
        (hs.tag, hs.config.generation).hash(&mut h);
        hs.tag = h.finish() | 1;
        Ok(hs)
    }

    fn settings_for(&self, name: String) -> Handshake {
        let server_name = ringfront_tls::server_name(&name).ok();
        let mut h = DefaultHasher::new();
        (self.profile, &name).hash(&mut h);
        Handshake {
            config: self.config.clone(),
            server_name,
            name,
            // Tag 0 is a plain connection.
            tag: h.finish() | 1,
        }
    }

    /// For health probes, which run outside any request: `proxy_ssl_name` with
    /// `$proxy_host` known and every other variable empty; `$proxy_host` when that is empty.
    pub fn probe_handshake(&self, proxy_host: &str) -> Handshake {
        let mut name = String::new();
        for part in self.name.iter().flat_map(|t| &t.parts) {
            match part {
                TemplatePart::Literal(s) => name.push_str(s),
                TemplatePart::Var(Variable::ProxyHost) => name.push_str(proxy_host),
                TemplatePart::Var(_) => {}
            }
        }
        if name.is_empty() {
            name = proxy_host.to_string();
        }
        self.settings_for(name)
    }
}

/// The TLS settings of each distinct `proxy_ssl_*` of one configuration load.
#[derive(Default)]
pub struct TlsCache(Vec<(ProxySsl, Arc<UpstreamTls>)>);

/// `p` without the places its directives were written (they do not change the handshake).
fn unplaced(p: &ProxySsl) -> ProxySsl {
    let mut p = p.clone();
    p.ciphers_origin = None;
    if let Some(f) = &mut p.trusted_certificate {
        f.origin = Default::default();
    }
    if let Some(ck) = &mut p.certificate {
        ck.cert.origin = Default::default();
        ck.key.origin = Default::default();
    }
    if let Some(f) = p
        .certificate_vars
        .as_mut()
        .and_then(|c| c.passwords.as_mut())
    {
        f.origin = Default::default();
    }
    p
}

impl TlsCache {
    /// The runtime TLS of a location whose `proxy_pass` is `https://`.
    pub fn location(&mut self, p: &ProxySsl) -> Result<Arc<TlsRt>, TlsError> {
        let key = unplaced(p);
        let config = match self.0.iter().find(|(k, _)| *k == key) {
            Some((_, c)) => c.clone(),
            None => {
                let c = Arc::new(ringfront_tls::upstream_tls(p)?);
                self.0.push((key.clone(), c.clone()));
                c
            }
        };
        let mut h = DefaultHasher::new();
        format!("{key:?}").hash(&mut h);
        Ok(Arc::new(TlsRt {
            config,
            name: p.name.clone(),
            profile: h.finish(),
            certificate: p.certificate_vars.clone(),
        }))
    }
}

/// Runs the handshake over a connected socket within `limit`.
pub async fn connect(
    tcp: TcpStream,
    hs: &Handshake,
    limit: Duration,
) -> Result<UpstreamStream, Failure> {
    let fail = |cause| Failure::new(Phase::Handshake, cause);
    let Some(name) = hs.server_name.clone() else {
        return Err(fail(Cause::Ssl(SslFault::Protocol(
            "invalid proxy_ssl_name",
        ))));
    };
    match crate::deadline::timeout(limit, ringfront_tls::connect(tcp, &hs.config, name)).await {
        Ok(Ok(s)) => Ok(UpstreamStream::Tls(Box::new(s))),
        Ok(Err(e)) => Err(fail(cause(&e))),
        Err(_) => Err(fail(Cause::TimedOut)),
    }
}

/// The cause of a failed handshake: an OS error, the peer closing, a certificate that did
/// not verify, or a protocol failure.
pub fn cause(e: &io::Error) -> Cause {
    if let Some(code) = e.raw_os_error() {
        return Cause::Os(code);
    }
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(c)) => Cause::Ssl(verify_fault(c)),
        Some(other) => Cause::Ssl(SslFault::Protocol(reason(other))),
        None => Cause::Closed,
    }
}

/// OpenSSL's X.509 verify result for what webpki found (nginx logs `(CODE:TEXT)`).
fn verify_fault(c: &CertificateError) -> SslFault {
    use CertificateError as C;
    let (code, text) = match c {
        C::NotValidForName | C::NotValidForNameContext { .. } => return SslFault::NameMismatch,
        C::UnknownIssuer => (20, "unable to get local issuer certificate"),
        C::BadSignature => (7, "certificate signature failure"),
        C::Expired | C::ExpiredContext { .. } => (10, "certificate has expired"),
        C::NotValidYet | C::NotValidYetContext { .. } => (9, "certificate is not yet valid"),
        C::Revoked => (23, "certificate revoked"),
        C::UnhandledCriticalExtension => (34, "unhandled critical extension"),
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            (26, "unsuitable certificate purpose")
        }
        C::UnknownRevocationStatus => (3, "unable to get certificate CRL"),
        C::ExpiredRevocationList | C::ExpiredRevocationListContext { .. } => {
            (12, "CRL has expired")
        }
        // Revocation lists and the path they need are ringfront's own checks.
        C::Other(o) => match o.0.downcast_ref::<ringfront_tls::VerifyFault>() {
            Some(f) => (f.code, f.text),
            None => (1, "unspecified certificate verification error"),
        },
        _ => (1, "unspecified certificate verification error"),
    };
    SslFault::Verify(code, text)
}

/// OpenSSL's reason text for a handshake that broke off.
fn reason(e: &rustls::Error) -> &'static str {
    use rustls::Error as E;
    match e {
        // Not TLS at all (a plain HTTP server answering): what OpenSSL's record layer says.
        E::InvalidMessage(InvalidMessage::InvalidContentType)
        | E::InvalidMessage(InvalidMessage::UnknownProtocolVersion)
        | E::PeerSentOversizedRecord => "wrong version number",
        E::InvalidMessage(_) => "decode error",
        E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            "unexpected message"
        }
        E::AlertReceived(a) => alert(*a),
        E::PeerIncompatible(rustls::PeerIncompatible::NoCipherSuitesInCommon) => "no cipher match",
        E::PeerIncompatible(_) => "unsupported protocol",
        E::PeerMisbehaved(_) => "peer misbehaved",
        E::DecryptError => "decryption failed or bad record mac",
        E::NoCertificatesPresented => "peer did not return a certificate",
        _ => "handshake failure",
    }
}

/// OpenSSL's text for an alert the upstream sent.
fn alert(a: AlertDescription) -> &'static str {
    use AlertDescription as A;
    match a {
        A::HandshakeFailure => "sslv3 alert handshake failure",
        A::BadCertificate => "sslv3 alert bad certificate",
        A::UnsupportedCertificate => "sslv3 alert unsupported certificate",
        A::CertificateRevoked => "sslv3 alert certificate revoked",
        A::CertificateExpired => "sslv3 alert certificate expired",
        A::CertificateUnknown => "sslv3 alert certificate unknown",
        A::IllegalParameter => "sslv3 alert illegal parameter",
        A::UnexpectedMessage => "sslv3 alert unexpected message",
        A::UnknownCA => "tlsv1 alert unknown ca",
        A::AccessDenied => "tlsv1 alert access denied",
        A::DecodeError => "tlsv1 alert decode error",
        A::DecryptError => "tlsv1 alert decrypt error",
        A::ProtocolVersion => "tlsv1 alert protocol version",
        A::InsufficientSecurity => "tlsv1 alert insufficient security",
        A::InternalError => "tlsv1 alert internal error",
        A::UnrecognisedName => "tlsv1 unrecognized name",
        A::CertificateRequired => "tlsv13 alert certificate required",
        A::NoApplicationProtocol => "tlsv1 alert no application protocol",
        _ => "ssl alert",
    }
}

#[cfg(test)]
mod tests;
