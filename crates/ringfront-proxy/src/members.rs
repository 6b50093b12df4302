//! Run-time membership of upstream groups: each `server NAME resolve` line (a template) has
//! a list of concrete servers, its members, and a change of one list builds the next
//! snapshot from the configuration as read, with those members in place of the template.
//! The new snapshot adopts the old one's board entries, so an address that stays keeps its
//! health, failure counts, slow-start ramp, counters and pooled connections; a new one
//! enters fresh; a removed one drains (requests in flight finish on the old snapshot, its
//! idle pooled connections are not carried and close). One writer: the resolver's owner
//! thread (and later an API) calls [`Shared::set_members`]; a reload carries the members of
//! the templates it keeps.

use std::collections::HashMap;
use std::sync::Arc;

use ringfront_config::{Config, UpstreamServer};

use crate::snapshot::Snapshot;
use crate::Shared;

/// Which template: the upstream's name and the index of its `server` line.
pub type TemplateKey = (String, usize);

/// The members of every template that has some.
pub type Members = HashMap<TemplateKey, Vec<UpstreamServer>>;

/// `cfg` with each template replaced by its members (none yet: no servers from it).
pub fn expand(cfg: &Config, members: &Members) -> Config {
    let mut out = cfg.clone();
    for up in &mut out.http.upstreams {
        if !up.servers.iter().any(|s| s.resolve.is_some()) {
            continue;
        }
        let mut servers = Vec::with_capacity(up.servers.len());
        for (i, s) in up.servers.iter().enumerate() {
            match &s.resolve {
                None => servers.push(s.clone()),
                Some(_) => {
                    if let Some(m) = members.get(&(up.name.clone(), i)) {
                        servers.extend(m.iter().cloned());
                    }
                }
            }
        }
        up.servers = servers;
    }
    out
}

/// The templates of `cfg`: key, the template line, and the upstream's resolver settings.
pub fn templates(
    cfg: &Config,
) -> Vec<(
    TemplateKey,
    UpstreamServer,
    ringfront_config::resolver::ResolverSettings,
)> {
    let mut out = Vec::new();
    for up in &cfg.http.upstreams {
        let Some(rs) = &up.resolver else { continue };
        for (i, s) in up.servers.iter().enumerate() {
            if s.resolve.is_some() {
                out.push(((up.name.clone(), i), s.clone(), rs.clone()));
            }
        }
    }
    out
}

/// The members `cfg`'s templates start with after a reload: those of `old`'s template of
/// the same upstream asking the same name (nginx 1.27.3's "preresolve"), remade from the
/// new line (its parameters, and its port unless SRV records gave the ports).
pub fn carried(old: &Snapshot, cfg: &Config) -> Members {
    let mut out = Members::default();
    let Some(old_cfg) = &old.config else {
        return out;
    };
    let old_templates = templates(old_cfg);
    for (key, line, _) in templates(cfg) {
        let Some(spec) = &line.resolve else { continue };
        let before = old_templates.iter().find(|(k, l, _)| {
            let asks = l.resolve.as_ref().map(|r| (&r.host, &r.service));
            k.0 == key.0 && asks == Some((&spec.host, &spec.service))
        });
        let Some(servers) = before.and_then(|(k, _, _)| old.members.get(k)) else {
            continue;
        };
        let remade = servers.iter().map(|m| remake(&line, spec, m)).collect();
        out.insert(key, remade);
    }
    out
}

/// A member made anew from a reloaded template line.
fn remake(
    line: &UpstreamServer,
    spec: &ringfront_config::resolver::ResolveSpec,
    m: &UpstreamServer,
) -> UpstreamServer {
    let mut s = line.clone();
    s.resolve = None;
    s.addrs = m
        .addrs
        .iter()
        .map(|a| match spec.service {
            None => std::net::SocketAddr::new(a.ip(), spec.port),
            Some(_) => *a,
        })
        .collect();
    if spec.service.is_some() {
        s.text = m.text.clone();
        s.weight = if line.weight != 1 {
            line.weight
        } else {
            m.weight
        };
        s.backup = line.backup || m.backup;
    }
    s
}

impl Shared {
    /// Replaces the members of one template and publishes the snapshot that follows;
    /// returns the members it had. Retries when a reload published meanwhile.
    pub fn set_members(
        &self,
        key: &TemplateKey,
        servers: Vec<UpstreamServer>,
    ) -> Result<Vec<UpstreamServer>, String> {
        loop {
            let cur = self.snapshot.load_full();
            let Some(cfg) = cur.config.clone() else {
                return Err("no configuration to change".into());
            };
            let mut members = (*cur.members).clone();
            let before = members
                .insert(key.clone(), servers.clone())
                .unwrap_or_default();
            let mut snap = Snapshot::build_with(cfg, Arc::new(members), cur.generation + 1)
                .map_err(|e| e.to_string())?;
            snap.membership_only = true;
            snap.adopt(&cur);
            slow_start_new(&snap, &key.0);
            let prev = self.snapshot.compare_and_swap(&cur, Arc::new(snap));
            if Arc::ptr_eq(&prev, &cur) {
                self.wake_all();
                return Ok(before);
            }
        }
    }
}

/// The peers of group `name` that `snap` did not carry over enter through their slow start
/// (in a group of more than one peer), as a peer coming back does; the health checker moves
/// the ramp on.
fn slow_start_new(snap: &Snapshot, name: &str) {
    let (Some(carried), Some(gid)) = (&snap.carried, snap.topology.find(name)) else {
        return;
    };
    let Some(up) = snap.topology.upstreams.get(gid) else {
        return;
    };
    if up.ids().len() < 2 {
        return;
    }
    let now = crate::clock::now_ms().max(1);
    for id in up.ids() {
        let fresh = carried.from.get(id).is_some_and(Option::is_none);
        let ramps = up.peer(id).is_some_and(|p| p.slow_start_ms > 0);
        if let (true, true, Some(h)) = (fresh, ramps, snap.board.get(id)) {
            h.ramp.store(1, std::sync::atomic::Ordering::Relaxed);
            h.ramp_since_ms
                .store(now, std::sync::atomic::Ordering::Relaxed);
        }
    }
}
