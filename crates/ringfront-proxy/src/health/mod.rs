//! The health checker: one thread with its own event loop that runs every active probe,
//! the `passive_health confirm` probes and the slow-start ramps, and writes the verdicts to
//! the shared board, where workers read them with plain atomic loads. Workers talk to it
//! only through an unbounded channel of [`Event`]s (sent on the rare failure paths); a send
//! wakes the checker's loop, as do reloads and the engine's quit/stop, so it sleeps until
//! then or until the next slow-start step, never on a fixed tick.
//!
//! Per peer the checker keeps one [`Machine`]: each active check's verdict with its
//! consecutive passes and fails, whether a confirm probe is in flight and whether a confirm
//! probe failed. The peer's board `state` is derived from it ([`Machine::desired`]):
//! any verdict unknown (a `mandatory` check never run) -> `CHECKING`; any verdict down or a
//! failed confirm probe -> `DOWN`; a confirm probe in flight -> `CHECKING`; else `UP`.
//! Every change of that state is one error-log line with its cause.

mod outcome;
mod probe;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ringfront_config::LogLevel;
use ringfront_upstream::{PeerHealth, StateChange, CHECKING, DOWN, UP};

use crate::check_rt::CheckRt;

use crate::snapshot::Snapshot;
use crate::wake::{Receiver, Signal};
use crate::{Shared, RUN};

/// What a worker tells the checker.
#[derive(Debug)]
pub enum Event {
    /// `passive_health confirm`: the peer reached `max_fails` and this worker moved it from
    /// `UP` to `CHECKING`; probe it now.
    Suspect(Arc<PeerHealth>),
    /// `passive_health nginx`: the peer reached `max_fails` (for the state-change log).
    Disabled(Arc<PeerHealth>),
    /// A failed-out peer answered a request again: its failures were forgiven.
    Recovered(Arc<PeerHealth>),
}

/// A slow-start ramp moves in this many steps (1 % of the weight each), so the checker
/// wakes 100 times per ramp rather than every few milliseconds; the per-window shares a
/// ramp produces are the same as with a finer step.
const RAMP_STEPS: u64 = 100;
/// ...but no step is shorter than this (the old fixed tick), for very short ramps.
const MIN_RAMP_STEP_MS: u64 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Unknown,
    Up,
    Down,
}

#[derive(Debug, Clone)]
struct CheckState {
    verdict: Verdict,
    passes: u32,
    fails: u32,
    /// When the last probe was sent (checker clock; 0: never probed).
    probed_ms: u64,
}

/// The checker's view of one peer.
struct Machine {
    group: String,
    name: String,
    addr: SocketAddr,
    health: Arc<PeerHealth>,
    slow_start_ms: u64,
    single: bool,
    /// Configured `down`: never probed.
    off: bool,
    max_fails: u32,
    fail_timeout: u64,
    confirm: bool,
    checks: Vec<CheckState>,
    suspect: bool,
    confirm_down: bool,
    /// `passive_health nginx`: failed out (for logging the return once).
    passive_out: bool,
    not_up_since_ms: Option<u64>,
    /// The state last written and logged: a change is logged against this, not against the
    /// board (which a reload or a worker may have changed first).
    logged: u8,
    /// A peer a membership change added while a `mandatory` check holds it out: its
    /// slow-start ramp begins when its first probe lets it in.
    ramp_when_up: bool,
}

impl Machine {
    /// Ends a period out of service: its length goes to the peer's downtime.
    fn close_downtime(&mut self, now: u64) {
        if let Some(since) = self.not_up_since_ms.take() {
            self.health
                .downtime_ms
                .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
        }
    }

    fn desired(&self) -> u8 {
        if self.checks.iter().any(|c| c.verdict == Verdict::Unknown) {
            CHECKING
        } else if self.confirm_down || self.checks.iter().any(|c| c.verdict == Verdict::Down) {
            DOWN
        } else if self.suspect {
            CHECKING
        } else {
            UP
        }
    }

    /// Records a state change (with its cause) for status pages and returns its log line:
    /// `upstream server ADDR of "GROUP" WORD: CAUSE`.
    fn record(&self, state: u8, word: &str, cause: String) -> String {
        let line = format!(
            "upstream server {} of \"{}\" {word}: {cause}",
            self.name, self.group
        );
        self.health.change.set(StateChange {
            at_unix_ms: crate::clock::unix_ms(),
            state,
            cause,
        });
        line
    }

    fn passive_summary(&self) -> String {
        let fails = self.health.fails();
        let kinds: Vec<&str> = self
            .health
            .recent_failures(fails.clamp(1, 8) as usize)
            .iter()
            .map(|k| k.name())
            .collect();
        format!("{fails} passive failures ({})", kinds.join(", "))
    }
}

struct Checker {
    shared: Arc<Shared>,
    snap: Arc<Snapshot>,
    machines: Vec<Machine>,
    /// Bumped at every reconfiguration; probe loops of an older epoch end.
    epoch: u64,
    /// The last reconfiguration was a membership change: the peers that stayed keep their
    /// probe schedule (their next probe one interval after their last).
    membership: bool,
    rng: u64,
    /// Wakes the checker's loop (a ramp started from a probe's verdict).
    wake: Rc<Signal>,
}

/// Milliseconds on the checker's monotonic clock (never 0).
fn now_ms() -> u64 {
    crate::clock::now_ms()
}

impl Checker {
    fn log(&self, level: LogLevel, msg: std::fmt::Arguments<'_>) {
        crate::logger::error_line(&self.shared.logger, &self.snap, level, "hc", 0, msg);
    }

    fn random(&mut self, below: u64) -> u64 {
        if below == 0 {
            return 0;
        }
        ringfront_upstream::splitmix64(&mut self.rng) % below
    }

    /// Machines for a new configuration: surviving peers (same group name and address)
    /// keep their verdicts when the group's checks did not change in number; `mandatory`
    /// checks without `persistent` start over as unknown after a reload, as in nginx Plus,
    /// but not after a membership change (DNS, the API: the same configuration as read),
    /// where only the new peers start unknown.
    fn reconfigure(&mut self, snap: Arc<Snapshot>, first: bool) {
        let membership = !first && same_config(&self.snap, &snap);
        let mut old: Vec<Machine> = std::mem::take(&mut self.machines);
        let mut machines = Vec::with_capacity(snap.topology.peer_count);
        for (gi, up) in snap.topology.upstreams.iter().enumerate() {
            let group = snap.groups.get(gi);
            let checks: &[CheckRt] = group.map_or(&[], |g| &g.checks);
            let confirm = group.is_some_and(|g| g.confirm);
            for id in up.ids() {
                let (Some(spec), Some(health)) = (up.peer(id), snap.board.arc(id)) else {
                    continue;
                };
                let prev = old
                    .iter()
                    .position(|m| m.group == up.name && m.name == spec.name)
                    .map(|i| old.swap_remove(i));
                let fresh = |c: &CheckRt| CheckState {
                    verdict: if c.mandatory {
                        Verdict::Unknown
                    } else {
                        Verdict::Up
                    },
                    passes: 0,
                    fails: 0,
                    probed_ms: 0,
                };
                let states = match &prev {
                    Some(p) if p.checks.len() == checks.len() && !first => checks
                        .iter()
                        .zip(&p.checks)
                        .map(|(c, s)| {
                            let keep = membership || (c.persistent && s.verdict == Verdict::Up);
                            if c.mandatory && !keep {
                                fresh(c)
                            } else {
                                s.clone()
                            }
                        })
                        .collect(),
                    _ => checks.iter().map(fresh).collect(),
                };
                let m = Machine {
                    group: up.name.clone(),
                    name: spec.name.clone(),
                    addr: spec.addr,
                    health: health.clone(),
                    slow_start_ms: spec.slow_start_ms,
                    single: up.single,
                    // A draining peer still serves its sticky sessions: it is checked.
                    off: spec.down && !spec.drain,
                    max_fails: spec.max_fails,
                    fail_timeout: spec.fail_timeout,
                    confirm,
                    checks: if spec.down && !spec.drain {
                        Vec::new()
                    } else {
                        states
                    },
                    suspect: prev.as_ref().is_some_and(|p| p.suspect),
                    confirm_down: prev.as_ref().is_some_and(|p| p.confirm_down) && confirm,
                    passive_out: prev.as_ref().is_some_and(|p| p.passive_out),
                    not_up_since_ms: prev.as_ref().and_then(|p| p.not_up_since_ms),
                    logged: prev.as_ref().map_or(health.state(), |p| p.logged),
                    ramp_when_up: match &prev {
                        Some(p) => p.ramp_when_up,
                        None => membership && checks.iter().any(|c| c.mandatory),
                    },
                };
                machines.push((id, m));
            }
        }
        machines.sort_by_key(|(id, _)| *id);
        self.machines = machines.into_iter().map(|(_, m)| m).collect();
        self.snap = snap;
        self.epoch += 1;
        self.membership = membership;
        let cause = if first {
            "configuration loaded"
        } else if membership {
            "servers changed"
        } else {
            "configuration reloaded"
        };
        for i in 0..self.machines.len() {
            self.apply(i, cause.into());
        }
    }

    /// Writes the machine's state to the board; logs and records a change.
    fn apply(&mut self, i: usize, cause: String) {
        let Some(m) = self.machines.get_mut(i) else {
            return;
        };
        let want = m.desired();
        m.health.state.store(want, Ordering::Relaxed);
        let was = std::mem::replace(&mut m.logged, want);
        if was == want {
            return;
        }
        let now = now_ms();
        if want == UP {
            m.close_downtime(now);
        } else if was == UP {
            m.not_up_since_ms = Some(now);
        }
        if want == DOWN {
            m.health.ejections.fetch_add(1, Ordering::Relaxed);
            // Workers close their idle pooled connections to it (their sweep wakes).
            self.shared.wake_workers();
        }
        let mut cause = cause;
        let entering = want == UP && was == CHECKING && m.ramp_when_up;
        if want == UP && (was == DOWN || entering) {
            cause.push_str(&start_ramp(m, now));
            self.wake.raise();
        }
        if want == UP {
            m.ramp_when_up = false;
        }
        let word = match want {
            UP => "marked up",
            DOWN => "marked down",
            _ => "held out for checking",
        };
        let line = m.record(want, word, cause);
        let level = if want == UP {
            LogLevel::Notice
        } else {
            LogLevel::Warn
        };
        self.log(level, format_args!("{line}"));
    }

    /// Milliseconds until the first probe of peer `i`'s check `check` in this epoch: soon,
    /// spread over 100 ms (mandatory peers wait for it), except for a peer that stayed
    /// through a membership change, which keeps its schedule: one interval after its last
    /// probe.
    fn first_probe_in(&mut self, i: usize, check: usize) -> u64 {
        let last = self
            .machines
            .get(i)
            .and_then(|m| m.checks.get(check))
            .map_or(0, |cs| cs.probed_ms);
        let interval = self
            .snap
            .topology
            .group_of(i)
            .and_then(|g| self.snap.groups.get(g))
            .and_then(|g| g.checks.get(check))
            .map(|k| u64::try_from(k.interval.as_millis()).unwrap_or(u64::MAX));
        match (self.membership, last, interval) {
            (true, 1.., Some(every)) => last.saturating_add(every).saturating_sub(now_ms()),
            _ => self.random(100),
        }
    }

    /// Peer `i`'s check `check` sends a probe now.
    fn probing(&mut self, i: usize, check: usize) {
        let cs = self
            .machines
            .get_mut(i)
            .and_then(|m| m.checks.get_mut(check));
        if let Some(cs) = cs {
            cs.probed_ms = now_ms();
        }
    }

    fn on_probe(&mut self, i: usize, check: usize, outcome: outcome::Outcome) {
        let Some(m) = self.machines.get_mut(i) else {
            return;
        };
        let Some((need_fails, need_passes, describe)) = self
            .snap
            .topology
            .group_of(i)
            .and_then(|g| self.snap.groups.get(g))
            .and_then(|g| g.checks.get(check))
            .map(|c| (c.fails, c.passes, c.describe.clone()))
        else {
            return;
        };
        let Some(cs) = m.checks.get_mut(check) else {
            return;
        };
        m.health.checks.fetch_add(1, Ordering::Relaxed);
        let cause = match &outcome {
            Ok(what) => {
                m.health.last_probe.store(1, Ordering::Relaxed);
                cs.passes = cs.passes.saturating_add(1);
                cs.fails = 0;
                match cs.verdict {
                    Verdict::Unknown => {
                        cs.verdict = Verdict::Up;
                        format!("first active check passed ({what}; {describe})")
                    }
                    Verdict::Down if cs.passes >= need_passes => {
                        cs.verdict = Verdict::Up;
                        format!("{} passed active checks ({what}; {describe})", cs.passes)
                    }
                    _ => String::new(),
                }
            }
            Err(why) => {
                m.health.checks_failed.fetch_add(1, Ordering::Relaxed);
                m.health.last_probe.store(2, Ordering::Relaxed);
                cs.fails = cs.fails.saturating_add(1);
                cs.passes = 0;
                match cs.verdict {
                    Verdict::Unknown => {
                        cs.verdict = Verdict::Down;
                        format!("first active check failed ({why}; {describe})")
                    }
                    Verdict::Up if cs.fails >= need_fails => {
                        cs.verdict = Verdict::Down;
                        format!("{} failed active checks ({why}; {describe})", cs.fails)
                    }
                    _ => String::new(),
                }
            }
        };
        if check == 0 {
            m.health.rise.store(cs.passes, Ordering::Relaxed);
            m.health.fall.store(cs.fails, Ordering::Relaxed);
        }
        if !cause.is_empty() {
            self.apply(i, cause);
        }
    }

    /// The answer of a confirm probe.
    fn on_confirm(&mut self, i: usize, outcome: outcome::Outcome, has_checks: bool) {
        let Some(m) = self.machines.get_mut(i) else {
            return;
        };
        if !m.suspect {
            return;
        }
        m.suspect = false;
        let summary = m.passive_summary();
        m.health.checks.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(what) => {
                m.health.last_probe.store(1, Ordering::Relaxed);
                m.health.fails.store(0, Ordering::Relaxed);
                let line = m.record(
                    UP,
                    "kept up",
                    format!(
                        "{summary} not confirmed: probe passed ({what}), failures blamed on the requests"
                    ),
                );
                // CHECKING -> UP: the peer was only held out for the probe's duration.
                let want = m.desired();
                m.health.state.store(want, Ordering::Relaxed);
                m.logged = want;
                m.close_downtime(now_ms());
                self.log(LogLevel::Notice, format_args!("{line}"));
            }
            Err(why) => {
                m.health.checks_failed.fetch_add(1, Ordering::Relaxed);
                m.health.last_probe.store(2, Ordering::Relaxed);
                if has_checks {
                    if let Some(cs) = m.checks.first_mut() {
                        cs.verdict = Verdict::Down;
                        cs.passes = 0;
                        cs.fails = cs.fails.saturating_add(1);
                    }
                } else {
                    m.confirm_down = true;
                }
                if m.not_up_since_ms.is_none() {
                    m.not_up_since_ms = Some(now_ms());
                }
                self.apply(i, format!("{summary} confirmed by failed probe ({why})"));
            }
        }
    }

    /// The answer of a re-probe of a peer whose confirm probe failed (groups without
    /// active checks).
    fn on_reprobe(&mut self, i: usize, outcome: outcome::Outcome) -> bool {
        let Some(m) = self.machines.get_mut(i) else {
            return true;
        };
        m.health.checks.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(what) => {
                m.health.last_probe.store(1, Ordering::Relaxed);
                m.confirm_down = false;
                m.health.fails.store(0, Ordering::Relaxed);
                self.apply(i, format!("probe passed ({what})"));
                true
            }
            Err(_) => {
                m.health.checks_failed.fetch_add(1, Ordering::Relaxed);
                m.health.last_probe.store(2, Ordering::Relaxed);
                false
            }
        }
    }

    fn find(&self, h: &Arc<PeerHealth>) -> Option<usize> {
        self.machines.iter().position(|m| Arc::ptr_eq(&m.health, h))
    }

    /// Moves every running ramp to where it is at `now`; how long until the next step is
    /// due (`None`: no ramp runs).
    fn ramps(&mut self, now: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        for m in &self.machines {
            let since = m.health.ramp_since_ms.load(Ordering::Relaxed);
            if since == 0 {
                continue;
            }
            let total = if m.single { 0 } else { m.slow_start_ms };
            let (r, wait) = ramp_at(now.saturating_sub(since), total);
            m.health.ramp.store(r, Ordering::Relaxed);
            match wait {
                Some(w) => next = Some(next.map_or(w, |n| n.min(w))),
                None => m.health.ramp_since_ms.store(0, Ordering::Relaxed),
            }
        }
        next
    }
}

/// A ramp `done` ms into `total` ms: its share of the weight in thousandths (at least 1),
/// and the milliseconds until its next step (`None`: finished, full weight).
fn ramp_at(done: u64, total: u64) -> (u32, Option<u64>) {
    if done >= total {
        return (1000, None);
    }
    let r = u32::try_from(done.saturating_mul(1000) / total).unwrap_or(1000);
    let step = (total / RAMP_STEPS).max(MIN_RAMP_STEP_MS);
    let to_next = step - done % step;
    (r.max(1), Some(to_next.min(total - done)))
}

/// `next` is a membership change of `prev` (DNS, the API): both were built from the very
/// same configuration as read. A reload reads a new one, and the changes after it carry
/// that one, so a reload the checker did not see on its own is not taken for a change.
fn same_config(prev: &Snapshot, next: &Snapshot) -> bool {
    match (&prev.config, &next.config) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// Starts a slow-start ramp when the peer has one; returns the text for the log line.
fn start_ramp(m: &Machine, now: u64) -> String {
    if m.slow_start_ms == 0 || m.single {
        return String::new();
    }
    m.health.ramp.store(1, Ordering::Relaxed);
    m.health.ramp_since_ms.store(now.max(1), Ordering::Relaxed);
    format!(", slow start over {}ms", m.slow_start_ms)
}

type Ctx = Rc<RefCell<Checker>>;

fn alive(c: &Ctx, epoch: u64) -> bool {
    let c = c.borrow();
    c.epoch == epoch && c.shared.state.load(Ordering::Relaxed) == RUN
}

/// Probes one peer with one active check, forever (until the configuration changes).
async fn probe_loop(c: Ctx, epoch: u64, i: usize, check: usize) {
    let first = c.borrow_mut().first_probe_in(i, check);
    monoio::time::sleep(Duration::from_millis(first)).await;
    loop {
        if !alive(&c, epoch) {
            return;
        }
        let (snap, addr) = {
            let cc = c.borrow();
            let Some(m) = cc.machines.get(i) else { return };
            (cc.snap.clone(), m.addr)
        };
        let Some(gi) = snap.topology.group_of(i) else {
            return;
        };
        let Some(k) = snap.groups.get(gi).and_then(|g| g.checks.get(check)) else {
            return;
        };
        c.borrow_mut().probing(i, check);
        let outcome = probe::probe(addr, k).await;
        if !alive(&c, epoch) {
            return;
        }
        let wait = {
            let mut cc = c.borrow_mut();
            cc.on_probe(i, check, outcome);
            let j = u64::try_from(k.jitter.as_millis()).unwrap_or(0);
            k.interval + Duration::from_millis(cc.random(j))
        };
        monoio::time::sleep(wait).await;
    }
}

/// A confirm probe, then (groups without active checks, probe failed) re-probes until one
/// passes.
async fn confirm(c: Ctx, epoch: u64, i: usize) {
    let (snap, addr, fail_timeout) = {
        let cc = c.borrow();
        let Some(m) = cc.machines.get(i) else { return };
        (cc.snap.clone(), m.addr, m.fail_timeout)
    };
    let Some(gi) = snap.topology.group_of(i) else {
        return;
    };
    let Some(g) = snap.groups.get(gi) else { return };
    let tcp = CheckRt::tcp_confirm(Duration::from_secs(fail_timeout.max(1)));
    let k = g.checks.first().unwrap_or(&tcp);
    let outcome = probe::probe(addr, k).await;
    if !alive(&c, epoch) {
        return;
    }
    c.borrow_mut().on_confirm(i, outcome, !g.checks.is_empty());
    if !g.checks.is_empty() {
        return;
    }
    loop {
        let down = c.borrow().machines.get(i).is_some_and(|m| m.confirm_down);
        if !down {
            return;
        }
        monoio::time::sleep(tcp.interval).await;
        if !alive(&c, epoch) {
            return;
        }
        let outcome = probe::probe(addr, &tcp).await;
        if !alive(&c, epoch) || c.borrow_mut().on_reprobe(i, outcome) {
            return;
        }
    }
}

fn spawn_probes(c: &Ctx) {
    let (epoch, work): (u64, Vec<(usize, usize)>) = {
        let cc = c.borrow();
        let work = cc
            .machines
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.off)
            .flat_map(|(i, m)| (0..m.checks.len()).map(move |k| (i, k)))
            .collect();
        (cc.epoch, work)
    };
    for (i, k) in work {
        monoio::spawn(probe_loop(c.clone(), epoch, i, k));
    }
    // A peer whose confirm probe failed before the reload keeps being re-probed.
    let pending: Vec<usize> = {
        let cc = c.borrow();
        cc.machines
            .iter()
            .enumerate()
            .filter(|(_, m)| m.confirm_down || m.suspect)
            .map(|(i, _)| i)
            .collect()
    };
    for i in pending {
        if let Some(m) = c.borrow_mut().machines.get_mut(i) {
            m.suspect = true;
        }
        monoio::spawn(confirm(c.clone(), epoch, i));
    }
}

fn handle(c: &Ctx, ev: Event) {
    let mut cc = c.borrow_mut();
    match ev {
        Event::Suspect(h) => {
            let Some(i) = cc.find(&h) else {
                // The peer left the configuration: nothing will probe it, so do not leave
                // it held out.
                let _ =
                    h.state
                        .compare_exchange(CHECKING, UP, Ordering::Relaxed, Ordering::Relaxed);
                return;
            };
            let epoch = cc.epoch;
            let Some(m) = cc.machines.get_mut(i) else {
                return;
            };
            if m.suspect || !m.confirm {
                return;
            }
            m.suspect = true;
            if m.not_up_since_ms.is_none() {
                m.not_up_since_ms = Some(now_ms());
            }
            drop(cc);
            monoio::spawn(confirm(c.clone(), epoch, i));
        }
        Event::Disabled(h) => {
            let Some(i) = cc.find(&h) else { return };
            let Some(m) = cc.machines.get_mut(i) else {
                return;
            };
            if m.passive_out {
                return;
            }
            m.passive_out = true;
            m.not_up_since_ms.get_or_insert_with(now_ms);
            let cause = format!(
                "{} reached max_fails={}, out for fail_timeout={}s",
                m.passive_summary(),
                m.max_fails,
                m.fail_timeout
            );
            let line = m.record(DOWN, "marked down", cause);
            cc.log(LogLevel::Warn, format_args!("{line}"));
        }
        Event::Recovered(h) => {
            let Some(i) = cc.find(&h) else { return };
            let Some(m) = cc.machines.get_mut(i) else {
                return;
            };
            m.passive_out = false;
            m.close_downtime(now_ms());
            let mut cause = "answered a request after its failed-out period".to_string();
            cause.push_str(&start_ramp(m, now_ms()));
            let line = m.record(UP, "marked up", cause);
            cc.log(LogLevel::Notice, format_args!("{line}"));
        }
    }
}

/// Starts the checker thread. It ends when the engine leaves the `RUN` state (and wakes it).
/// `started` gets a message once the checker holds the first configuration's peer states
/// (it is dropped unsent when the checker cannot start).
pub fn spawn(
    shared: Arc<Shared>,
    rx: Receiver<Event>,
    started: std::sync::mpsc::Sender<()>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ringfront-hc".into())
        .spawn(move || {
            let rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build();
            let mut rt = match rt {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("ringfront: [alert] health checker cannot start: {e}");
                    return;
                }
            };
            rt.block_on(run(shared, rx, started));
        })
}

async fn run(shared: Arc<Shared>, rx: Receiver<Event>, started: std::sync::mpsc::Sender<()>) {
    let snap = shared.snapshot.load_full();
    let seed = crate::clock::unix_ms() ^ u64::from(std::process::id()).rotate_left(32);
    let wake = Rc::new(Signal::default());
    if let Err(e) = rx.bell.install(wake.clone()) {
        eprintln!("ringfront: [alert] health checker cannot start: {e}");
        return;
    }
    let c: Ctx = Rc::new(RefCell::new(Checker {
        shared: shared.clone(),
        snap: snap.clone(),
        machines: Vec::new(),
        epoch: 0,
        membership: false,
        rng: seed,
        wake: wake.clone(),
    }));
    c.borrow_mut().reconfigure(snap, true);
    spawn_probes(&c);
    let _ = started.send(());
    // Each pass looks at everything a wakeup can be for; the bell is cleared before the
    // look, so a change made during it rings again.
    loop {
        if shared.state.load(Ordering::SeqCst) != RUN {
            return;
        }
        let latest = shared.snapshot.load_full();
        if latest.generation != c.borrow().snap.generation {
            c.borrow_mut().reconfigure(latest, false);
            spawn_probes(&c);
        }
        while let Ok(ev) = rx.rx.try_recv() {
            handle(&c, ev);
        }
        let next_step = c.borrow_mut().ramps(now_ms());
        match next_step {
            Some(ms) => {
                monoio::select! {
                    _ = wake.wait() => {}
                    _ = monoio::time::sleep(Duration::from_millis(ms)) => {}
                }
            }
            None => wake.wait().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ramp_at;

    #[test]
    fn a_ramp_steps_one_hundredth_of_its_length() {
        // 3 s: a step every 30 ms, aligned on the ramp's start.
        assert_eq!(ramp_at(0, 3000), (1, Some(30)));
        assert_eq!(ramp_at(30, 3000), (10, Some(30)));
        assert_eq!(ramp_at(47, 3000), (15, Some(13)));
        assert_eq!(ramp_at(1500, 3000), (500, Some(30)));
        assert_eq!(ramp_at(2990, 3000), (996, Some(10)));
        assert_eq!(ramp_at(3000, 3000), (1000, None));
        assert_eq!(ramp_at(9000, 3000), (1000, None));
    }

    #[test]
    fn short_ramps_step_no_faster_than_5ms_and_none_is_done_at_once() {
        assert_eq!(ramp_at(0, 200), (1, Some(5)));
        assert_eq!(ramp_at(198, 200), (990, Some(2)));
        assert_eq!(ramp_at(0, 0), (1000, None));
    }
}
