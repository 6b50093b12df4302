//! `ssl_ocsp`: once a client's certificate verified, the status of each certificate of its
//! path but the root (`leaf`: of the client's own only) is asked of the OCSP responder
//! (`ssl_ocsp_responder`, else the certificate's AIA URL) before the connection serves a
//! request, as nginx; `revoked` and `unknown` answers, and a request that fails, turn
//! `$ssl_client_verify` into nginx's `FAILED:...`. The request runs on the worker's ring.
//! With `ssl_ocsp_cache`, answers are kept until their nextUpdate in a map shared by every
//! worker, replaced whole when one is added (copy on write: readers take no lock).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use arc_swap::ArcSwap;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use ringfront_config::ClientOcsp;
use rustls_pki_types::CertificateDer;

use crate::ocsp::{self, CertId, Status};
use crate::stapling::{self, Responder};

/// A server's `ssl_ocsp` settings, read at load.
#[derive(Debug)]
pub(crate) struct OcspCheck {
    leaf_only: bool,
    responder: Option<Responder>,
    cache: Option<Arc<str>>,
}

type Cache = HashMap<(Arc<str>, Vec<u8>), (Status, i64)>;

static CACHE: LazyLock<ArcSwap<Cache>> = LazyLock::new(|| ArcSwap::from_pointee(HashMap::new()));

/// Entries before the cache starts over (a bound on memory, as the zone's size is).
const MAX_ENTRIES: usize = 4096;

pub(crate) const FAILED: &str = "certificate status request failed";

impl OcspCheck {
    /// nginx's load-time check of `ssl_ocsp_responder`.
    pub(crate) fn new(c: &ClientOcsp) -> Result<OcspCheck, String> {
        let responder = match &c.responder {
            None => None,
            Some(url) => Some(stapling::parse_url(url).ok_or_else(|| {
                let rest = url.get(7..).unwrap_or(url);
                match url.len() > 7 && url[..7].eq_ignore_ascii_case("http://") {
                    true => format!(
                        "invalid host in OCSP responder \"{rest}\" in \"ssl_ocsp_responder\""
                    ),
                    false => format!(
                        "invalid URL prefix in OCSP responder \"{url}\" in \"ssl_ocsp_responder\""
                    ),
                }
            })?),
        };
        Ok(OcspCheck {
            leaf_only: c.leaf_only,
            responder,
            cache: c.cache.as_deref().map(Arc::from),
        })
    }

    /// `None` when every certificate asked about is `good`; else nginx's reason.
    pub(crate) async fn validate(&self, path: &[CertificateDer<'static>]) -> Option<&'static str> {
        let asked = match self.leaf_only {
            true => path.len().saturating_sub(1).min(1),
            false => path.len().saturating_sub(1),
        };
        for i in 0..asked {
            match self.status(&path[i], &path[i + 1]).await {
                Some(Status::Good) => {}
                Some(Status::Revoked) => return Some("certificate revoked"),
                Some(Status::Unknown) => return Some("certificate status unknown"),
                None => return Some(FAILED),
            }
        }
        None
    }

    async fn status(
        &self,
        cert: &CertificateDer<'_>,
        issuer: &CertificateDer<'_>,
    ) -> Option<Status> {
        let id = CertId::new(cert, issuer)?;
        let request = id.request();
        let now = crate::stapling::now();
        if let Some(zone) = &self.cache {
            let hit = CACHE.load().get(&(zone.clone(), request.clone())).copied();
            if let Some((status, _)) = hit.filter(|&(_, v)| v >= now) {
                return Some(status);
            }
        }
        let responder = match &self.responder {
            Some(r) => r.clone(),
            None => stapling::parse_url(&stapling::aia_ocsp(cert)?)?,
        };
        let body = fetch(&responder, &request).await?;
        let checked = ocsp::check(&body, &id, issuer, true, now).ok()?;
        if let Some(zone) = &self.cache {
            let valid = checked.next_update.unwrap_or(i64::MAX);
            let key = (zone.clone(), request);
            CACHE.rcu(|c| {
                let mut c = if c.len() >= MAX_ENTRIES {
                    HashMap::new()
                } else {
                    (**c).clone()
                };
                c.insert(key.clone(), (checked.status, valid));
                c
            });
        }
        Some(checked.status)
    }
}

/// The responder's answer; `None` when it cannot be had. Names need `resolver`, which
/// ringfront's OCSP does not use: as nginx without one, only addresses are asked.
async fn fetch(r: &Responder, request: &[u8]) -> Option<Vec<u8>> {
    let ip: std::net::IpAddr = r
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    let mut s = TcpStream::connect((ip, r.port)).await.ok()?;
    let head = stapling::request_head(r, request).into_bytes();
    let (res, _) = s.write_all(head).await;
    res.ok()?;
    let mut all = Vec::new();
    loop {
        let buf = Vec::with_capacity(8192);
        let (res, buf) = s.read(buf).await;
        match res.ok()? {
            0 => break,
            _ => all.extend_from_slice(&buf),
        }
        if all.len() > 1 << 20 {
            return None;
        }
    }
    stapling::ok_body(&all).ok().map(<[u8]>::to_vec)
}
