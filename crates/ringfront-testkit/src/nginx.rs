//! Real nginx on the same configuration text, for differential tests: a temporary prefix
//! directory, `daemon off`, pid and error log inside it, readiness by connecting to the
//! listen port.
//!
//! Configs given to [`Nginx::start`] must not set `daemon`, `pid` or `user` at top level
//! (they come from `-g` and nginx rejects duplicates); a top-level `error_log` is allowed but
//! then [`Nginx::error_log_contents`] only sees what nginx also writes to `<dir>/error.log`.
//! They must contain an `events {}` block, as nginx requires.

use std::fs;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::process::{is_root, LineLog, TempDir, Watched};

/// Where Debian's nginx lives.
pub const NGINX_BIN: &str = "/usr/sbin/nginx";

/// How long [`Nginx::start`] waits for the port to accept.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// A running nginx (master and workers, one process group); stopped and cleaned on drop.
pub struct Nginx {
    proc: Watched,
    stderr: LineLog,
    port: u16,
    dir: TempDir,
}

impl Nginx {
    /// Starts nginx on `config_text` and waits until 127.0.0.1:`port` (a `listen` of the
    /// config) accepts connections; panics with nginx's output if it exits or times out.
    pub fn start(config_text: &str, port: u16) -> Nginx {
        let dir = TempDir::new("nginx-test");
        let conf = write_prefix(&dir, config_text);
        let mut child = nginx_command(dir.path(), &conf, false)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {NGINX_BIN}: {e}"));
        let stderr = LineLog::collect(child.stderr.take().expect("stderr pipe"), "nginx");
        // nginx writes nothing to stdout in daemon-off mode; drain it anyway.
        let _stdout = LineLog::collect(child.stdout.take().expect("stdout pipe"), "nginx:out");
        let nginx = Nginx {
            proc: Watched::new(child, "nginx"),
            stderr,
            port,
            dir,
        };
        nginx.wait_ready(config_text);
        nginx
    }

    fn wait_ready(&self, config_text: &str) {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            let exited = self.proc.wait_timeout(Duration::from_millis(20));
            if exited.is_some() || Instant::now() >= deadline {
                panic!(
                    "nginx did not start listening on {addr} (exit: {exited:?}); config:\n{config_text}\n\
                     stderr:\n{}\nerror.log:\n{}",
                    self.stderr.lines().join("\n"),
                    self.error_log_contents()
                );
            }
        }
    }

    /// Runs `nginx -t` on `config_text` (with the same `-g` directives as `start`); returns
    /// the exit status and nginx's output.
    pub fn run_check(config_text: &str) -> (ExitStatus, String) {
        let dir = TempDir::new("nginx-check");
        let conf = write_prefix(&dir, config_text);
        let out = nginx_command(dir.path(), &conf, true)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {NGINX_BIN}: {e}"));
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status, text)
    }

    /// The prefix directory (`nginx.conf`, `error.log`, `nginx.pid`, `logs/`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("nginx.conf")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The master's pid.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// `<dir>/error.log` so far (level `info` and up); empty if not written yet.
    pub fn error_log_contents(&self) -> String {
        fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// Lines nginx printed to stderr (startup errors before the error log is open).
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// Signals the master (`libc::SIGHUP` reloads, `libc::SIGQUIT` shuts down gracefully).
    pub fn signal(&self, sig: i32) {
        self.proc
            .signal(sig, false)
            .unwrap_or_else(|e| panic!("signal {sig} to nginx {}: {e}", self.pid()));
    }

    /// Waits up to `timeout` for the master to exit.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        self.proc.wait_timeout(timeout)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGQUIT lets workers finish in-flight requests, which a test against a hanging
        // backend would stretch to proxy_read_timeout: give it a moment, then kill the whole
        // group so no orphaned worker keeps the port.
        let _ = self.proc.signal(libc::SIGQUIT, false);
        if self.proc.wait_timeout(Duration::from_secs(2)).is_none() {
            let _ = self.proc.signal(libc::SIGKILL, true);
            self.proc.wait_timeout(Duration::from_secs(5));
        }
    }
}

fn write_prefix(dir: &TempDir, config_text: &str) -> PathBuf {
    if !Path::new(NGINX_BIN).exists() {
        panic!("nginx not installed: apt-get install nginx-light ({NGINX_BIN} missing)");
    }
    fs::create_dir_all(dir.path().join("logs")).expect("create logs dir");
    let conf = dir.path().join("nginx.conf");
    fs::write(&conf, config_text).expect("write nginx.conf");
    conf
}

fn nginx_command(prefix: &Path, conf: &Path, check: bool) -> Command {
    // As root, nginx workers switch to `nobody`, which cannot write the temp paths Debian
    // compiled in (/var/lib/nginx/*) or files in our root-owned temp dir: stay root.
    let user = if is_root() { "user root; " } else { "" };
    let globals = format!(
        "daemon off; {user}pid {p}/nginx.pid; error_log {p}/error.log info;",
        p = prefix.display()
    );
    let mut cmd = Command::new(NGINX_BIN);
    if check {
        cmd.arg("-t");
    }
    cmd.arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(conf)
        .arg("-g")
        .arg(globals)
        .current_dir(prefix);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{free_port, http, Backend};
    use std::io::{Read, Write};

    #[test]
    fn nginx_serves_a_return() {
        let port = free_port();
        let conf = format!(
            "events {{}}\nhttp {{ access_log off; server {{ listen 127.0.0.1:{port}; location / {{ return 200 \"hi\"; }} }} }}\n"
        );
        let nginx = Nginx::start(&conf, port);
        let r = http::get(("127.0.0.1", port), "/");
        assert_eq!((r.status, r.text().as_str()), (200, "hi"));
        assert!(nginx.error_log_contents().contains("start worker process"));
    }

    #[test]
    fn nginx_proxies_to_a_backend_and_check_reports_errors() {
        let backend = Backend::start();
        let port = free_port();
        let conf = format!(
            "events {{}}\nhttp {{ access_log off;\n upstream u {{ server 127.0.0.1:{}; }}\n \
             server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://u; }} }} }}\n",
            backend.port()
        );
        let _nginx = Nginx::start(&conf, port);
        let r = http::get(("127.0.0.1", port), "/?code=503&size=4");
        assert_eq!((r.status, r.text().as_str()), (503, "abcd"));
        assert_eq!(
            backend.requests()[0].version,
            "HTTP/1.0",
            "nginx's proxy default"
        );

        let (ok, out) = Nginx::run_check(&conf);
        assert!(ok.success(), "{out}");
        let (bad, out) = Nginx::run_check("events {}\nhttp { bogus_directive 1; }\n");
        assert!(!bad.success());
        assert!(
            out.contains("unknown directive \"bogus_directive\""),
            "{out}"
        );
    }

    /// The backend failure modes as nginx classifies them (article 000's `ft_type`s).
    #[test]
    fn nginx_sees_each_failure_mode() {
        use crate::{FullBacklogListener, Mode};
        let refuse = Backend::start();
        refuse.set_mode(Mode::Refuse);
        let hang = Backend::start();
        hang.set_mode(Mode::Hang);
        let garbage = Backend::start();
        garbage.set_mode(Mode::Garbage);
        let invalid = Backend::start();
        invalid.set_mode(Mode::InvalidHeader);
        let reset = Backend::start();
        reset.set_mode(Mode::Reset);
        let blackhole = FullBacklogListener::start();
        let port = free_port();
        let loc = |name: &str, p: u16| {
            format!("location /{name} {{ proxy_pass http://127.0.0.1:{p}; }}\n")
        };
        let conf = format!(
            "events {{}}\nhttp {{ access_log off; proxy_connect_timeout 200ms; \
             proxy_read_timeout 200ms;\n server {{ listen 127.0.0.1:{port};\n{}{}{}{}{}{} }} }}\n",
            loc("refuse", refuse.port()),
            loc("hang", hang.port()),
            loc("garbage", garbage.port()),
            loc("invalid", invalid.port()),
            loc("reset", reset.port()),
            loc("blackhole", blackhole.port()),
        );
        let nginx = Nginx::start(&conf, port);
        let status = |path: &str| http::get(("127.0.0.1", port), path).status;
        assert_eq!(status("/refuse"), 502);
        assert_eq!(status("/hang"), 504);
        assert_eq!(status("/invalid"), 502);
        // Not HTTP at all: nginx relays it as an HTTP/0.9 response, no 502.
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"GET /garbage HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut relayed = Vec::new();
        s.read_to_end(&mut relayed).unwrap();
        assert_eq!(relayed, b"HELLO\r\n\r\n");
        assert_eq!(status("/reset"), 502);
        assert_eq!(status("/blackhole"), 504);
        assert_eq!(hang.hits(), 1);
        let log = nginx.error_log_contents();
        for needle in [
            "(111: Connection refused) while connecting to upstream",
            "upstream timed out (110: Connection timed out) while reading response header",
            "upstream sent no valid HTTP/1.0 header",
            "upstream sent invalid header",
            "(104: Connection reset by peer) while reading response header",
            "upstream timed out (110: Connection timed out) while connecting to upstream",
        ] {
            assert!(log.contains(needle), "{needle:?} not in error.log:\n{log}");
        }
    }
}
