//! `ssl_session_timeout` as OpenSSL keeps it on the server: a session (in a ticket or in
//! the cache) resumes only while at most the timeout has passed since it was made
//! (`SSL_SESSION` time + timeout). rustls announces a ticket's lifetime but resumes any
//! ticket it can decrypt, and its cache keeps entries until they are pushed out; so every
//! ticket and cached session carries the second it was made, and an older one is treated
//! as unknown (a full handshake follows, as in nginx).

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::UnixTime;
use rustls::server::{ProducesTickets, StoresServerSessions};

const STAMP: usize = 8;

/// Whether a session made at `issued` may still resume at `now` (Unix seconds).
pub(crate) fn fresh(issued: u64, now: u64, timeout: u32) -> bool {
    now.saturating_sub(issued) <= u64::from(timeout)
}

fn now() -> u64 {
    UnixTime::now().as_secs()
}

fn stamped(plain: &[u8], at: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(STAMP + plain.len());
    v.extend_from_slice(&at.to_be_bytes());
    v.extend_from_slice(plain);
    v
}

/// The value behind a stamp, if it is fresh at `at`.
fn unstamped(v: &[u8], at: u64, timeout: u32) -> Option<Vec<u8>> {
    let (stamp, rest) = v.split_at_checked(STAMP)?;
    let issued = u64::from_be_bytes(stamp.try_into().ok()?);
    fresh(issued, at, timeout).then(|| rest.to_vec())
}

/// Tickets whose plaintext starts with the second they were issued.
pub(crate) struct Tickets {
    pub inner: Arc<dyn ProducesTickets>,
    pub timeout: u32,
}

impl fmt::Debug for Tickets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tickets")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl ProducesTickets for Tickets {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }
    fn lifetime(&self) -> u32 {
        self.timeout
    }
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.inner.encrypt(&stamped(plain, now()))
    }
    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        unstamped(&self.inner.decrypt(cipher)?, now(), self.timeout)
    }
}

/// A session cache whose entries carry the second they were stored.
pub(crate) struct Cache {
    pub inner: Arc<dyn StoresServerSessions>,
    pub timeout: u32,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl StoresServerSessions for Cache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(key, stamped(&value, now()))
    }
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        unstamped(&self.inner.get(key)?, now(), self.timeout)
    }
    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        unstamped(&self.inner.take(key)?, now(), self.timeout)
    }
    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_resumes_until_the_timeout_has_passed() {
        assert!(fresh(100, 100, 1));
        assert!(fresh(100, 101, 1));
        assert!(!fresh(100, 102, 1));
        assert!(
            fresh(100, 99, 1),
            "a clock stepping back does not expire it"
        );
        assert!(fresh(0, 300, 300));
    }

    #[test]
    fn stamps_round_trip_and_expire() {
        let v = stamped(b"session", 1000);
        assert_eq!(unstamped(&v, 1005, 300).as_deref(), Some(&b"session"[..]));
        assert_eq!(unstamped(&v, 1301, 300), None);
        assert_eq!(unstamped(b"short", 1000, 300), None);
    }
}
