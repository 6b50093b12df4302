//! Per-worker keepalive cache of idle upstream connections, as nginx's keepalive module keeps
//! it: `keepalive N` idle connections per group and worker; `take` gives a peer's most
//! recently used one; a full cache closes its least recently used connection to keep the new
//! one. Better than nginx: idle connections are watched without a syscall per reuse
//! (`watch`), closed at the group's `keepalive_timeout` by one sweep per worker (`sweep`)
//! instead of a timer each, closed when their peer is marked down, and kept across a reload
//! for the peers that survive it while the removed peers' are closed at once.

mod lru;
mod ready;
pub mod sweep;
mod watch;

#[cfg(test)]
mod tests;

use std::rc::Rc;
use std::time::Duration;

use crate::stream::UpstreamStream;
use ringfront_upstream::{PeerId, Topology, UpstreamId};

pub use watch::Pooled;
use watch::{Shared, State};

pub struct Pool {
    shared: Rc<Shared>,
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new(0)
    }
}

impl Pool {
    pub fn new(peer_count: usize) -> Self {
        Pool {
            shared: Rc::new(Shared::new(State::new(peer_count))),
        }
    }

    /// `peer`'s most recently used idle connection, taken out of the cache.
    pub fn take(&mut self, peer: PeerId) -> Option<Pooled> {
        let mut st = self.shared.borrow_mut();
        let id = st.lru.pop_mru(peer)?;
        if let Some(held) = st.unhold(id) {
            let tag = st.tag_of(id);
            st.free_slot(id);
            return Some(Pooled::held(self.shared.clone(), tag, held));
        }
        drop(st);
        Some(Pooled::new(self.shared.clone(), id))
    }

    /// `put_tagged` with the tag of the stream's kind (0 plain, 1 TLS), for tests.
    #[cfg(test)]
    pub fn put(
        &mut self,
        group: UpstreamId,
        peer: PeerId,
        cap: usize,
        timeout: Duration,
        stream: UpstreamStream,
        requests: u64,
    ) {
        let tag = u64::from(matches!(stream, UpstreamStream::Tls(_)));
        let born = crate::clock::now_ms();
        self.put_tagged(group, peer, (cap, timeout), stream, requests, (tag, born));
    }

    /// Keeps `stream` idle for reuse; when `group` already holds `cap` idle connections, its
    /// least recently used one is closed to make room (`cap` 0: `stream` is closed). `tag`
    /// says what it speaks (0 plain, else its TLS settings'; `Pooled::tag` gives it back),
    /// `born` when it was made (`clock::now_ms`; `Pooled::born`).
    /// A TLS connection gives back its buffers while idle; one with records left unread (a
    /// close_notify) is closed instead.
    pub fn put_tagged(
        &mut self,
        group: UpstreamId,
        peer: PeerId,
        (cap, timeout): (usize, Duration),
        mut stream: UpstreamStream,
        requests: u64,
        (tag, born): (u64, u64),
    ) {
        if !stream.settled() {
            return;
        }
        stream.release_buffers();
        let mut guard = self.shared.borrow_mut();
        let st = &mut *guard;
        if cap == 0 || peer >= st.lru.peer_count() {
            return;
        }
        // io_uring: the pool's readiness watch (ready.rs); epoll: a watcher task each.
        let fd = stream.raw_fd();
        let held = !monoio::utils::is_legacy();
        if held && !st.admit(&self.shared, fd, requests) {
            return;
        }
        while st.lru.group_len(group) >= cap {
            let Some(id) = st.lru.pop_lru(group) else {
                break;
            };
            st.close(id);
        }
        set_timeout(st, group, timeout);
        let id = st.alloc();
        st.set_tag(id, tag, born);
        let key = st.lru.push(group, peer, crate::clock::now_ms(), id);
        st.set_key(id, key);
        if held {
            st.hold(id, fd, stream, requests);
            return;
        }
        drop(guard);
        watch::spawn(self.shared.clone(), id, stream, requests);
    }

    /// Closes the connections idle past their group's `keepalive_timeout` at `now` (the
    /// milliseconds of `clock::now_ms`) and those of peers `down` says are down. Returns
    /// when the next idle connection comes due.
    pub fn sweep(&mut self, now: u64, down: impl Fn(PeerId) -> bool) -> Option<u64> {
        let mut guard = self.shared.borrow_mut();
        let st = &mut *guard;
        for g in 0..st.lru.group_count() {
            let cutoff = now.saturating_sub(st.timeouts[g]);
            while let Some(id) = st.lru.pop_idle_since(g, cutoff) {
                st.close(id);
            }
        }
        for p in 0..st.lru.peer_count() {
            if st.lru.peer_len(p) > 0 && down(p) {
                while let Some(id) = st.lru.pop_mru(p) {
                    st.close(id);
                }
            }
        }
        (0..st.lru.group_count())
            .filter_map(|g| Some(st.lru.oldest(g)? + st.timeouts[g]))
            .min()
    }

    /// Connections idle in the cache.
    #[cfg(test)]
    pub fn idle(&self) -> usize {
        self.shared.borrow().idle()
    }

    /// The pool of a new configuration generation: the idle connections of every peer that
    /// survived (`from[new id] = Some(old id)`) move over, oldest first, within the new
    /// group's `keepalive` and `keepalive_timeout` (`limits`); the rest are closed now.
    pub fn carry(
        mut old: Pool,
        from: &[Option<PeerId>],
        topo: &Topology,
        limits: impl Fn(UpstreamId) -> (usize, Duration),
    ) -> Pool {
        let shared = std::mem::take(&mut old.shared);
        let mut guard = shared.borrow_mut();
        let st = &mut *guard;
        let mut new_id = vec![None; st.lru.peer_count()];
        for (nid, oid) in from.iter().enumerate() {
            if let Some(slot) = oid.and_then(|o| new_id.get_mut(o)) {
                *slot = Some(nid);
            }
        }
        let mut old_lru = std::mem::replace(&mut st.lru, lru::Lru::new(from.len()));
        let mut idle: Vec<_> = (0..old_lru.group_count())
            .flat_map(|g| old_lru.drain_group(g).collect::<Vec<_>>())
            .collect();
        idle.sort_by_key(|&(_, since, _)| since);
        for (opeer, since, id) in idle {
            let moved = new_id[opeer].and_then(|n| Some((n, topo.group_of(n)?)));
            let Some((n, g)) = moved else {
                st.close(id);
                continue;
            };
            let (cap, timeout) = limits(g);
            if cap == 0 {
                st.close(id);
                continue;
            }
            set_timeout(st, g, timeout);
            if st.lru.group_len(g) >= cap {
                if let Some(evicted) = st.lru.pop_lru(g) {
                    st.close(evicted);
                }
            }
            let key = st.lru.push(g, n, since, id);
            st.set_key(id, key);
        }
        drop(guard);
        Pool { shared }
    }
}

fn set_timeout(st: &mut State, group: UpstreamId, timeout: Duration) {
    if st.timeouts.len() <= group {
        st.timeouts.resize(group + 1, 0);
    }
    st.timeouts[group] = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
}

impl Drop for Pool {
    /// The connections still idle here are closed (their watchers end).
    fn drop(&mut self) {
        let mut guard = self.shared.borrow_mut();
        let st = &mut *guard;
        for g in 0..st.lru.group_count() {
            while let Some(id) = st.lru.pop_lru(g) {
                st.close(id);
            }
        }
    }
}
