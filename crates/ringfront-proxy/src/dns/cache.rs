//! The per-worker answer cache: a name's addresses until their TTL (or `valid=`) runs out,
//! keyed by the resolver (each `resolver` line has its own cache, as in nginx; the entry
//! holds the line's `Arc`, so its address is not reused while the entry lives) and the
//! name in lower case. Failures are
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
    map: HashMap<(usize, Box<str>), Entry>,
}

struct Entry {
    _owner: Arc<Resolver>,
    addrs: Rc<[IpAddr]>,
    /// The last second the entry serves.
    until: u64,
}

impl Cache {
    /// The cached addresses of `name`, if still valid at `now`.
    pub fn get(&self, conf: &Arc<Resolver>, name: &str, now: u64) -> Option<Rc<[IpAddr]>> {
        let e = self.map.get(&key(conf, name))?;
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
        let entry = Entry {
            _owner: conf.clone(),
            addrs,
            until,
        };
        self.map.insert(key(conf, name), entry);
    }
}

fn key(conf: &Arc<Resolver>, name: &str) -> (usize, Box<str>) {
    let id = Arc::as_ptr(conf) as usize;
    (id, name.to_ascii_lowercase().into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(port: u16) -> Arc<Resolver> {
        // `port` only makes the lines differ; each call is a line of its own.
        Arc::new(Resolver {
            servers: vec![([127, 0, 0, 1], port).into()],
            valid: None,
            ipv4: true,
            ipv6: true,
        })
    }

    #[test]
    fn entries_live_until_their_ttl_per_resolver_line_and_any_case() {
        let mut c = Cache::default();
        let addrs: Rc<[IpAddr]> = vec![IpAddr::from([127, 0, 0, 1])].into();
        let line = conf(53);
        // TTL 2 at second 100: served through second 102, as nginx.
        c.put(&line, "A.test", addrs.clone(), 102, 100);
        assert_eq!(c.get(&line, "a.TEST", 102), Some(addrs));
        assert_eq!(c.get(&line.clone(), "a.test", 103), None);
        // Another `resolver` line, even written the same, has its own cache.
        assert_eq!(c.get(&conf(53), "a.test", 100), None);
    }
}
