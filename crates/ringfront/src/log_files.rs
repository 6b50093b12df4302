//! Opening every log file the configuration names, at `-t` and at start, as nginx does
//! (`ngx_init_cycle` opens them all): a log that cannot be opened fails the test or the start
//! with nginx's `open() "FILE" failed`, and every file exists from the start even if nothing
//! is written to it yet (nginx's test harness reads `error.log` after every test).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use ringfront_config::{AccessLog, Config, Location};

/// Creates (or opens for appending) each error and access log file of `cfg`; the first that
/// fails is the error, in nginx's words.
pub fn open_all(cfg: &Config) -> Result<(), String> {
    for path in paths(cfg) {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = OpenOptions::new().create(true).append(true).open(&path) {
            return Err(failed(&path, &e));
        }
    }
    Ok(())
}

fn failed(path: &Path, e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => {
            let desc = text
                .strip_suffix(&format!(" (os error {code})"))
                .unwrap_or(&text);
            format!("open() \"{}\" failed ({code}: {desc})", path.display())
        }
        None => format!("open() \"{}\" failed ({text})", path.display()),
    }
}

fn paths(cfg: &Config) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = cfg
        .main
        .error_log
        .iter()
        .filter_map(|e| e.path.clone())
        .collect();
    for server in &cfg.http.servers {
        access_logs(&server.settings.access_log, &mut out);
        for loc in &server.locations {
            location(loc, &mut out);
        }
    }
    out.dedup();
    out
}

fn location(loc: &Location, out: &mut Vec<PathBuf>) {
    access_logs(&loc.settings.access_log, out);
    for inner in &loc.locations {
        location(inner, out);
    }
}

fn access_logs(logs: &[AccessLog], out: &mut Vec<PathBuf>) {
    for log in logs {
        if let AccessLog::File { path, .. } = log {
            if !out.contains(path) {
                out.push(path.clone());
            }
        }
    }
}
