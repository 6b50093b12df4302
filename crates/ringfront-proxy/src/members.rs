//! Run-time membership of upstream groups: each `server NAME resolve` line (a template) has
//! a list of concrete servers, its members, and a change of one list builds the next
//! snapshot from the configuration as read, with those members in place of the template.
//! The new snapshot adopts the old one's board entries, so an address that stays keeps its
//! health, failure counts, slow-start ramp, counters and pooled connections; a new one
//! enters fresh; a removed one drains (requests in flight finish on the old snapshot, its
//! idle pooled connections are not carried and close). One writer: the resolver's owner
//! thread and the API's write methods (api_write.rs) call [`Shared::set_members`]; a reload
//! carries the members of the templates it keeps (servers the API added or changed do not
//! survive a reload, unless the upstream keeps them in its `state` file).

use std::collections::HashMap;
use std::sync::Arc;

use ringfront_config::{Config, UpstreamServer};

use crate::snapshot::Snapshot;
use crate::Shared;

/// Which template: the upstream's name and the index of its `server` line. An index past
/// the upstream's lines names servers the API added; the key of a static line holds what
/// the API made of it (an empty list once deleted).
pub type TemplateKey = (String, usize);

/// The members of every template that has some.
pub type Members = HashMap<TemplateKey, Vec<UpstreamServer>>;

/// `cfg` with each template replaced by its members (none yet: no servers from it), and
/// each line an API changed replaced by what the API made of it.
pub fn expand(cfg: &Config, members: &Members) -> Config {
    let mut out = cfg.clone();
    for up in &mut out.http.upstreams {
        let named = |k: &TemplateKey| k.0 == up.name;
        if !up.servers.iter().any(|s| s.resolve.is_some()) && !members.keys().any(named) {
            continue;
        }
        up.servers = servers_of(up, members)
            .into_iter()
            .map(|(_, s)| s)
            .collect();
    }
    out
}

/// The servers of `up` with their ids (nginx Plus's server ids): a line gives the servers
/// of its index (a template its members, a static line itself unless the API changed it:
/// then the members of its key, none once deleted); keys past the lines come after them,
/// in index order.
pub fn servers_of(
    up: &ringfront_config::Upstream,
    members: &Members,
) -> Vec<(usize, UpstreamServer)> {
    let mut servers = Vec::with_capacity(up.servers.len());
    let lines = up.servers.len();
    for (i, s) in up.servers.iter().enumerate() {
        match members.get(&(up.name.clone(), i)) {
            Some(m) => servers.extend(m.iter().map(|m| (i, m.clone()))),
            None if s.resolve.is_none() => servers.push((i, s.clone())),
            None => {}
        }
    }
    let mut added: Vec<_> = members
        .iter()
        .filter(|((name, i), _)| *name == up.name && *i >= lines)
        .collect();
    added.sort_by_key(|((_, i), _)| *i);
    for ((_, i), m) in added {
        servers.extend(m.iter().map(|m| (*i, m.clone())));
    }
    servers
}

/// The id of each peer of `up`, in the status view's order (primary peers, then backups);
/// every address of one server shares its id.
pub fn peer_ids(up: &ringfront_config::Upstream, members: &Members) -> Vec<usize> {
    let list = servers_of(up, members);
    let peers = |s: &UpstreamServer| if s.unix.is_some() { 1 } else { s.addrs.len() };
    let mut out = Vec::new();
    for backup in [false, true] {
        for (id, s) in list.iter().filter(|(_, s)| s.backup == backup) {
            for _ in 0..peers(s) {
                out.push(*id);
            }
        }
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

/// A change of members that could not be built into a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unbuilt(pub String);

impl From<Unbuilt> for String {
    fn from(e: Unbuilt) -> String {
        e.0
    }
}

impl Shared {
    /// Replaces the members of one template and publishes the snapshot that follows;
    /// returns the members it had. Retries when a reload published meanwhile.
    pub fn set_members(
        &self,
        key: &TemplateKey,
        servers: Vec<UpstreamServer>,
    ) -> Result<Vec<UpstreamServer>, String> {
        self.change_members(&key.0, |_, members| {
            Ok::<_, String>(
                members
                    .insert(key.clone(), servers.clone())
                    .unwrap_or_default(),
            )
        })
    }

    /// Changes the members of group `group` with `f` (given the configuration as read and
    /// the members now) and publishes the snapshot that follows, unless `f` refuses. `f`
    /// runs again when another change or a reload published meanwhile, so it sees the
    /// members it changes.
    pub fn change_members<R, E: From<Unbuilt>>(
        &self,
        group: &str,
        f: impl Fn(&Config, &mut Members) -> Result<R, E>,
    ) -> Result<R, E> {
        loop {
            let cur = self.snapshot.load_full();
            let Some(cfg) = cur.config.clone() else {
                return Err(Unbuilt("no configuration to change".into()).into());
            };
            let mut members = (*cur.members).clone();
            let r = f(&cfg, &mut members)?;
            let mut snap = Snapshot::build_with(cfg, Arc::new(members), cur.generation + 1)
                .map_err(|e| Unbuilt(e.to_string()))?;
            snap.membership_only = true;
            snap.adopt(&cur);
            slow_start_new(&snap, group);
            if self.publish(&cur, Arc::new(snap)) {
                self.wake_all();
                return Ok(r);
            }
        }
    }
}

/// The peers of group `name` that `snap` did not carry over enter through their slow start
/// (in a group of more than one peer), as a peer coming back does; the health checker moves
/// the ramp on. A peer a `mandatory` check holds out (the snapshot starts it `CHECKING`)
/// gets its ramp again from the checker when its first probe lets it in.
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn cfg(servers: &str) -> Config {
        cfg_with(servers, "")
    }

    /// `location` is added to the location that proxies to `u`.
    fn cfg_with(servers: &str, location: &str) -> Config {
        let text = format!(
            "events {{}}\nhttp {{\nresolver 127.0.0.1;\nupstream u {{\nzone u 64k;\n{servers}\n}}\n\
             server {{ listen 127.0.0.1:1; location / {{ proxy_pass http://u; {location} }} }}\n}}\n"
        );
        let host = ringfront_config::MemoryHost::default();
        let path = std::path::Path::new("/t/m.conf");
        ringfront_config::parse_str(&text, path, &host).unwrap()
    }

    fn member(line: &UpstreamServer, addr: &str) -> UpstreamServer {
        let mut s = line.clone();
        s.resolve = None;
        s.addrs = vec![addr.parse::<SocketAddr>().unwrap()];
        s
    }

    fn names(snap: &Snapshot) -> Vec<String> {
        let up = &snap.topology.upstreams[0];
        up.ids()
            .filter_map(|id| up.peer(id).map(|p| p.name.clone()))
            .collect()
    }

    #[test]
    fn a_template_gives_its_members_and_a_static_line_stays() {
        let c = cfg("server 127.0.0.1:81;\nserver b.test:82 resolve weight=3;");
        let t = templates(&c);
        assert_eq!(t.len(), 1);
        let (key, line, _) = &t[0];
        assert_eq!(key, &("u".to_string(), 1));
        let empty = expand(&c, &Members::default());
        assert_eq!(empty.http.upstreams[0].servers.len(), 1);
        let mut m = Members::default();
        m.insert(
            key.clone(),
            vec![member(line, "127.0.0.1:82"), member(line, "[::1]:82")],
        );
        let snap = Snapshot::build_with(Arc::new(c), Arc::new(m), 1).unwrap();
        assert_eq!(names(&snap), ["127.0.0.1:81", "127.0.0.1:82", "[::1]:82"]);
        let p = snap.topology.upstreams[0].peer(snap.topology.upstreams[0].ids().start + 1);
        assert_eq!(p.map(|p| p.weight), Some(3));
    }

    #[test]
    fn a_reload_carries_members_of_the_same_name_on_the_new_port() {
        let old_cfg = cfg("server b.test:82 resolve;");
        let (key, line, _) = templates(&old_cfg).remove(0);
        let mut m = Members::default();
        m.insert(key, vec![member(&line, "127.0.0.1:82")]);
        let old = Snapshot::build_with(Arc::new(old_cfg), Arc::new(m), 1).unwrap();
        let new_cfg = cfg("server 127.0.0.1:81;\nserver b.test:83 resolve max_fails=0;");
        let kept = carried(&old, &new_cfg);
        let got = &kept[&("u".to_string(), 1)];
        assert_eq!(
            got[0].addrs,
            vec!["127.0.0.1:83".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(got[0].max_fails, 0);
        assert!(carried(&old, &cfg("server c.test:82 resolve;")).is_empty());
    }

    #[test]
    fn servers_added_without_a_line_come_after_the_lines() {
        let c = cfg("server 127.0.0.1:81;");
        let line = c.http.upstreams[0].servers[0].clone();
        let mut m = Members::default();
        m.insert(("u".into(), 7), vec![member(&line, "127.0.0.1:87")]);
        m.insert(("u".into(), 5), vec![member(&line, "127.0.0.1:85")]);
        let snap = Snapshot::build_with(Arc::new(c), Arc::new(m), 1).unwrap();
        assert_eq!(
            names(&snap),
            ["127.0.0.1:81", "127.0.0.1:85", "127.0.0.1:87"]
        );
    }

    #[test]
    fn the_key_of_a_static_line_replaces_it_and_ids_follow_the_keys() {
        let c = cfg("server 127.0.0.1:81;\nserver 127.0.0.1:82 backup;\nserver 127.0.0.1:83;");
        let line = c.http.upstreams[0].servers[0].clone();
        let mut m = Members::default();
        m.insert(("u".into(), 0), Vec::new());
        m.insert(("u".into(), 4), vec![member(&line, "127.0.0.1:84")]);
        let up = &c.http.upstreams[0];
        let ids: Vec<usize> = servers_of(up, &m).iter().map(|(i, _)| *i).collect();
        assert_eq!(ids, [1, 2, 4]);
        // The view lists primaries first, then backups.
        assert_eq!(peer_ids(up, &m), [2, 4, 1]);
        let snap = Snapshot::build_with(Arc::new(c), Arc::new(m), 1).unwrap();
        assert_eq!(
            names(&snap),
            ["127.0.0.1:83", "127.0.0.1:84", "127.0.0.1:82"]
        );
    }

    /// With a `mandatory` check a membership change holds out only the new peer; a reload
    /// of the same configuration holds out every peer until its next probe.
    #[test]
    fn a_membership_change_holds_out_only_its_new_peers() {
        use ringfront_upstream::{CHECKING, UP};
        let c = Arc::new(cfg_with(
            "server b.test:82 resolve;",
            "health_check uri=/h mandatory;",
        ));
        let (key, line, _) = templates(&c).remove(0);
        let with = |addrs: &[&str]| {
            let mut m = Members::default();
            m.insert(
                key.clone(),
                addrs.iter().map(|a| member(&line, a)).collect(),
            );
            Arc::new(m)
        };
        let old = Snapshot::build_with(c.clone(), with(&["127.0.0.1:82"]), 1).unwrap();
        let id = |snap: &Snapshot, name: &str| {
            let up = &snap.topology.upstreams[0];
            up.ids()
                .find(|&i| up.peer(i).is_some_and(|p| p.name == name))
                .unwrap()
        };
        let state = |snap: &Snapshot, name: &str| snap.board.get(id(snap, name)).unwrap().state();
        assert_eq!(state(&old, "127.0.0.1:82"), CHECKING, "held until probed");
        let h = old.board.get(id(&old, "127.0.0.1:82")).unwrap();
        h.state.store(UP, std::sync::atomic::Ordering::Relaxed);
        let two = with(&["127.0.0.1:82", "127.0.0.2:82"]);
        let mut grown = Snapshot::build_with(c.clone(), two.clone(), 2).unwrap();
        grown.membership_only = true;
        grown.adopt(&old);
        assert_eq!(state(&grown, "127.0.0.1:82"), UP, "the one that stays");
        assert_eq!(state(&grown, "127.0.0.2:82"), CHECKING, "the new one");
        let mut reloaded = Snapshot::build_with(c, two, 3).unwrap();
        reloaded.adopt(&grown);
        assert_eq!(
            state(&reloaded, "127.0.0.1:82"),
            CHECKING,
            "re-checked by a reload"
        );
    }
}
