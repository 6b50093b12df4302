//! The main (top) level and `events`: worker processes and pinning, daemon/master flags, pid,
//! error logs, `worker_connections`, `worker_shutdown_timeout`.

use std::path::Path;

use crate::build::Env;
use crate::directives::{for_each, unhandled, EVENTS, MAIN};
use crate::error::ConfigError;
use crate::http::{http_block, HttpRaw};
use crate::logs::error_log;
use crate::model::{CpuAffinity, ErrorLog, LogLevel, MainConf, WorkerProcesses};
use crate::tree::Directive;
use crate::units::parse_number;
use crate::values::{directive_err, err, flag, msec, path, set_once};

/// nginx's defaults: one worker, no pinning, daemon and master on, 512 connections, errors
/// to stderr at `error` level.
impl Default for MainConf {
    fn default() -> Self {
        MainConf {
            worker_processes: WorkerProcesses::Count(1),
            worker_cpu_affinity: CpuAffinity::Off,
            daemon: true,
            master_process: true,
            pid: None,
            error_log: vec![ErrorLog {
                path: None,
                level: LogLevel::Error,
            }],
            worker_connections: 512,
            worker_shutdown_timeout: None,
        }
    }
}

/// What the main level produced.
pub(crate) struct MainRaw {
    pub conf: MainConf,
    pub http: Option<HttpRaw>,
    pub events: bool,
}

/// Settings written once per level, for nginx's `is duplicate` check.
#[derive(Default)]
struct Written {
    worker_processes: Option<WorkerProcesses>,
    affinity: Option<CpuAffinity>,
    daemon: Option<bool>,
    master_process: Option<bool>,
    pid: Option<std::path::PathBuf>,
    worker_connections: Option<usize>,
    worker_shutdown_timeout: Option<std::time::Duration>,
    error_log: Vec<ErrorLog>,
}

pub(crate) fn main_block(tree: &[Directive], env: &Env<'_>) -> Result<MainRaw, ConfigError> {
    let mut w = Written::default();
    let mut events = false;
    let mut http = None;
    for_each(tree, MAIN, |d| {
        match d.name.as_str() {
            "worker_processes" => set_once(&mut w.worker_processes, worker_processes(d)?, d)?,
            "worker_cpu_affinity" => set_once(&mut w.affinity, cpu_affinity(d)?, d)?,
            "daemon" => set_once(&mut w.daemon, flag(d)?, d)?,
            "master_process" => set_once(&mut w.master_process, flag(d)?, d)?,
            "pid" => set_once(&mut w.pid, path(env.prefix, d.arg(0)), d)?,
            "worker_shutdown_timeout" => {
                set_once(&mut w.worker_shutdown_timeout, msec(d, d.arg(0))?, d)?
            }
            "error_log" => w.error_log.push(error_log(d, env.prefix)?),
            "events" => {
                if events {
                    return Err(directive_err(d, "is duplicate"));
                }
                events = true;
                events_block(d, &mut w.worker_connections)?;
            }
            "http" => {
                if http.is_some() {
                    return Err(directive_err(d, "is duplicate"));
                }
                http = Some(http_block(d, env)?);
            }
            _ => return Err(unhandled(d)),
        }
        Ok(())
    })?;
    let defaults = MainConf::default();
    let conf = MainConf {
        worker_processes: w.worker_processes.unwrap_or(defaults.worker_processes),
        worker_cpu_affinity: w.affinity.unwrap_or(defaults.worker_cpu_affinity),
        daemon: w.daemon.unwrap_or(defaults.daemon),
        master_process: w.master_process.unwrap_or(defaults.master_process),
        pid: w.pid,
        error_log: if w.error_log.is_empty() {
            vec![ErrorLog {
                path: env.default_error_log.map(Path::to_path_buf),
                level: LogLevel::Error,
            }]
        } else {
            w.error_log
        },
        worker_connections: w.worker_connections.unwrap_or(defaults.worker_connections),
        worker_shutdown_timeout: w.worker_shutdown_timeout,
    };
    Ok(MainRaw { conf, http, events })
}

fn events_block(d: &Directive, worker_connections: &mut Option<usize>) -> Result<(), ConfigError> {
    for_each(d.children(), EVENTS, |c| match c.name.as_str() {
        "worker_connections" => {
            let arg = c.arg(0);
            let n = parse_number(arg)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| err(c, format!("invalid number \"{arg}\"")))?;
            set_once(worker_connections, n, c)
        }
        _ => Err(unhandled(c)),
    })
}

/// `worker_processes auto|N` (N >= 1).
fn worker_processes(d: &Directive) -> Result<WorkerProcesses, ConfigError> {
    match d.arg(0) {
        "auto" => Ok(WorkerProcesses::Auto),
        n => parse_number(n)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .map(WorkerProcesses::Count)
            .ok_or_else(|| directive_err(d, "invalid value")),
    }
}

/// `worker_cpu_affinity auto` or one mask per worker (`0001 0010`, rightmost = CPU 0).
fn cpu_affinity(d: &Directive) -> Result<CpuAffinity, ConfigError> {
    if d.arg(0) == "auto" {
        if d.args.len() > 1 {
            return Err(err(
                d,
                "\"worker_cpu_affinity auto MASK\" is not supported yet",
            ));
        }
        return Ok(CpuAffinity::Auto);
    }
    let mut masks = Vec::with_capacity(d.args.len());
    for word in &d.args {
        if word.len() > 64 {
            return Err(err(
                d,
                "\"worker_cpu_affinity\" supports up to 64 CPUs only",
            ));
        }
        let mut mask = 0u64;
        for ch in word.chars() {
            mask <<= 1;
            match ch {
                '0' => {}
                '1' => mask |= 1,
                other => {
                    return Err(err(
                        d,
                        format!("invalid character \"{other}\" in \"worker_cpu_affinity\""),
                    ));
                }
            }
        }
        masks.push(mask);
    }
    Ok(CpuAffinity::Masks(masks))
}
