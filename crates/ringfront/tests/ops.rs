//! What an operator runs into beside the request path: `-s reopen` (USR1) after renaming the
//! logs, a forced event loop, a second instance (or a reload) on a `listen` that is taken,
//! the pid file, and the quick-start configuration.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{fill, port};
use ringfront_testkit::{http, ringfront_binary, Ringfront, SIGHUP, SIGUSR1};

const WAIT: Duration = Duration::from_secs(10);

/// One server answering `BODY` on `PORT`, its access log and error log in files next to the
/// config, and a pid file.
fn local_config(p: u16, body: &str, pid: &str) -> String {
    fill(
        "worker_processes 2;
pid {PID};
error_log error.log info;
events { worker_connections 256; }
http {
    access_log access.log;
    server {
        listen 127.0.0.1:{PORT};
        location /dead { proxy_pass http://127.0.0.1:9; }
        location / { return 200 \"{BODY}\\n\"; }
    }
}
",
        &[
            ("PORT", p.to_string()),
            ("BODY", body.to_string()),
            ("PID", pid.to_string()),
        ],
    )
}

/// Runs ringfront with `args -c conf`, which must exit within `WAIT` (a server that starts
/// instead is killed and fails the test); its exit status and stderr.
fn run_binary(args: &[&str], conf: &Path, env: &[(&str, &str)]) -> (ExitStatus, String) {
    let mut cmd = Command::new(ringfront_binary());
    cmd.args(args)
        .arg("-c")
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("RINGFRONT_DRIVER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run ringfront");
    let deadline = Instant::now() + WAIT;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let running = child.try_wait().unwrap().is_none();
    if running {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!running, "ringfront {args:?} kept running: {err}");
    (out.status, err)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `done` holds for the text of `path`, or `WAIT` passes; the last text.
fn wait_file(path: &Path, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = read(path);
        if done(&text) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How many access-log lines in `text` are for exactly `uri`.
fn count(text: &str, uri: &str) -> usize {
    let needle = format!("\"GET {uri} HTTP/1.1\"");
    text.lines().filter(|l| l.contains(&needle)).count()
}

#[test]
fn reopen_after_rename_sends_new_lines_to_a_new_file_and_loses_none() {
    let p = port();
    let rf = Ringfront::start(&local_config(p, "ok", "ringfront.pid"));
    let dir = rf.dir().to_path_buf();
    let (log, err) = (dir.join("access.log"), dir.join("error.log"));
    let mut uris = Vec::new();
    let mut olds = Vec::new();
    for round in 0..2 {
        for i in 0..20 {
            let uri = format!("/r{round}/{i}");
            assert_eq!(http::get(("127.0.0.1", p), &uri).status, 200);
            uris.push(uri);
        }
        // An error-log line too, so that file is open when it is renamed.
        assert_eq!(http::get(("127.0.0.1", p), "/dead").status, 502);
        assert!(!wait_file(&err, |t| t.contains("connect() failed")).is_empty());
        let old = dir.join(format!("access.log.{round}"));
        std::fs::rename(&log, &old).unwrap();
        std::fs::rename(&err, dir.join(format!("error.log.{round}"))).unwrap();
        olds.push(old);
        // First by the command line (as logrotate's postrotate does), then the bare signal.
        if round == 0 {
            let (status, err) = run_binary(&["-s", "reopen"], rf.config_path(), &[]);
            assert!(status.success(), "{err}");
        } else {
            rf.signal(SIGUSR1);
        }
        // The writer creates the files again at their paths once it has reopened them.
        let deadline = Instant::now() + WAIT;
        while !(log.exists() && err.exists()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(log.exists() && err.exists(), "logs not reopened");
        assert!(rf.exited().is_none(), "{:?}", rf.stderr_lines());
    }
    let after: Vec<String> = (0..20).map(|i| format!("/after/{i}")).collect();
    for uri in &after {
        assert_eq!(http::get(("127.0.0.1", p), uri).status, 200);
    }
    assert_eq!(http::get(("127.0.0.1", p), "/dead").status, 502);
    let new = wait_file(&log, |t| after.iter().all(|u| count(t, u) == 1));
    // Requests sent after the reopen are in the new file; every earlier one is in the file
    // open when it was served or in a later one, exactly once over all of them.
    for uri in &after {
        assert_eq!(count(&new, uri), 1, "{uri} not in the new file:\n{new}");
    }
    let texts: Vec<String> = olds.iter().map(|p| read(p)).chain([new]).collect();
    for uri in &uris {
        let n: usize = texts.iter().map(|t| count(t, uri)).sum();
        assert_eq!(n, 1, "{uri} logged {n} times: {texts:#?}");
    }
    assert!(count(&read(&olds[0]), "/r0/0") == 1, "{texts:#?}");
    assert!(wait_file(&err, |t| t.contains("connect() failed")).contains("connect() failed"));
    assert_eq!(
        rf.stderr_lines()
            .iter()
            .filter(|l| l.contains("[notice] reopening logs"))
            .count(),
        2
    );
    assert!(rf.exited().is_none());
}

#[test]
fn a_forced_event_loop_runs_and_a_bogus_one_is_an_error() {
    let dir = ringfront_testkit::TempDir::new("ringfront-driver");
    let conf = dir.path().join("ringfront.conf");
    let p = port();
    std::fs::write(&conf, local_config(p, "ok", "ringfront.pid")).unwrap();
    // io_uring works on the machines this suite runs on: forcing it starts it.
    let rf = Ringfront::start_with_args(&read(&conf), &["--driver", "io_uring"]);
    let ready = rf
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains("ready"))
        .unwrap();
    assert!(ready.contains("io_uring event loop"), "{ready}");
    drop(rf);
    let (status, err) = run_binary(&["--driver", "bogus"], &conf, &[]);
    assert!(!status.success());
    assert!(err.contains("invalid --driver \"bogus\""), "{err}");
    let (status, err) = run_binary(&[], &conf, &[("RINGFRONT_DRIVER", "bogus")]);
    assert!(!status.success());
    assert!(err.contains("invalid event loop \"bogus\""), "{err}");
    assert!(!dir.path().join("ringfront.pid").exists());
}

fn all_answered_by(p: u16, body: &str, n: usize) {
    for i in 0..n {
        let r = http::get(("127.0.0.1", p), &format!("/n{i}"));
        assert_eq!(r.text(), format!("{body}\n"), "request {i}");
    }
}

#[test]
fn a_second_instance_on_a_taken_listen_is_refused_like_nginx() {
    let p = port();
    let a = Ringfront::start(&local_config(p, "a", "ringfront.pid"));
    let pid_file = a.dir().join("ringfront.pid");
    assert_eq!(read(&pid_file).trim(), a.pid().to_string());
    // Same address, another answer; once with the same pid file, once with its own.
    for pid in [pid_file.display().to_string(), "b.pid".to_string()] {
        let conf_b: PathBuf = a.dir().join("b.conf");
        std::fs::write(&conf_b, local_config(p, "b", &pid)).unwrap();
        let (status, err) = run_binary(&[], &conf_b, &[]);
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "[emerg] bind() to 127.0.0.1:{p} failed (98: Address already in use)"
            )),
            "{err}"
        );
        assert!(err.contains("[emerg] still could not bind()"), "{err}");
        assert!(!err.contains("ringfront: ready"), "{err}");
        assert_eq!(read(&pid_file).trim(), a.pid().to_string());
        assert!(!a.dir().join("b.pid").exists());
        all_answered_by(p, "a", 50);
    }
    assert!(a.exited().is_none());
}

#[test]
fn a_reload_onto_a_taken_listen_keeps_the_running_configuration() {
    let (p, q) = (port(), port());
    let a = Ringfront::start(&local_config(p, "a", "ringfront.pid"));
    let b = Ringfront::start(&local_config(q, "b", "ringfront.pid"));
    let both = local_config(p, "a", "ringfront.pid").replace(
        &format!("listen 127.0.0.1:{p};"),
        &format!("listen 127.0.0.1:{p};\n        listen 127.0.0.1:{q};"),
    );
    a.write_config(&both);
    a.signal(SIGHUP);
    assert!(a.wait_for_stderr("keeping the running configuration", WAIT));
    let lines = a.stderr_lines();
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "bind() to 127.0.0.1:{q} failed (98: Address already in use)"
        ))),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("still could not bind(); keeping the running configuration")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("reconfigured")),
        "{lines:?}"
    );
    all_answered_by(p, "a", 20);
    all_answered_by(q, "b", 50);
    // Once the address is free, the same reload takes it; the old listener stays open.
    drop(b);
    // A killed io_uring process's sockets close when the kernel tears its ring down, a
    // moment after the exit: wait until the address can be bound.
    let deadline = Instant::now() + WAIT;
    while std::net::TcpListener::bind(("127.0.0.1", q)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    a.signal(SIGHUP);
    assert!(a.wait_for_stderr("reconfigured", WAIT));
    // The workers open the new listener on their next control tick after the swap.
    let deadline = Instant::now() + WAIT;
    while http::try_get(("127.0.0.1", q), "/").is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    all_answered_by(p, "a", 20);
    all_answered_by(q, "a", 20);
    assert!(a.exited().is_none());
}

#[test]
fn the_quick_start_config_loads_and_names_a_pid_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let conf = root.join("config/ringfront.conf");
    let (status, err) = run_binary(&["-t"], &conf, &[]);
    assert!(status.success(), "{err}");
    let cfg = ringfront_config::load(&conf).unwrap();
    assert!(
        cfg.main.pid.is_some(),
        "config/ringfront.conf needs a pid directive for `ringfront -s reload`"
    );
}

#[test]
fn a_restart_on_the_same_listen_right_after_exit_starts() {
    let p = port();
    let conf = local_config(p, "a", "ringfront.pid");
    // Graceful exit, then killed: the next instance starts at once on the same address
    // (it waits, as nginx does, for sockets the kernel is still closing).
    let rf = Ringfront::start(&conf);
    all_answered_by(p, "a", 5);
    rf.signal(ringfront_testkit::SIGQUIT);
    assert!(rf.wait_exit(WAIT).expect("exits on QUIT").success());
    let rf = Ringfront::start(&conf);
    all_answered_by(p, "a", 5);
    drop(rf);
    let rf = Ringfront::start(&conf);
    all_answered_by(p, "a", 5);
    assert_eq!(
        read(&rf.dir().join("ringfront.pid")).trim(),
        rf.pid().to_string()
    );
}
