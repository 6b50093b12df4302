//! nginx's preaccess phase: `limit_req` then `limit_conn` (nginx registers limit_conn's
//! handler first and runs a phase's handlers last-registered first), after the rewrite
//! phases and before allow/deny. The zones live in the snapshot, shared by every worker
//! (ringfront-limit's lock-free tables); a reload keeps a zone whose name, kind, size and
//! key did not change, as nginx keeps its shared memory.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use ringfront_config::{LimitZone, Limits, LogLevel, ZoneKind};
use ringfront_limit::{conn::Acquire, ConnSlot, ConnTable, KeyHash, Rate, ReqTable, Verdict};

use crate::req::Req;
use crate::snapshot::Snapshot;
use crate::vars::Vars;

/// `$limit_req_status` values, by nginx's numbering from 1.
const REQ_STATUS: [&str; 5] = [
    "PASSED",
    "DELAYED",
    "REJECTED",
    "DELAYED_DRY_RUN",
    "REJECTED_DRY_RUN",
];
/// `$limit_conn_status` values, from 1.
const CONN_STATUS: [&str; 3] = ["PASSED", "REJECTED", "REJECTED_DRY_RUN"];

#[derive(Debug, Clone)]
pub enum Table {
    Req(Arc<ReqTable>),
    Conn(Arc<ConnTable>),
}

/// A zone ready for requests.
#[derive(Debug, Clone)]
pub struct ZoneRt {
    pub zone: LimitZone,
    pub table: Table,
}

/// The configuration's zones, empty.
pub fn build(zones: &[LimitZone]) -> Vec<ZoneRt> {
    zones
        .iter()
        .map(|z| ZoneRt {
            zone: z.clone(),
            table: match z.kind {
                ZoneKind::Req { .. } => Table::Req(Arc::new(ReqTable::new(z.size))),
                ZoneKind::Conn => Table::Conn(Arc::new(ConnTable::new(z.size))),
            },
        })
        .collect()
}

/// After a reload: each zone of the old configuration with the same name, module, size and
/// key keeps its states (nginx keeps its shared memory; a new rate applies to them).
pub fn adopt(new: &mut [ZoneRt], old: &[ZoneRt]) {
    for z in new {
        let same = |o: &&ZoneRt| {
            let (a, b) = (&o.zone, &z.zone);
            a.name == b.name
                && a.size == b.size
                && a.key_text == b.key_text
                && matches!(
                    (a.kind, b.kind),
                    (ZoneKind::Req { .. }, ZoneKind::Req { .. }) | (ZoneKind::Conn, ZoneKind::Conn)
                )
        };
        if let Some(o) = old.iter().find(same) {
            z.table = o.table.clone();
        }
    }
}

/// `$limit_req_status` / `$limit_conn_status` for a request's recorded codes (0: unset).
pub fn req_status_text(code: u8) -> Option<&'static str> {
    REQ_STATUS.get(usize::from(code).checked_sub(1)?).copied()
}

pub fn conn_status_text(code: u8) -> Option<&'static str> {
    CONN_STATUS.get(usize::from(code).checked_sub(1)?).copied()
}

/// The `limit_conn` counts a request holds until it ends (nginx's pool cleanups): the
/// first `HELD` in place (the request's state), any further ones on the heap.
#[derive(Default, Debug)]
pub struct Held {
    inline: [Option<(Arc<ConnTable>, ConnSlot)>; HELD],
    more: Vec<(Arc<ConnTable>, ConnSlot)>,
}

/// `limit_conn`s of a request held without an allocation.
const HELD: usize = 4;

impl Held {
    fn push(&mut self, table: &Arc<ConnTable>, slot: ConnSlot) {
        self.put((table.clone(), slot));
    }

    fn put(&mut self, count: (Arc<ConnTable>, ConnSlot)) {
        match self.inline.iter_mut().find(|h| h.is_none()) {
            Some(free) => *free = Some(count),
            None => self.more.push(count),
        }
    }

    /// Takes over the counts of `other`.
    fn append(&mut self, mut other: Held) {
        for count in other.inline.iter_mut().filter_map(Option::take) {
            self.put(count);
        }
        for count in other.more.drain(..) {
            self.put(count);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Every request's state has one: most hold nothing (counts fill `inline` in order).
        if self.inline[0].is_none() {
            return;
        }
        for (t, s) in self.inline.iter_mut().filter_map(Option::take) {
            t.release(s);
        }
        for (t, s) in self.more.drain(..) {
            t.release(s);
        }
    }
}

/// Whether the preaccess phase has anything to do for `loc`: field tests.
#[inline]
pub fn due(
    loc: &crate::snapshot::LocationRt,
    outcome: &crate::rewrite::Outcome<'_>,
    rw: &crate::rewrite_state::RwState,
) -> bool {
    let l = &loc.settings.limits;
    ((!l.req.is_empty() && rw.limit_req == 0) || (!l.conn.is_empty() && rw.limit_conn == 0))
        && matches!(outcome, crate::rewrite::Outcome::Continue)
}

/// nginx's preaccess phase for the location `loc` that answers: runs when the rewrite
/// phases went on to it (`return` and the like answer before), for each module once per
/// request (a module that already looked at a key does not run again after an internal
/// redirect, as nginx's `r->main->limit_*_status`). A refusal is the outcome's status.
/// Runs `limit_req`, waits out its delay, then `limit_conn`; only a delay makes a future
/// of its own (boxed: the phase's state stays small in its caller's).
pub async fn phase<'s>(
    w: &crate::worker::Worker,
    snap: &Snapshot,
    req: &Req<'_>,
    loc: &crate::snapshot::LocationRt,
    outcome: crate::rewrite::Outcome<'s>,
    rw: &mut crate::rewrite_state::RwState,
) -> crate::rewrite::Outcome<'s> {
    let l = &loc.settings.limits;
    let req_due = !l.req.is_empty() && rw.limit_req == 0;
    let conn_due = !l.conn.is_empty() && rw.limit_conn == 0;
    if !due(loc, &outcome, rw) {
        return outcome;
    }
    let mut refuse = None;
    let mut held = Held::default();
    let (mut req_status, mut conn_status) = (0, 0);
    {
        let with_rw = Req {
            rw: Some(&*rw),
            ..*req
        };
        let log = |level, msg: std::fmt::Arguments<'_>| {
            let ctx = with_rw.log_context(None);
            w.log(snap, level, req.conn_id, format_args!("{msg}{ctx}"));
        };
        let alert = |level, msg: std::fmt::Arguments<'_>| w.log(snap, level, 0, msg);
        let vars = with_rw.vars("", None, Some(snap));
        if req_due {
            let delay;
            (req_status, refuse, delay) =
                limit_req(snap, l, &vars, (&log, &alert), crate::clock::now_ms());
            if refuse.is_none()
                && delay > 0
                && !Box::pin(delayed(Duration::from_millis(delay), &with_rw, &log)).await
            {
                refuse = Some(CLIENT_GONE);
            }
        }
        if conn_due && refuse.is_none() {
            (conn_status, refuse, held) = limit_conn(snap, l, &vars, (&log, &alert));
        }
    }
    if req_due {
        rw.limit_req = req_status;
    }
    if conn_due {
        rw.limit_conn = conn_status;
    }
    rw.limit_held.append(held);
    match refuse {
        Some(status) => crate::rewrite::Outcome::Status(status),
        None => outcome,
    }
}

/// The error log line writer of the request (adds nginx's `, client: ...` context).
pub type Log<'a> = &'a dyn Fn(LogLevel, std::fmt::Arguments<'_>);

/// The request's log, and the log for lines without the request's context (nginx's zone
/// allocation failures).
type Logs<'a> = (Log<'a>, Log<'a>);

/// nginx's 499: the client closed its connection during a delay.
pub const CLIENT_GONE: u16 = 499;

/// Waits out a delay; `false` when the client closed its connection first (nginx's delay
/// handler leaves the connection's reads to `ngx_http_test_reading`, which ends the
/// request then).
async fn delayed(wait: Duration, req: &Req<'_>, log: Log<'_>) -> bool {
    let sleep = monoio::time::sleep(wait);
    let mut watch = crate::client_gone::Watch::new(false);
    match crate::client_gone::unless_gone(req.client_conn, &mut watch, sleep).await {
        Ok(()) => true,
        Err(gone) => {
            let errno = gone
                .errno
                .map(|e| format!(" {}", ringfront_upstream::exchange::Errno(e)))
                .unwrap_or_default();
            log(
                LogLevel::Info,
                format_args!("client prematurely closed connection{errno}"),
            );
            false
        }
    }
}

thread_local! {
    /// The key being built, one buffer per worker thread that every request reuses (the
    /// tables need only its hash and length).
    static KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A buffer kept for keys up to this size (a longer one is given back after its request).
const KEY_KEPT: usize = 4096;

/// A zone's key for this request, hashed: `None` when empty, or too long (`max` bytes;
/// nginx logs it and does not account the request in that zone).
fn key(z: &ZoneRt, vars: &Vars<'_>, max: usize, log: Log<'_>) -> Option<KeyHash> {
    let build = |out: &mut Vec<u8>| {
        out.clear();
        crate::vars::render(out, &z.zone.key, vars, false);
        if out.len() > max {
            log(
                LogLevel::Error,
                format_args!(
                    "the value of the \"{}\" key is more than {max} bytes: \"{}\"",
                    z.zone.key_text,
                    String::from_utf8_lossy(out)
                ),
            );
            return None;
        }
        (!out.is_empty()).then(|| KeyHash::of(out))
    };
    KEY.with(|buf| match buf.try_borrow_mut() {
        Ok(mut out) => {
            let k = build(&mut out);
            if out.capacity() > KEY_KEPT {
                *out = Vec::new();
            }
            k
        }
        // Not reached (nothing renders a key while one is built); a buffer of its own.
        Err(_) => build(&mut Vec::new()),
    })
}

/// nginx's `ngx_http_limit_req_handler` at `now`: the status code, the status to refuse
/// with, and the delay in milliseconds.
fn limit_req(
    snap: &Snapshot,
    l: &Limits,
    vars: &Vars<'_>,
    (log, alert): Logs<'_>,
    now: u64,
) -> (u8, Option<u16>, u64) {
    let limit = |n: usize| {
        let r = l.req.get(n)?;
        let z = snap.limit_zones.get(r.zone)?;
        let (Table::Req(table), ZoneKind::Req { rate }) = (&z.table, z.zone.kind) else {
            return None;
        };
        Some(ringfront_limit::Limit {
            table,
            rate: Rate(rate),
            key: key(z, vars, 65535, log),
            burst: r.burst,
            delay: r.delay,
        })
    };
    let name = |i: usize| {
        l.req
            .get(i)
            .and_then(|r| snap.limit_zones.get(r.zone))
            .map_or("", |z| z.zone.name.as_str())
    };
    let dry = if l.req_dry_run { ", dry run" } else { "" };
    match ringfront_limit::check_each(l.req.len(), limit, now) {
        Verdict::Declined => (0, None, 0),
        Verdict::Passed => (1, None, 0),
        Verdict::Rejected { excess, limit } => {
            match excess {
                Some(e) => log(
                    l.req_log_level,
                    format_args!(
                        "limiting requests{dry}, excess: {}.{:03} by zone \"{}\"",
                        e / 1000,
                        e % 1000,
                        name(limit)
                    ),
                ),
                None => alert(
                    LogLevel::Alert,
                    format_args!(
                        "could not allocate node in limit_req zone \"{}\"",
                        name(limit)
                    ),
                ),
            }
            match l.req_dry_run {
                true => (5, None, 0),
                false => (3, Some(l.req_status), 0),
            }
        }
        Verdict::Delayed { ms, excess, limit } => {
            log(
                l.req_delay_level(),
                format_args!(
                    "delaying request{dry}, excess: {}.{:03}, by zone \"{}\"",
                    excess / 1000,
                    excess % 1000,
                    name(limit)
                ),
            );
            match l.req_dry_run {
                true => (4, None, 0),
                false => (2, None, ms),
            }
        }
    }
}

/// nginx's `ngx_http_limit_conn_handler`: the status code, the status to refuse with, the
/// counts held.
fn limit_conn(
    snap: &Snapshot,
    l: &Limits,
    vars: &Vars<'_>,
    (log, alert): Logs<'_>,
) -> (u8, Option<u16>, Held) {
    let mut held = Held::default();
    let mut status = 0;
    for c in &l.conn {
        let Some(z) = snap.limit_zones.get(c.zone) else {
            continue;
        };
        let Table::Conn(table) = &z.table else {
            continue;
        };
        let Some(k) = key(z, vars, 255, log) else {
            continue;
        };
        status = 1;
        let refused = match table.acquire_hashed(k, c.conn) {
            Acquire::Passed(slot) => {
                held.push(table, slot);
                continue;
            }
            Acquire::Busy => {
                let dry = if l.conn_dry_run { ", dry run," } else { "" };
                log(
                    l.conn_log_level,
                    format_args!("limiting connections{dry} by zone \"{}\"", z.zone.name),
                );
                true
            }
            Acquire::Full => {
                alert(
                    LogLevel::Crit,
                    format_args!(
                        "ngx_slab_alloc() failed: no memory in limit_conn_zone \"{}\"",
                        z.zone.name
                    ),
                );
                true
            }
        };
        if refused {
            drop(std::mem::take(&mut held));
            return match l.conn_dry_run {
                true => (3, None, held),
                false => (2, Some(l.conn_status), held),
            };
        }
    }
    (status, None, held)
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
