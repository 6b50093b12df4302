//! ringfront's stub resolver, nginx's `ngx_resolver` for one worker: queries over the
//! worker's ring (UDP, TCP when an answer is truncated), answers cached per worker for
//! their TTL (or `valid=`), name servers asked in turn.

mod cache;
mod client;
mod pending;
pub mod wire;

pub use cache::Cache;
pub use client::{lookup, Failure, Resolved};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ringfront_config::resolver::Resolver;

/// One worker's resolver state (`!Send`: only this worker's tasks touch it).
pub struct WorkerDns {
    cache: RefCell<Cache>,
    rng: Cell<u64>,
    /// The name server the next lookup of each `resolver` line starts with (nginx's
    /// `r->last_connection`, one per resolver).
    next_server: RefCell<HashMap<usize, usize>>,
    /// Where the next request starts in a resolved name's addresses.
    rotate: Cell<usize>,
    /// Lookups in flight, by resolver line and name: a second request for the same name
    /// waits for the first one's answer.
    inflight: RefCell<Inflight>,
}

/// Lookups in flight by (resolver line, lower-cased name).
type Inflight = HashMap<(usize, Box<str>), Rc<pending::Pending>>;

impl Default for WorkerDns {
    fn default() -> Self {
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        WorkerDns {
            cache: RefCell::new(Cache::default()),
            rng: Cell::new(seed | 1),
            next_server: RefCell::default(),
            rotate: Cell::new(0),
            inflight: RefCell::default(),
        }
    }
}

impl WorkerDns {
    /// A query id (xorshift; ids only need to be hard to guess off-path).
    pub fn next_id(&self) -> u16 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        (x >> 32) as u16
    }

    /// The addresses of `name` (A then AAAA), from the cache while it is valid, otherwise
    /// asked; `log` gets the resolver's own error-log lines.
    pub async fn addresses(
        &self,
        conf: &Arc<Resolver>,
        timeout: Duration,
        name: &str,
        log: &dyn Fn(&str),
    ) -> Result<Rc<[IpAddr]>, Failure> {
        let key = (
            Arc::as_ptr(conf) as usize,
            name.to_ascii_lowercase().into_boxed_str(),
        );
        loop {
            if let Some(hit) = self.cache.borrow().get(conf, name, unix_seconds()) {
                return Ok(hit);
            }
            let waiting = self.inflight.borrow().get(&key).cloned();
            match waiting {
                // Another request asks: take its answer (or ask ourselves if it left).
                Some(p) => match p.wait().await {
                    Some(r) => return r,
                    None => continue,
                },
                None => return self.ask(conf, timeout, name, key, log).await,
            }
        }
    }

    /// Asks for `name` on behalf of every request that comes for it meanwhile.
    async fn ask(
        &self,
        conf: &Arc<Resolver>,
        timeout: Duration,
        name: &str,
        key: (usize, Box<str>),
        log: &dyn Fn(&str),
    ) -> Result<Rc<[IpAddr]>, Failure> {
        let asker = pending::Asker(Rc::default());
        self.inflight
            .borrow_mut()
            .insert(key.clone(), asker.0.clone());
        // Out of the map however this ends (the request may be dropped while it waits).
        let _out = Remove(&self.inflight, key);
        let start = self.start_for(conf);
        let types: &[u16] = match (conf.ipv4, conf.ipv6) {
            (true, true) => &[wire::TYPE_A, wire::TYPE_AAAA],
            (false, _) => &[wire::TYPE_AAAA],
            (true, false) => &[wire::TYPE_A],
        };
        let r = match lookup(self, conf, timeout, name, types, start, log).await {
            Ok(found) => {
                let ttl = conf.valid.map_or(u64::from(found.ttl), |v| v.as_secs());
                let addrs: Rc<[IpAddr]> = found.addrs.into();
                let now = unix_seconds();
                self.cache
                    .borrow_mut()
                    .put(conf, name, addrs.clone(), now + ttl, now);
                Ok(addrs)
            }
            Err(f) => Err(f),
        };
        asker.done(&r);
        r
    }

    /// The server a new lookup through `conf` starts with; the next one starts after it.
    pub fn start_for(&self, conf: &Arc<Resolver>) -> usize {
        let mut all = self.next_server.borrow_mut();
        let n = all.entry(Arc::as_ptr(conf) as usize).or_insert(0);
        let start = *n;
        *n = n.wrapping_add(1);
        start
    }

    /// The offset the next request starts at in a list of `n` addresses.
    pub fn rotation(&self, n: usize) -> usize {
        let r = self.rotate.get();
        self.rotate.set(r.wrapping_add(1));
        if n == 0 {
            0
        } else {
            r % n
        }
    }
}

/// The wall clock in whole seconds (nginx's `ngx_time()`).
fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Removes a lookup from the in-flight map when dropped.
struct Remove<'a>(&'a RefCell<Inflight>, (usize, Box<str>));

impl Drop for Remove<'_> {
    fn drop(&mut self) {
        self.0.borrow_mut().remove(&self.1);
    }
}
