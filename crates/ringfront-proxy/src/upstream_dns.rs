//! The owner thread of `server NAME resolve [service=NAME]` (nginx 1.27.3's upstream zone
//! resolver): one thread for all workers asks each template's name through the upstream's
//! resolver, again when the answer's TTL (or `valid=`) has run out, and hands a changed set
//! to [`Shared::set_members`] with one notice line naming the old and new sets. Beyond
//! nginx: a name that stops resolving (NXDOMAIN included) keeps its last good set and says
//! so in the error log; nginx drops the servers on NXDOMAIN. A failed lookup is retried
//! after `resolver_timeout` (1 s at least), as nginx.
//!
//! Between lookups the thread sleeps until the next name is due, or until the engine rings
//! its bell (a reload, a stop, a published membership): with no `resolve` line it never wakes, so it takes no
//! turn on a worker's core.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ringfront_config::resolver::{ResolveSpec, ResolverSettings};
use ringfront_config::{LogLevel, UpstreamServer};

use crate::dns::{self, wire, Failure, WorkerDns};
use crate::members::{self, TemplateKey};
use crate::{wake, Shared};

/// How long the thread sleeps when no name is due and nothing rings (it looks again then).
const IDLE: Duration = Duration::from_secs(3600);

/// Starts the thread; `bell` rings after the engine changed its state or snapshot.
pub fn spawn(shared: Arc<Shared>, bell: wake::Bell) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ringfront-dns".into())
        .spawn(move || {
            let rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build();
            let alert = |e: std::io::Error| {
                eprintln!("ringfront: [alert] upstream resolver cannot start: {e}");
            };
            match rt {
                Ok(mut rt) => rt.block_on(async move {
                    let signal = Rc::new(wake::Signal::default());
                    match bell.install(signal.clone()) {
                        Ok(()) => run(shared, signal).await,
                        Err(e) => alert(e),
                    }
                }),
                Err(e) => alert(e),
            }
        })
}

/// One template's schedule.
struct Due {
    at: Instant,
    /// The line as it was when scheduled (a reload that changes it starts over).
    line: (String, Option<ResolveSpec>),
    /// A lookup for it runs (each template has its own task, so a name that times out
    /// delays no other).
    busy: bool,
}

type Schedule = Rc<RefCell<HashMap<TemplateKey, Due>>>;

/// The schedule's loop, until the engine leaves `RUN` (a lookup in flight is dropped with
/// the runtime: a stop does not wait for it, as it may take `resolver_timeout`).
async fn run(shared: Arc<Shared>, signal: Rc<wake::Signal>) {
    let dns = Rc::new(WorkerDns::default());
    let due: Schedule = Rc::default();
    while shared.state.load(Ordering::Relaxed) == crate::RUN {
        let snap = shared.snapshot.load_full();
        let Some(cfg) = snap.config.clone() else {
            signal.wait().await;
            continue;
        };
        let list = members::templates(&cfg);
        due.borrow_mut()
            .retain(|k, _| list.iter().any(|(key, _, _)| key == k));
        let now = Instant::now();
        for (key, line, rs) in list {
            if !take_due(&due, &key, &line, now) {
                continue;
            }
            let (shared, dns, due) = (shared.clone(), dns.clone(), due.clone());
            let signal = signal.clone();
            monoio::spawn(async move {
                let wait = refresh(&shared, &dns, &key, &line, &rs).await;
                if let Some(d) = due.borrow_mut().get_mut(&key) {
                    // A reload that changed the line meanwhile wants it asked at once.
                    if d.line == (line.text.clone(), line.resolve.clone()) {
                        d.at = Instant::now() + wait;
                    }
                    d.busy = false;
                }
                // The loop sleeps until the earliest time due: this one is new.
                signal.raise();
            });
        }
        let next = due
            .borrow()
            .values()
            .filter(|d| !d.busy)
            .map(|d| d.at)
            .min();
        let nap = next.map_or(IDLE, |at| at.saturating_duration_since(Instant::now()));
        monoio::select! {
            _ = monoio::time::sleep(nap) => {}
            _ = signal.wait() => {}
        }
    }
}

/// Whether `key` is due at `now` (marking it busy); a template whose line a reload
/// changed is due at once.
fn take_due(due: &Schedule, key: &TemplateKey, line: &UpstreamServer, now: Instant) -> bool {
    let id = (line.text.clone(), line.resolve.clone());
    let mut due = due.borrow_mut();
    let d = due.entry(key.clone()).or_insert(Due {
        at: now,
        line: id.clone(),
        busy: false,
    });
    if d.line != id {
        d.line = id;
        d.at = now;
    }
    if d.busy || d.at > now {
        return false;
    }
    d.busy = true;
    true
}

/// Resolves one template and publishes a changed set; how long until the next time.
async fn refresh(
    shared: &Shared,
    dns: &WorkerDns,
    key: &TemplateKey,
    line: &UpstreamServer,
    rs: &ResolverSettings,
) -> Duration {
    let (Some(spec), Some(conf)) = (&line.resolve, &rs.resolver) else {
        return Duration::from_secs(3600);
    };
    let log = |level: LogLevel, text: &str| {
        let snap = shared.snapshot.load();
        crate::logger::error_line(
            &shared.logger,
            &snap,
            level,
            "dns",
            0,
            format_args!("{text}"),
        );
    };
    let quiet = |text: &str| log(LogLevel::Error, text);
    let retry = rs.timeout.max(Duration::from_secs(1));
    let found = match members_of(dns, conf, rs.timeout, line, spec, &quiet).await {
        Ok(found) => found,
        Err((name, f)) => {
            let kept = shared.snapshot.load().members.get(key).map_or(0, Vec::len);
            log(
                LogLevel::Error,
                &format!(
                    "{name} could not be resolved ({}) in upstream \"{}\", its {kept} \
                     server(s) from \"{}\" are kept",
                    f.text(),
                    key.0,
                    line.text
                ),
            );
            return retry;
        }
    };
    let (servers, ttl) = found;
    let valid = conf.valid.unwrap_or(Duration::from_secs(u64::from(ttl)));
    let wait = valid + Duration::from_secs(1);
    let old = shared
        .snapshot
        .load()
        .members
        .get(key)
        .cloned()
        .unwrap_or_default();
    if same(&old, &servers) {
        return wait;
    }
    let new_set = describe(&servers);
    match shared.set_members(key, servers) {
        Ok(before) => log(
            LogLevel::Notice,
            &format!(
                "upstream \"{}\" server \"{}\" resolved: [{}] -> [{new_set}]",
                key.0,
                line.text,
                describe(&before)
            ),
        ),
        Err(e) => log(
            LogLevel::Error,
            &format!("upstream \"{}\" cannot change its servers: {e}", key.0),
        ),
    }
    wait
}

/// The servers a template stands for now, and the smallest TTL; or the name that failed.
async fn members_of(
    dns: &WorkerDns,
    conf: &Arc<ringfront_config::resolver::Resolver>,
    timeout: Duration,
    line: &UpstreamServer,
    spec: &ResolveSpec,
    log: &dyn Fn(&str),
) -> Result<(Vec<UpstreamServer>, u32), (String, Failure)> {
    let name = spec.query_name();
    let addr_types = address_types(conf);
    let start = dns.start_for(conf);
    if spec.service.is_none() {
        let found = dns::lookup(dns, conf, timeout, &name, &addr_types, start, log)
            .await
            .map_err(|f| (name.clone(), f))?;
        let servers = found
            .addrs
            .iter()
            .map(|ip| {
                member(
                    line,
                    SocketAddr::new(*ip, spec.port),
                    &line.text,
                    line.weight,
                    line.backup,
                )
            })
            .collect();
        return Ok((servers, found.ttl));
    }
    let found = dns::lookup(dns, conf, timeout, &name, &[wire::TYPE_SRV], start, log)
        .await
        .map_err(|f| (name.clone(), f))?;
    let lowest = found.srvs.iter().map(|s| s.priority).min().unwrap_or(0);
    let mut servers = Vec::new();
    let mut ttl = found.ttl;
    for srv in &found.srvs {
        let target = dns::lookup(dns, conf, timeout, &srv.target, &addr_types, start, log).await;
        let Ok(t) = target else {
            if let Err(f) = target {
                log(&format!(
                    "{} could not be resolved ({}) while resolving service {} of {}",
                    srv.target,
                    f.text(),
                    spec.service.as_deref().unwrap_or(""),
                    spec.host
                ));
            }
            continue;
        };
        ttl = ttl.min(t.ttl);
        // nginx: the template's weight, unless it is the default 1; then the record's.
        let weight = if line.weight != 1 {
            line.weight
        } else {
            u32::from(srv.weight).max(1)
        };
        let backup = line.backup || srv.priority != lowest;
        for ip in &t.addrs {
            let addr = SocketAddr::new(*ip, srv.port);
            servers.push(member(line, addr, &srv.target, weight, backup));
        }
    }
    if servers.is_empty() && !found.srvs.is_empty() {
        return Err((name, Failure::Code(3)));
    }
    Ok((servers, ttl))
}

fn address_types(conf: &ringfront_config::resolver::Resolver) -> Vec<u16> {
    let mut t = Vec::new();
    if conf.ipv4 {
        t.push(wire::TYPE_A);
    }
    if conf.ipv6 {
        t.push(wire::TYPE_AAAA);
    }
    t
}

/// A concrete server from `line` at `addr`.
fn member(
    line: &UpstreamServer,
    addr: SocketAddr,
    text: &str,
    weight: u32,
    backup: bool,
) -> UpstreamServer {
    let mut s = line.clone();
    s.resolve = None;
    s.addrs = vec![addr];
    s.text = text.to_string();
    s.weight = weight;
    s.backup = backup;
    s
}

/// Two sets hold the same servers (addresses, weights, backup flags, names), in any order.
fn same(a: &[UpstreamServer], b: &[UpstreamServer]) -> bool {
    let key = |s: &UpstreamServer| (s.addrs.clone(), s.weight, s.backup, s.text.clone());
    let mut x: Vec<_> = a.iter().map(key).collect();
    let mut y: Vec<_> = b.iter().map(key).collect();
    x.sort();
    y.sort();
    x == y
}

/// `127.0.0.1:8081 127.0.0.1:8082 backup` for the log line.
fn describe(servers: &[UpstreamServer]) -> String {
    let mut parts: Vec<String> = servers
        .iter()
        .flat_map(|s| {
            s.addrs.iter().map(move |a| {
                let mut t = a.to_string();
                if s.weight != 1 {
                    t.push_str(&format!(" weight={}", s.weight));
                }
                if s.backup {
                    t.push_str(" backup");
                }
                t
            })
        })
        .collect();
    parts.sort();
    parts.join(", ")
}
