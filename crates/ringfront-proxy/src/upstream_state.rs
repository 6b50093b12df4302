//! The API's side of `state FILE` (nginx Plus): after each change of a group that has a
//! state file, the group's servers are written to it as `server ...;` lines, the form the
//! configuration reads back at start and on reload. The file is replaced atomically: the
//! lines go to a temporary file beside it, which is then renamed over it. A change published
//! by another worker while the file was written is written again, so the last file holds
//! the last membership.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ringfront_config::UpstreamServer;

use crate::Shared;

/// Temporary files of this process get distinct names.
static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

/// Rewrites group `name`'s state file, if it has one, from the snapshot now.
pub fn save(shared: &Shared, name: &str) {
    // Bounded: each round is only needed when another change came in meanwhile.
    for _ in 0..16 {
        let snap = shared.snapshot.load_full();
        let Some(cfg) = &snap.config else { return };
        let Some(up) = cfg.http.upstreams.iter().find(|u| u.name == name) else {
            return;
        };
        let Some(path) = &up.state else { return };
        let servers = crate::members::servers_of(up, &snap.members);
        let text = render(servers.iter().map(|(_, s)| s));
        if let Err(e) = replace(path, &text) {
            crate::logger::error_line(
                &shared.logger,
                &snap,
                ringfront_config::LogLevel::Error,
                "api",
                0,
                format_args!(
                    "upstream \"{name}\" cannot write its state file \"{}\": {e}",
                    path.display()
                ),
            );
            return;
        }
        if Arc::ptr_eq(&snap, &shared.snapshot.load_full()) {
            return;
        }
    }
}

/// The `server` lines of `servers`.
pub fn render<'a>(servers: impl Iterator<Item = &'a UpstreamServer>) -> String {
    let mut out = String::new();
    for s in servers {
        let _ = write!(
            out,
            "server {} weight={} max_fails={} fail_timeout={}s",
            s.text,
            s.weight,
            s.max_fails,
            s.fail_timeout.as_secs()
        );
        if s.max_conns > 0 {
            let _ = write!(out, " max_conns={}", s.max_conns);
        }
        if !s.slow_start.is_zero() {
            let _ = write!(out, " slow_start={}s", s.slow_start.as_secs());
        }
        if let Some(r) = &s.route {
            let _ = write!(out, " route={r}");
        }
        for (on, word) in [
            (s.backup, " backup"),
            (s.down, " down"),
            (s.drain, " drain"),
        ] {
            if on {
                out.push_str(word);
            }
        }
        out.push_str(";\n");
    }
    out
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`.
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.{n}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::api_servers::{apply, fresh};

    #[test]
    fn servers_are_written_as_the_lines_the_configuration_reads() {
        let a = apply(&fresh(), br#"{"server":"127.0.0.1:81","weight":2}"#, true).unwrap();
        let body = br#"{"server":"[::1]:82","backup":true,"down":true,"slow_start":"30s","max_conns":5,"route":"r1"}"#;
        let b = apply(&fresh(), body, true).unwrap();
        let c = apply(&fresh(), br#"{"server":"127.0.0.1:83","drain":true}"#, true).unwrap();
        assert_eq!(
            render([&a, &b, &c].into_iter()),
            "server 127.0.0.1:81 weight=2 max_fails=1 fail_timeout=10s;\n\
             server [::1]:82 weight=1 max_fails=1 fail_timeout=10s max_conns=5 slow_start=30s \
             route=r1 backup down;\n\
             server 127.0.0.1:83 weight=1 max_fails=1 fail_timeout=10s drain;\n"
        );
    }

    #[test]
    fn the_file_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("rf-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("u.state");
        replace(&path, "one;\n").unwrap();
        replace(&path, "two;\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two;\n");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
