//! The model of nginx's `limit_req` and `limit_conn` modules: the zones the http block
//! declares and what a location applies.

use crate::model::{LogLevel, Template};

/// What a zone limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneKind {
    /// `limit_req_zone ... rate=`: milli-requests per second, as nginx holds it.
    Req {
        rate: u64,
    },
    Conn,
}

/// A `limit_req_zone` or `limit_conn_zone`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitZone {
    pub name: String,
    pub kind: ZoneKind,
    /// The key as written (nginx compares it on reload) and compiled.
    pub key_text: String,
    pub key: Template,
    /// `zone=NAME:SIZE` in bytes.
    pub size: u64,
}

/// One `limit_req zone=NAME [burst=N] [nodelay | delay=N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqLimit {
    /// Index into `HttpConf::limit_zones`.
    pub zone: usize,
    /// In milli-requests, as nginx (`burst * 1000`).
    pub burst: u64,
    /// In milli-requests; `nodelay` is nginx's `NGX_MAX_INT_T_VALUE / 1000 * 1000`.
    pub delay: u64,
}

/// One `limit_conn ZONE N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimit {
    pub zone: usize,
    pub conn: u32,
}

/// A location's limits as merged (lists inherited whole unless the level writes one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub req: Vec<ReqLimit>,
    /// `limit_req_status` (503).
    pub req_status: u16,
    /// `limit_req_log_level` (error); delays are logged one level lower (info stays info).
    pub req_log_level: LogLevel,
    pub req_dry_run: bool,
    pub conn: Vec<ConnLimit>,
    pub conn_status: u16,
    pub conn_log_level: LogLevel,
    pub conn_dry_run: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            req: Vec::new(),
            req_status: 503,
            req_log_level: LogLevel::Error,
            req_dry_run: false,
            conn: Vec::new(),
            conn_status: 503,
            conn_log_level: LogLevel::Error,
            conn_dry_run: false,
        }
    }
}

impl Limits {
    /// nginx's `delay_log_level`: one level below `limit_req_log_level`, info at least.
    pub fn req_delay_level(&self) -> LogLevel {
        match self.req_log_level {
            LogLevel::Error => LogLevel::Warn,
            LogLevel::Warn => LogLevel::Notice,
            _ => LogLevel::Info,
        }
    }
}
