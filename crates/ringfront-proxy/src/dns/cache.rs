//! The per-worker answer cache: a name's addresses until their TTL (or `valid=`) runs out,
//! keyed by the resolver (its servers and flags) and the name in lower case. Failures are
//! not cached (nginx 1.22 drops the node of a failed name). Time is whole seconds of the
//! wall clock, passed in, as nginx's `rn->valid >= ngx_time()`: an answer with TTL 0 serves
//! the rest of the second it came in.

use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;

use ringfront_config::resolver::Resolver;

/// Past this many names, expired entries are swept before one is added.
const SWEEP_AT: usize = 4096;

#[derive(Default)]
pub struct Cache {
    map: HashMap<(Arc<Resolver>, Box<str>), Entry>,
}

struct Entry {
    addrs: Rc<[IpAddr]>,
    /// The last second the entry serves.
    until: u64,
}

impl Cache {
    /// The cached addresses of `name`, if still valid at `now`.
    pub fn get(&self, conf: &Arc<Resolver>, name: &str, now: u64) -> Option<Rc<[IpAddr]>> {
        let key = (conf.clone(), name.to_ascii_lowercase().into_boxed_str());
        let e = self.map.get(&key)?;
        (now <= e.until).then(|| e.addrs.clone())
    }

    pub fn put(
        &mut self,
        conf: &Arc<Resolver>,
        name: &str,
        addrs: Rc<[IpAddr]>,
        until: u64,
        now: u64,
    ) {
        if self.map.len() >= SWEEP_AT {
            self.map.retain(|_, e| now <= e.until);
        }
        let key = (conf.clone(), name.to_ascii_lowercase().into_boxed_str());
        self.map.insert(key, Entry { addrs, until });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(port: u16) -> Arc<Resolver> {
        Arc::new(Resolver {
            servers: vec![([127, 0, 0, 1], port).into()],
            valid: None,
            ipv4: true,
            ipv6: true,
        })
    }

    #[test]
    fn entries_live_until_their_ttl_per_resolver_and_any_case() {
        let mut c = Cache::default();
        let addrs: Rc<[IpAddr]> = vec![IpAddr::from([127, 0, 0, 1])].into();
        // TTL 2 at second 100: served through second 102, as nginx.
        c.put(&conf(53), "A.test", addrs.clone(), 102, 100);
        assert_eq!(c.get(&conf(53), "a.TEST", 102), Some(addrs));
        assert_eq!(c.get(&conf(53), "a.test", 103), None);
        assert_eq!(c.get(&conf(54), "a.test", 100), None);
    }
}
