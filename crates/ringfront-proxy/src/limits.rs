//! nginx's preaccess phase: `limit_req` then `limit_conn` (nginx registers limit_conn's
//! handler first and runs a phase's handlers last-registered first), after the rewrite
//! phases and before allow/deny. The zones live in the snapshot, shared by every worker
//! (ringfront-limit's lock-free tables); a reload keeps a zone whose name, kind, size and
//! key did not change, as nginx keeps its shared memory.

use std::sync::Arc;
use std::time::Duration;

use ringfront_config::{LimitZone, Limits, LogLevel, ZoneKind};
use ringfront_limit::{conn::Acquire, ConnSlot, ConnTable, Rate, ReqTable, Verdict};

use crate::req::Req;
use crate::snapshot::Snapshot;

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

/// The `limit_conn` counts a request holds until it ends (nginx's pool cleanups).
#[derive(Default, Debug)]
pub struct Held(Vec<(Arc<ConnTable>, ConnSlot)>);

impl Held {
    fn take(mut self) -> Vec<(Arc<ConnTable>, ConnSlot)> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for (t, s) in self.0.drain(..) {
            t.release(s);
        }
    }
}

/// Whether the preaccess phase has anything to do for `loc`.
pub fn due(
    loc: &crate::snapshot::LocationRt,
    outcome: &crate::rewrite::Outcome<'_>,
    rw: &crate::rewrite_state::RwState,
) -> bool {
    let l = &loc.settings.limits;
    matches!(outcome, crate::rewrite::Outcome::Continue)
        && ((!l.req.is_empty() && rw.limit_req == 0) || (!l.conn.is_empty() && rw.limit_conn == 0))
}

/// nginx's preaccess phase for the location `loc` that answers: runs when the rewrite
/// phases went on to it (`return` and the like answer before), for each module once per
/// request (a module that already looked at a key does not run again after an internal
/// redirect, as nginx's `r->main->limit_*_status`). A refusal is the outcome's status.
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
    let done = {
        let with_rw = Req {
            rw: Some(&*rw),
            ..*req
        };
        let log = |level, msg: std::fmt::Arguments<'_>| {
            let ctx = with_rw.log_context(None);
            w.log(snap, level, req.conn_id, format_args!("{msg}{ctx}"));
        };
        preaccess(w, snap, l, (req_due, conn_due), &with_rw, &log).await
    };
    if req_due {
        rw.limit_req = done.req_status;
    }
    if conn_due {
        rw.limit_conn = done.conn_status;
    }
    rw.limit_held.0.extend(done.held.take());
    match done.refuse {
        Some(status) => crate::rewrite::Outcome::Status(status),
        None => outcome,
    }
}

/// What the preaccess phase decided.
#[derive(Default)]
pub struct Preaccess {
    /// The status to answer instead (`limit_req_status` / `limit_conn_status`).
    pub refuse: Option<u16>,
    /// `$limit_req_status` and `$limit_conn_status` codes.
    pub req_status: u8,
    pub conn_status: u8,
    pub held: Held,
}

/// The error log line writer of the request (adds nginx's `, client: ...` context).
pub type Log<'a> = &'a dyn Fn(LogLevel, std::fmt::Arguments<'_>);

/// Runs `limit_req` (waiting out a delay) and then `limit_conn` for the request, those
/// that are `due`.
async fn preaccess(
    w: &crate::worker::Worker,
    snap: &Snapshot,
    l: &Limits,
    (req_due, conn_due): (bool, bool),
    req: &Req<'_>,
    log: Log<'_>,
) -> Preaccess {
    let mut out = Preaccess::default();
    if req_due {
        let (status, refuse, delay) = limit_req(w, snap, l, req, log);
        out.req_status = status;
        if refuse.is_some() {
            out.refuse = refuse;
            return out;
        }
        if delay > 0 && !delayed(Duration::from_millis(delay), req, log).await {
            out.refuse = Some(CLIENT_GONE);
            return out;
        }
    }
    if conn_due {
        let (status, refuse, held) = limit_conn(w, snap, l, req, log);
        out.conn_status = status;
        out.refuse = refuse;
        out.held = held;
    }
    out
}

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

/// A zone's key for this request: `None` when empty, or too long (`max` bytes; nginx
/// logs it and does not account the request in that zone).
fn key(z: &ZoneRt, req: &Req<'_>, snap: &Snapshot, max: usize, log: Log<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    crate::vars::render(
        &mut out,
        &z.zone.key,
        &req.vars("", None, Some(snap)),
        false,
    );
    if out.len() > max {
        log(
            LogLevel::Error,
            format_args!(
                "the value of the \"{}\" key is more than {max} bytes: \"{}\"",
                z.zone.key_text,
                String::from_utf8_lossy(&out)
            ),
        );
        return None;
    }
    (!out.is_empty()).then_some(out)
}

/// nginx's `ngx_http_limit_req_handler`: the status code, the status to refuse with, and
/// the delay in milliseconds.
fn limit_req(
    w: &crate::worker::Worker,
    snap: &Snapshot,
    l: &Limits,
    req: &Req<'_>,
    log: Log<'_>,
) -> (u8, Option<u16>, u64) {
    let keys: Vec<(Option<&ZoneRt>, Option<Vec<u8>>)> = l
        .req
        .iter()
        .map(|r| {
            let z = snap.limit_zones.get(r.zone);
            (z, z.and_then(|z| key(z, req, snap, 65535, log)))
        })
        .collect();
    let mut limits = Vec::with_capacity(keys.len());
    for (r, (z, k)) in l.req.iter().zip(&keys) {
        let Some((Table::Req(table), ZoneKind::Req { rate })) = z.map(|z| (&z.table, z.zone.kind))
        else {
            continue;
        };
        limits.push(ringfront_limit::Limit {
            table,
            rate: Rate(rate),
            key: k.as_deref(),
            burst: r.burst,
            delay: r.delay,
        });
    }
    let name = |i: usize| {
        l.req
            .get(i)
            .and_then(|r| snap.limit_zones.get(r.zone))
            .map_or("", |z| z.zone.name.as_str())
    };
    let dry = if l.req_dry_run { ", dry run" } else { "" };
    let now = crate::clock::now_ms();
    match ringfront_limit::check(&limits, now) {
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
                None => w.log(
                    snap,
                    LogLevel::Alert,
                    0,
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
    w: &crate::worker::Worker,
    snap: &Snapshot,
    l: &Limits,
    req: &Req<'_>,
    log: Log<'_>,
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
        let Some(k) = key(z, req, snap, 255, log) else {
            continue;
        };
        status = 1;
        let refused = match table.acquire(&k, c.conn) {
            Acquire::Passed(slot) => {
                held.0.push((table.clone(), slot));
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
                w.log(
                    snap,
                    LogLevel::Crit,
                    0,
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
