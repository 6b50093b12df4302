//! `ssl_stapling`: an OCSP response sent with a certificate in the handshake. From
//! `ssl_stapling_file` as it is, or fetched from the responder (`ssl_stapling_responder`
//! or the certificate's AIA URL) by a thread of its own, started by the first handshake
//! that finds the response due (as nginx, that handshake goes without it). The response in
//! use is swapped in atomically; handshakes read it without a lock.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwapOption;
use ringfront_config::{CertKey, ServerSsl, SslFile, Stapling};
use rustls::sign::CertifiedKey;
use rustls_pki_types::CertificateDer;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::error::TlsError;
use crate::ocsp::{self, CertId, Status};

/// One certificate of a server, with its staple when it has one.
#[derive(Debug)]
pub(crate) struct Slot {
    plain: Arc<CertifiedKey>,
    fetch: Option<Arc<Fetch>>,
}

/// A staple fetched from a responder, and when to fetch the next.
#[derive(Debug)]
struct Fetch {
    stapled: ArcSwapOption<CertifiedKey>,
    /// nextUpdate of the stapled response (seconds since the epoch).
    valid: AtomicI64,
    /// When a handshake may start the next fetch.
    refresh: AtomicI64,
    loading: AtomicBool,
    responder: Responder,
    id: CertId,
    issuer: CertificateDer<'static>,
    verify: bool,
    plain: Arc<CertifiedKey>,
}

/// `http://host[:port][/uri]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Responder {
    pub host: String,
    pub port: u16,
    pub uri: String,
}

pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Slot {
    pub(crate) fn key(&self) -> &Arc<CertifiedKey> {
        &self.plain
    }

    /// The certificate to send now: with the fetched staple while it is valid. Starts a
    /// fetch when one is due.
    pub(crate) fn current(&self) -> Arc<CertifiedKey> {
        let Some(f) = &self.fetch else {
            return self.plain.clone();
        };
        let now = now();
        let out = match f.stapled.load_full() {
            Some(ck) if f.valid.load(Ordering::Relaxed) >= now => ck,
            _ => self.plain.clone(),
        };
        f.start_if_due(now);
        out
    }
}

/// The certificate of `ck` (loaded from `files`) as `ssl` staples it.
pub(crate) fn slot(
    ck: Arc<CertifiedKey>,
    files: &CertKey,
    ssl: &ServerSsl,
) -> Result<Slot, TlsError> {
    let plain = |ck| {
        Ok(Slot {
            plain: ck,
            fetch: None,
        })
    };
    let Some(st) = &ssl.stapling else {
        return plain(ck);
    };
    if let Some(f) = &st.file {
        let mut with = (*ck).clone();
        with.ocsp = Some(read_file(f)?);
        return plain(Arc::new(with));
    }
    let name = files.cert.path.display().to_string();
    let Some(issuer) = issuer(&ck, ssl)? else {
        warn(&format!(
            "\"ssl_stapling\" ignored, issuer certificate not found for certificate \"{name}\""
        ));
        return plain(ck);
    };
    let Some(responder) = responder(&ck, st, &name) else {
        return plain(ck);
    };
    let leaf = ck.cert.first().map(|c| c.as_ref()).unwrap_or_default();
    let Some(id) = CertId::new(leaf, &issuer) else {
        return plain(ck);
    };
    let fetch = Fetch {
        stapled: ArcSwapOption::empty(),
        valid: AtomicI64::new(0),
        refresh: AtomicI64::new(0),
        loading: AtomicBool::new(false),
        responder,
        id,
        issuer,
        verify: st.verify,
        plain: ck.clone(),
    };
    Ok(Slot {
        plain: ck,
        fetch: Some(Arc::new(fetch)),
    })
}

/// nginx writes these to the error log while loading; ringfront to standard error.
fn warn(line: &str) {
    eprintln!("ringfront: [warn] {line}");
}

fn read_file(f: &SslFile) -> Result<Vec<u8>, TlsError> {
    let p = f.path.display();
    let bytes = std::fs::read(&f.path).map_err(|e| {
        let text = crate::error_text(&e);
        let why = text.split_once(": ").map_or("", |(_, t)| t);
        TlsError::at(
            f,
            format!("BIO_new_file(\"{p}\") failed (SSL: error:80000002:system library::{why})"),
        )
    })?;
    if !ocsp::well_formed(&bytes) {
        return Err(TlsError::at(
            f,
            format!("d2i_OCSP_RESPONSE_bio(\"{p}\") failed (SSL: error:068000A8:asn1 encoding routines::wrong tag)"),
        ));
    }
    Ok(bytes)
}

/// The certificate that issued the leaf: from the chain, else from
/// `ssl_trusted_certificate` / `ssl_client_certificate` (nginx's certificate store).
fn issuer(ck: &CertifiedKey, ssl: &ServerSsl) -> Result<Option<CertificateDer<'static>>, TlsError> {
    let Some(leaf) = ck.cert.first() else {
        return Ok(None);
    };
    let Ok((_, leaf)) = X509Certificate::from_der(leaf) else {
        return Ok(None);
    };
    let issued = |c: &CertificateDer| {
        X509Certificate::from_der(c)
            .is_ok_and(|(_, c)| c.subject().as_raw() == leaf.issuer().as_raw())
    };
    if let Some(c) = ck.cert.iter().skip(1).find(|c| issued(c)) {
        return Ok(Some(c.clone()));
    }
    for f in [&ssl.trusted_certificate, &ssl.client_certificate]
        .into_iter()
        .flatten()
    {
        if let Some(c) = crate::pem::certificates(f)?.into_iter().find(|c| issued(c)) {
            return Ok(Some(c));
        }
    }
    Ok(None)
}

/// The responder to ask, with nginx's warnings when there is none usable.
fn responder(ck: &CertifiedKey, st: &Stapling, name: &str) -> Option<Responder> {
    let url = match &st.responder {
        Some(u) => u.clone(),
        None => match ck.cert.first().and_then(|c| aia_ocsp(c)) {
            Some(u) => u,
            None => {
                warn(&format!(
                    "\"ssl_stapling\" ignored, no OCSP responder URL in the certificate \"{name}\""
                ));
                return None;
            }
        },
    };
    let parsed = parse_url(&url);
    if parsed.is_none() {
        let rest = url
            .get(7..)
            .filter(|_| url.len() > 7 && url[..7].eq_ignore_ascii_case("http://"));
        match rest {
            None => warn(&format!(
                "\"ssl_stapling\" ignored, invalid URL prefix in OCSP responder \"{url}\" in the certificate \"{name}\""
            )),
            Some(r) => warn(&format!(
                "\"ssl_stapling\" ignored, invalid host in OCSP responder \"{r}\" in the certificate \"{name}\""
            )),
        }
    }
    parsed
}

/// The first OCSP URL of the certificate's Authority Information Access.
pub(crate) fn aia_ocsp(cert: &CertificateDer) -> Option<String> {
    let (_, c) = X509Certificate::from_der(cert).ok()?;
    c.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityInfoAccess(aia) => aia.accessdescs.iter().find_map(|d| {
                let ocsp = d.access_method.to_id_string() == "1.3.6.1.5.5.7.48.1";
                match &d.access_location {
                    GeneralName::URI(u) if ocsp => Some(u.to_string()),
                    _ => None,
                }
            }),
            _ => None,
        })
}

pub(crate) fn parse_url(url: &str) -> Option<Responder> {
    if url.len() <= 7 || !url[..7].eq_ignore_ascii_case("http://") {
        return None;
    }
    let rest = &url[7..];
    let (authority, uri) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.ends_with(']') => match p.parse::<u16>() {
            Ok(p) => (h, p),
            Err(_) => return None,
        },
        _ => (authority, 80),
    };
    if host.is_empty() {
        return None;
    }
    Some(Responder {
        host: host.to_string(),
        port,
        uri: uri.to_string(),
    })
}

impl Fetch {
    fn start_if_due(self: &Arc<Self>, now: i64) {
        if self.refresh.load(Ordering::Relaxed) > now || self.loading.load(Ordering::Relaxed) {
            return;
        }
        if self.loading.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ocsp-staple".into())
            .spawn(move || me.run());
        if spawned.is_err() {
            self.loading.store(false, Ordering::Release);
        }
    }

    /// One fetch; the next is due in 5 minutes after a failure, else before the response
    /// expires but not sooner than 5 minutes nor later than an hour (nginx's rule).
    fn run(&self) {
        let started = now();
        let refresh = match self.fetch_and_check() {
            Ok((bytes, valid)) => {
                let mut with = (*self.plain).clone();
                with.ocsp = Some(bytes);
                self.valid.store(valid, Ordering::Relaxed);
                self.stapled.store(Some(Arc::new(with)));
                let now = now();
                (valid.saturating_sub(300)).min(now + 3600).max(now + 300)
            }
            Err(e) => {
                eprintln!("ringfront: [error] {e} while requesting certificate status, responder: {}, peer: {}:{}", self.responder.host, self.responder.host, self.responder.port);
                started + 300
            }
        };
        self.refresh.store(refresh, Ordering::Relaxed);
        self.loading.store(false, Ordering::Release);
    }

    fn fetch_and_check(&self) -> Result<(Vec<u8>, i64), String> {
        let body = http_get(&self.responder, &self.id.request())?;
        let checked = ocsp::check(&body, &self.id, &self.issuer, self.verify, now())?;
        if checked.status != Status::Good {
            return Err(format!(
                "certificate status \"{}\" in the OCSP response",
                checked.status.word()
            ));
        }
        Ok((body, checked.next_update.unwrap_or(i64::MAX)))
    }
}

/// nginx's request: `GET URI/BASE64 HTTP/1.0` with a Host header; the body of a 200.
fn http_get(r: &Responder, request: &[u8]) -> Result<Vec<u8>, String> {
    let timeout = Some(Duration::from_secs(60));
    let host = r.host.trim_start_matches('[').trim_end_matches(']');
    let addr = (host, r.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("{} could not be resolved", r.host))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(60))
        .map_err(|e| format!("connect() failed ({})", crate::error_text(&e)))?;
    s.set_read_timeout(timeout).ok();
    s.set_write_timeout(timeout).ok();
    let slash = if r.uri.ends_with('/') { "" } else { "/" };
    let path = escape(&base64(request));
    let head = format!(
        "GET {}{slash}{path} HTTP/1.0\r\nHost: {}\r\n\r\n",
        r.uri, r.host
    );
    s.write_all(head.as_bytes())
        .map_err(|e| format!("send() failed ({})", crate::error_text(&e)))?;
    let mut all = Vec::new();
    s.take(1 << 20)
        .read_to_end(&mut all)
        .map_err(|e| format!("recv() failed ({})", crate::error_text(&e)))?;
    ok_body(&all).map(<[u8]>::to_vec)
}

/// Where the body starts: after the first empty line (lines end with LF, a CR before it
/// optional, as nginx reads them).
pub(crate) fn body_start(all: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let end = at + all[at..].iter().position(|&b| b == b'\n')?;
        let line = &all[at..end];
        if line.is_empty() || line == b"\r" {
            return (at > 0).then_some(end + 1);
        }
        at = end + 1;
    }
}

/// nginx's request line and header for `request` (DER).
pub(crate) fn request_head(r: &Responder, request: &[u8]) -> String {
    let slash = if r.uri.ends_with('/') { "" } else { "/" };
    let path = escape(&base64(request));
    format!(
        "GET {}{slash}{path} HTTP/1.0\r\nHost: {}\r\n\r\n",
        r.uri, r.host
    )
}

/// The body of a 200 answer.
pub(crate) fn ok_body(all: &[u8]) -> Result<&[u8], String> {
    let body = body_start(all).ok_or("OCSP responder sent invalid response")?;
    let status = all.split(|&b| b == b' ').nth(1).unwrap_or_default();
    if status != b"200" {
        return Err(format!(
            "OCSP responder sent invalid status \"{}\"",
            String::from_utf8_lossy(status)
        ));
    }
    Ok(&all[body..])
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// nginx's NGX_ESCAPE_URI_COMPONENT of base64 text: `+`, `/` and `=` become `%XX`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '+' => out.push_str("%2B"),
            '/' => out.push_str("%2F"),
            '=' => out.push_str("%3D"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_as_nginx_reads_them() {
        let r = parse_url("http://127.0.0.1:8081").unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.uri.as_str()),
            ("127.0.0.1", 8081, "/")
        );
        let r = parse_url("HTTP://ocsp.example/x/").unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.uri.as_str()),
            ("ocsp.example", 80, "/x/")
        );
        assert!(parse_url("https://a/").is_none());
        assert!(parse_url("http://a:x/").is_none());
    }

    #[test]
    fn base64_and_escape() {
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(escape("a+b/c="), "a%2Bb%2Fc%3D");
    }

    #[test]
    fn bodies_after_crlf_or_bare_lf_headers() {
        assert_eq!(body_start(b"HTTP/1.0 200 OK\r\nA: b\r\n\r\nXY"), Some(25));
        assert_eq!(body_start(b"HTTP/1.1 200 OK\nA: b\n\nXY"), Some(22));
        assert_eq!(body_start(b"HTTP/1.1 200 OK\nA: b\n"), None);
    }
}
