//! nginx's `limit_req_zone`, `limit_req`, `limit_req_status`, `limit_req_log_level`,
//! `limit_req_dry_run` and the `limit_conn_*` counterparts, with nginx's messages. Zones
//! are registered by name as nginx's `ngx_shared_memory_add` does: a `limit_req` may name a
//! zone declared later in the file; a name never given a size is nginx's "zero size shared
//! memory zone" once the whole file is read.

use std::cell::RefCell;

use crate::error::ConfigError;
use crate::limits_model::{ConnLimit, LimitZone, Limits, ReqLimit, ZoneKind};
use crate::model::{LogLevel, Origin, Template};
use crate::tree::Directive;
use crate::units::parse_size;
use crate::values::{directive_err, err, flag, set_once, template};

/// nginx's smallest shared zone: 8 pages.
const MIN_ZONE: u64 = 8 * 4096;
/// `nodelay`: `NGX_MAX_INT_T_VALUE / 1000`, times 1000.
const NODELAY: u64 = (i64::MAX as u64 / 1000) * 1000;

/// A zone as registered so far: `size` 0 and no key until its `*_zone` line is read.
#[derive(Debug, Clone)]
struct Registered {
    name: String,
    kind: ZoneKind,
    key: Option<(String, Template)>,
    size: u64,
    origin: Origin,
}

thread_local! {
    static ZONES: RefCell<Vec<Registered>> = const { RefCell::new(Vec::new()) };
}

/// Starts an http block's registry.
pub(crate) fn begin() {
    ZONES.with(|z| z.borrow_mut().clear());
}

/// The http block's zones, in registration order (`ReqLimit::zone` indexes them); a zone
/// named and never sized is nginx's error (without a place, as nginx prints it). `others`:
/// the upstream zones' names, the same namespace in nginx.
pub(crate) fn take(others: &[String]) -> Result<Vec<LimitZone>, ConfigError> {
    let zones = ZONES.with(|z| std::mem::take(&mut *z.borrow_mut()));
    if let Some(z) = zones.iter().find(|z| others.contains(&z.name)) {
        return Err(ConfigError::at(
            format!(
                "the shared memory zone \"{}\" is already declared for a different use",
                z.name
            ),
            &z.origin,
        ));
    }
    Ok(zones
        .into_iter()
        .map(|z| {
            let (key_text, key) = z.key.unwrap_or_default();
            LimitZone {
                name: z.name,
                kind: z.kind,
                key_text,
                key,
                size: z.size,
            }
        })
        .collect())
}

/// nginx's check once the configuration is read: every zone got a size.
pub(crate) fn check_sizes(zones: &[LimitZone]) -> Result<(), ConfigError> {
    match zones.iter().find(|z| z.size == 0) {
        Some(z) => Err(ConfigError::new(format!(
            "zero size shared memory zone \"{}\"",
            z.name
        ))),
        None => Ok(()),
    }
}

/// `ngx_shared_memory_add`: the zone called `name` for `kind` (a placeholder when new),
/// its size set or checked against `size` (0: none given here).
fn register(d: &Directive, name: &str, kind: ZoneKind, size: u64) -> Result<usize, ConfigError> {
    ZONES.with(|z| {
        let mut zones = z.borrow_mut();
        let Some(i) = zones.iter().position(|z| z.name == name) else {
            zones.push(Registered {
                name: name.to_string(),
                kind,
                key: None,
                size,
                origin: d.origin.clone(),
            });
            return Ok(zones.len() - 1);
        };
        let z = &mut zones[i];
        let same_module = matches!(
            (z.kind, kind),
            (ZoneKind::Req { .. }, ZoneKind::Req { .. }) | (ZoneKind::Conn, ZoneKind::Conn)
        );
        if !same_module {
            return Err(err(
                d,
                format!(
                    "the shared memory zone \"{name}\" is already declared for a different use"
                ),
            ));
        }
        if z.size == 0 {
            z.size = size;
        }
        if size != 0 && size != z.size {
            return Err(err(
                d,
                format!(
                    "the size {size} of shared memory zone \"{name}\" conflicts with already \
                     declared size {}",
                    z.size
                ),
            ));
        }
        Ok(i)
    })
}

/// The limits one level wrote (`None`: not written here, inherited).
#[derive(Debug, Clone, Default)]
pub(crate) struct LimitsLevel {
    req: Option<Vec<ReqLimit>>,
    req_status: Option<u16>,
    req_log_level: Option<LogLevel>,
    req_dry_run: Option<bool>,
    conn: Option<Vec<ConnLimit>>,
    conn_status: Option<u16>,
    conn_log_level: Option<LogLevel>,
    conn_dry_run: Option<bool>,
}

impl LimitsLevel {
    /// Reads one of the module's directives; `false` when `d` is none of them.
    pub(crate) fn apply(&mut self, d: &Directive) -> Result<bool, ConfigError> {
        match d.name.as_str() {
            "limit_req_zone" => zone_line(d, true)?,
            "limit_conn_zone" => zone_line(d, false)?,
            "limit_req" => self.limit_req(d)?,
            "limit_conn" => self.limit_conn(d)?,
            "limit_req_status" => set_once(&mut self.req_status, status(d)?, d)?,
            "limit_conn_status" => set_once(&mut self.conn_status, status(d)?, d)?,
            "limit_req_log_level" => set_once(&mut self.req_log_level, level(d)?, d)?,
            "limit_conn_log_level" => set_once(&mut self.conn_log_level, level(d)?, d)?,
            "limit_req_dry_run" => set_once(&mut self.req_dry_run, flag(d)?, d)?,
            "limit_conn_dry_run" => set_once(&mut self.conn_dry_run, flag(d)?, d)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(crate) fn inherit(&self, outer: &LimitsLevel) -> LimitsLevel {
        fn pick<T: Clone>(own: &Option<T>, outer: &Option<T>) -> Option<T> {
            own.clone().or_else(|| outer.clone())
        }
        LimitsLevel {
            req: pick(&self.req, &outer.req),
            req_status: pick(&self.req_status, &outer.req_status),
            req_log_level: pick(&self.req_log_level, &outer.req_log_level),
            req_dry_run: pick(&self.req_dry_run, &outer.req_dry_run),
            conn: pick(&self.conn, &outer.conn),
            conn_status: pick(&self.conn_status, &outer.conn_status),
            conn_log_level: pick(&self.conn_log_level, &outer.conn_log_level),
            conn_dry_run: pick(&self.conn_dry_run, &outer.conn_dry_run),
        }
    }

    pub(crate) fn finish(self) -> Limits {
        let d = Limits::default();
        Limits {
            req: self.req.unwrap_or(d.req),
            req_status: self.req_status.unwrap_or(d.req_status),
            req_log_level: self.req_log_level.unwrap_or(d.req_log_level),
            req_dry_run: self.req_dry_run.unwrap_or(d.req_dry_run),
            conn: self.conn.unwrap_or(d.conn),
            conn_status: self.conn_status.unwrap_or(d.conn_status),
            conn_log_level: self.conn_log_level.unwrap_or(d.conn_log_level),
            conn_dry_run: self.conn_dry_run.unwrap_or(d.conn_dry_run),
        }
    }

    /// `limit_req zone=NAME [burst=N] [nodelay | delay=N]`.
    fn limit_req(&mut self, d: &Directive) -> Result<(), ConfigError> {
        let (mut zone, mut burst, mut delay) = (None, 0, 0);
        for a in &d.args {
            if let Some(name) = a.strip_prefix("zone=") {
                zone = Some(register(d, name, ZoneKind::Req { rate: 0 }, 0)?);
            } else if let Some(n) = a.strip_prefix("burst=") {
                burst =
                    positive(n).ok_or_else(|| err(d, format!("invalid burst value \"{a}\"")))?;
            } else if let Some(n) = a.strip_prefix("delay=") {
                delay =
                    positive(n).ok_or_else(|| err(d, format!("invalid delay value \"{a}\"")))?;
            } else if a == "nodelay" {
                delay = NODELAY / 1000;
            } else {
                return Err(err(d, format!("invalid parameter \"{a}\"")));
            }
        }
        let zone = zone.ok_or_else(|| err(d, "\"limit_req\" must have \"zone\" parameter"))?;
        let list = self.req.get_or_insert_with(Vec::new);
        if list.iter().any(|l| l.zone == zone) {
            return Err(directive_err(d, "is duplicate"));
        }
        list.push(ReqLimit {
            zone,
            burst: burst.saturating_mul(1000),
            delay: delay.saturating_mul(1000),
        });
        Ok(())
    }

    /// `limit_conn ZONE N`.
    fn limit_conn(&mut self, d: &Directive) -> Result<(), ConfigError> {
        let zone = register(d, d.arg(0), ZoneKind::Conn, 0)?;
        let list = self.conn.get_or_insert_with(Vec::new);
        if list.iter().any(|l| l.zone == zone) {
            return Err(directive_err(d, "is duplicate"));
        }
        let n = positive(d.arg(1))
            .ok_or_else(|| err(d, format!("invalid number of connections \"{}\"", d.arg(1))))?;
        if n > 65535 {
            return Err(err(d, "connection limit must be less 65536"));
        }
        list.push(ConnLimit {
            zone,
            conn: n as u32,
        });
        Ok(())
    }
}

/// `ngx_atoi` above 0: digits only.
fn positive(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>()
        .ok()
        .filter(|&n| n > 0 && n <= i64::MAX as u64)
}

/// `limit_req_zone KEY zone=NAME:SIZE rate=RATE` / `limit_conn_zone KEY zone=NAME:SIZE`.
fn zone_line(d: &Directive, req: bool) -> Result<(), ConfigError> {
    let key_text = d.arg(0).to_string();
    let key = template(d, &key_text)?;
    let (mut name, mut size, mut rate) = (None, 0, 1000);
    for a in &d.args[1..] {
        if let Some(spec) = a.strip_prefix("zone=") {
            let invalid = || err(d, format!("invalid zone size \"{a}\""));
            let (n, s) = spec.split_once(':').ok_or_else(invalid)?;
            size = parse_size(s).ok_or_else(invalid)?;
            if size < MIN_ZONE {
                return Err(err(d, format!("zone \"{a}\" is too small")));
            }
            // nginx: an empty name is no `zone` parameter.
            name = (!n.is_empty()).then(|| n.to_string());
        } else if let (true, Some(r)) = (req, a.strip_prefix("rate=")) {
            rate = parse_rate(r).ok_or_else(|| err(d, format!("invalid rate \"{a}\"")))?;
        } else {
            return Err(err(d, format!("invalid parameter \"{a}\"")));
        }
    }
    let name =
        name.ok_or_else(|| err(d, format!("\"{}\" must have \"zone\" parameter", d.name)))?;
    let kind = match req {
        true => ZoneKind::Req { rate },
        false => ZoneKind::Conn,
    };
    let i = register(d, &name, kind, size)?;
    ZONES.with(|z| {
        let mut zones = z.borrow_mut();
        let z = &mut zones[i];
        if let Some((bound, _)) = &z.key {
            return Err(err(
                d,
                format!("{} \"{name}\" is already bound to key \"{bound}\"", d.name),
            ));
        }
        z.key = Some((key_text, key));
        z.kind = kind;
        Ok(())
    })
}

/// `Nr/s`, `Nr/m` or `N` (per second): milli-requests per second.
fn parse_rate(text: &str) -> Option<u64> {
    let (n, scale) = match (text.strip_suffix("r/s"), text.strip_suffix("r/m")) {
        (Some(n), _) => (n, 1),
        (_, Some(n)) => (n, 60),
        _ => (text, 1),
    };
    let n = positive(n)?;
    Some(n.saturating_mul(1000) / scale)
}

/// `limit_req_status` / `limit_conn_status`: a number from 400 to 599.
fn status(d: &Directive) -> Result<u16, ConfigError> {
    let n =
        crate::units::parse_number(d.arg(0)).ok_or_else(|| directive_err(d, "invalid number"))?;
    match u16::try_from(n) {
        Ok(n) if (400..=599).contains(&n) => Ok(n),
        _ => Err(err(d, "value must be between 400 and 599")),
    }
}

/// `info | notice | warn | error` (nginx's enum slot, any case).
fn level(d: &Directive) -> Result<LogLevel, ConfigError> {
    let word = d.arg(0);
    Ok(match word.to_ascii_lowercase().as_str() {
        "info" => LogLevel::Info,
        "notice" => LogLevel::Notice,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        _ => return Err(err(d, format!("invalid value \"{word}\""))),
    })
}
