//! ringfront's helper threads sleep until they have work: with no `server ... resolve` line
//! and no `health_check`, the resolver thread, the checker and the log thread are not
//! scheduled at all while the engine is idle. (The main thread blocks on its signals; it
//! is left out, as its last steps after the `ready` line may fall into the window.) Each wake-up of such a thread
//! would take a turn on the core a pinned worker runs on (nginx has no such threads), and
//! the resolver thread used to look at the engine's state four times a second.
//!
//! The test counts each thread's context switches (`/proc/PID/task/TID/status`) over a
//! window of 1.5 s in which the engine is idle; the window is the measurement itself, not
//! a wait for something to happen.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::fill;
use ringfront_testkit::{Backend, Client, Ringfront};

/// Context switches (voluntary plus involuntary) of each thread, by `name (tid)`.
fn switches(pid: u32) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("read /proc task");
    for t in tasks.flatten() {
        let path = t.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let n: u64 = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        let tid = t.file_name().to_string_lossy().into_owned();
        out.insert(format!("{} ({tid})", name.trim()), n);
    }
    out
}

const HELPERS: [&str; 3] = ["ringfront-dns", "ringfront-hc", "ringfront-log"];

#[test]
fn helper_threads_sleep_while_the_engine_is_idle() {
    let b = Backend::start();
    let p = common::port();
    let rf = Ringfront::start(&fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    upstream u { server 127.0.0.1:{BACKEND}; keepalive 4; }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://u; }
    }
}
",
        &[("PORT", p.to_string()), ("BACKEND", b.port().to_string())],
    ));
    let mut c = Client::connect(("127.0.0.1", p));
    assert_eq!(c.request("GET", "/", &[("Host", "a")], b"").status, 200);
    drop(c);
    let before = switches(rf.pid());
    for name in HELPERS {
        let found = before.keys().any(|k| k.starts_with(&format!("{name} (")));
        assert!(found, "no thread {name}: {before:?}");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let after = switches(rf.pid());
    let woke: Vec<(String, u64)> = after
        .iter()
        .filter(|(name, _)| HELPERS.iter().any(|h| name.starts_with(&format!("{h} ("))))
        .map(|(name, n)| (name.clone(), n - before.get(name).copied().unwrap_or(0)))
        .filter(|(_, d)| *d > 0)
        .collect();
    assert!(
        woke.is_empty(),
        "helper threads woke while idle: {woke:?} (pid {})",
        rf.pid()
    );
}
