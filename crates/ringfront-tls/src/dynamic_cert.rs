//! `proxy_ssl_certificate` with variables: the certificate and key named by one request,
//! loaded on first use into a copy of the location's client settings and kept in a
//! per-worker cache by path (no lock: each worker thread has its own). An entry is used
//! again while both files keep their size and modification time — one `stat` each per
//! request — so a replaced file is read again, as nginx 1.22 (which loads per request)
//! would see it; the files are small PEM, read synchronously on a miss.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use ringfront_config::SslFile;
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::ClientConfig;

use crate::client::{OwnCertificate, UpstreamTls};
use crate::error::TlsError;

/// What a location needs to make its per-certificate settings.
#[derive(Debug)]
pub struct DynamicCertificates {
    /// Tells one location's cache entries from another's (and from an earlier load's);
    /// drawn from the same counter as the loads' generations.
    id: u64,
    provider: Arc<CryptoProvider>,
    /// `proxy_ssl_password_file`, read when the configuration loaded.
    passwords: Option<Vec<Vec<u8>>>,
    session_reuse: bool,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Entries per worker before the cache starts over (a bound on memory, not a policy).
const MAX_ENTRIES: usize = 256;

type Stamp = Option<(SystemTime, u64)>;

struct Entry {
    stamps: [Stamp; 2],
    tls: Arc<UpstreamTls>,
}

thread_local! {
    static CACHE: RefCell<HashMap<(u64, PathBuf, PathBuf), Entry>> = RefCell::new(HashMap::new());
}

fn stamp(p: &Path) -> Stamp {
    let m = std::fs::metadata(p).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl DynamicCertificates {
    pub(crate) fn new(
        provider: Arc<CryptoProvider>,
        passwords: Option<&SslFile>,
        session_reuse: bool,
    ) -> Result<Self, TlsError> {
        let passwords = passwords
            .map(crate::encrypted_key::read_passwords)
            .transpose()?;
        Ok(DynamicCertificates {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            provider,
            passwords,
            session_reuse,
        })
    }

    /// `base` offering the certificate of `cert` with the key of `key`, from the cache or
    /// loaded now; the error is nginx's line (`cannot load certificate "...": ...`).
    pub(crate) fn settings(
        &self,
        base: &ClientConfig,
        cert: &Path,
        key: &Path,
    ) -> Result<Arc<UpstreamTls>, TlsError> {
        let k = (self.id, cert.to_path_buf(), key.to_path_buf());
        let stamps = [stamp(cert), stamp(key)];
        let hit = CACHE.with(|c| {
            c.borrow()
                .get(&k)
                .filter(|e| e.stamps == stamps && stamps[0].is_some())
                .map(|e| e.tls.clone())
        });
        if let Some(tls) = hit {
            return Ok(tls);
        }
        let tls = Arc::new(self.load(base, cert, key)?);
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= MAX_ENTRIES {
                c.clear();
            }
            c.insert(
                k,
                Entry {
                    stamps,
                    tls: tls.clone(),
                },
            );
        });
        Ok(tls)
    }

    fn load(&self, base: &ClientConfig, cert: &Path, key: &Path) -> Result<UpstreamTls, TlsError> {
        let file = |p: &Path| SslFile {
            path: p.to_path_buf(),
            origin: Default::default(),
        };
        let ck = crate::pem::certified_key_with(
            &file(cert),
            &file(key),
            self.passwords.as_deref(),
            &self.provider,
        )?;
        let mut config = base.clone();
        config.client_auth_cert_resolver = Arc::new(OwnCertificate(ck));
        // Sessions made with one certificate are not offered with another.
        config.resumption = match self.session_reuse {
            true => Resumption::in_memory_sessions(256),
            false => Resumption::disabled(),
        };
        Ok(UpstreamTls {
            config: Arc::new(config),
            dynamic: None,
            generation: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }
}
