//! config/ringfront.logrotate, run by the real logrotate (Debian's package) against a
//! ringfront under load: every request's access-log line ends up in exactly one of the
//! rotated files or the new one.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{fill, port};
use ringfront_testkit::{http, ringfront_binary, Ringfront};

const WAIT: Duration = Duration::from_secs(20);
const LOGROTATE: &str = "/usr/sbin/logrotate";

/// config/ringfront.logrotate with its installed paths replaced by the test's.
fn logrotate_config(rf: &Ringfront) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut text = std::fs::read_to_string(root.join("config/ringfront.logrotate")).unwrap();
    let dir = rf.dir().display().to_string();
    for (from, to) in [
        ("/var/log/ringfront", dir.clone()),
        ("/run/ringfront.pid", format!("{dir}/ringfront.pid")),
        (
            "/usr/sbin/ringfront",
            ringfront_binary().display().to_string(),
        ),
        (
            "/etc/ringfront/ringfront.conf",
            rf.config_path().display().to_string(),
        ),
    ] {
        assert!(
            text.contains(from),
            "config/ringfront.logrotate lost {from}"
        );
        text = text.replace(from, &to);
    }
    text
}

fn rotate(rf: &Ringfront) {
    let conf = rf.dir().join("logrotate.conf");
    std::fs::write(&conf, logrotate_config(rf)).unwrap();
    let out = Command::new(LOGROTATE)
        .arg("-f")
        .arg("-v")
        .arg("-s")
        .arg(rf.dir().join("logrotate.state"))
        .arg(&conf)
        .output()
        .expect("logrotate is installed (apt-get install logrotate)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(path: &Path) -> String {
    if path.extension().is_some_and(|e| e == "gz") {
        let out = Command::new("zcat").arg(path).output().unwrap();
        assert!(out.status.success(), "zcat {}", path.display());
        return String::from_utf8(out.stdout).unwrap();
    }
    std::fs::read_to_string(path).unwrap_or_default()
}

/// URI -> how many access-log lines name it, over `files`.
fn logged(dir: &Path, files: &[&str]) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for f in files {
        for line in read(&dir.join(f)).lines() {
            if let Some(uri) = line
                .split("\"GET ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
            {
                *seen.entry(uri.to_string()).or_insert(0) += 1;
            }
        }
    }
    seen
}

#[test]
fn logrotate_under_load_keeps_every_line_exactly_once() {
    let p = port();
    let rf = Ringfront::start(&fill(
        "worker_processes 2;
pid ringfront.pid;
error_log error.log info;
events { worker_connections 256; }
http {
    access_log access.log;
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"ok\\n\"; }
    }
}
",
        &[("PORT", p.to_string())],
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(Mutex::new(Vec::<String>::new()));
    let load = {
        let (stop, served) = (stop.clone(), served.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let uri = format!("/load/{i}");
                let r = http::try_get(("127.0.0.1", p), &uri)
                    .unwrap_or_else(|e| panic!("GET {uri}: {e}"));
                assert_eq!(r.status, 200, "GET {uri}");
                served.lock().unwrap().push(uri);
                i += 1;
            }
        })
    };
    let count = || served.lock().unwrap().len();
    let wait_count = |n: usize| {
        let deadline = Instant::now() + WAIT;
        while count() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(count() >= n, "load stalled at {} requests", count());
    };
    wait_count(200);
    for round in 1..=2 {
        let before = count();
        rotate(&rf);
        // logrotate has sent USR1 (`ringfront -s reopen`) by the time it exits.
        let deadline = Instant::now() + WAIT;
        while reopens(&rf) < round && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(reopens(&rf), round);
        assert!(rf.exited().is_none(), "{:?}", rf.stderr_lines());
        // The load goes on through and after the rotation.
        wait_count(before + 200);
        assert!(rf.dir().join("access.log").exists(), "round {round}");
    }
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    let served = served.lock().unwrap().clone();
    // After two rotations: access.log.2.gz (first), access.log.1 (second, delaycompress),
    // access.log (current).
    let files = ["access.log.2.gz", "access.log.1", "access.log"];
    for f in files {
        assert!(rf.dir().join(f).exists(), "{f} missing");
    }
    let deadline = Instant::now() + WAIT;
    let mut seen = logged(rf.dir(), &files);
    while served.iter().any(|u| !seen.contains_key(u)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        seen = logged(rf.dir(), &files);
    }
    for uri in &served {
        assert_eq!(seen.get(uri), Some(&1), "{uri}");
    }
    assert_eq!(seen.len(), served.len());
    // Each file holds a share of the load: ringfront did follow the renames.
    for f in files {
        assert!(!logged(rf.dir(), &[f]).is_empty(), "{f} is empty");
    }
    assert_eq!(reopens(&rf), 2);
}

fn reopens(rf: &Ringfront) -> usize {
    rf.stderr_lines()
        .iter()
        .filter(|l| l.contains("[notice] reopening logs"))
        .count()
}
