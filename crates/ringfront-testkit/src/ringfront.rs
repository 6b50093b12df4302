//! The ringfront process harness: write a config into a fresh directory, start the binary on
//! it, wait for its `ready` line on stderr, and keep every stderr line for assertions.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::process::{contains_word, LineLog, TempDir, Watched};

/// How long `Ringfront::start` waits for the `ready` line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `ringfront -c <dir>/ringfront.conf`; killed (SIGKILL) and its directory removed
/// on drop.
pub struct Ringfront {
    // Field order matters for drop: kill happens in Drop::drop, the directory goes last.
    proc: Watched,
    stderr: LineLog,
    stdout: LineLog,
    config_path: PathBuf,
    dir: TempDir,
}

impl Ringfront {
    /// Starts ringfront on `config_text`; panics (with the collected stderr) unless it prints
    /// its `ready` line within 20 s.
    pub fn start(config_text: &str) -> Ringfront {
        Ringfront::start_with_args(config_text, &[])
    }

    /// Like [`Ringfront::start`], with extra command-line arguments after `-c <file>`.
    pub fn start_with_args(config_text: &str, args: &[&str]) -> Ringfront {
        Ringfront::start_binary(&binary_path(), config_text, args)
    }

    /// Like [`Ringfront::start_with_args`] with an explicit binary (a wrapper script, or a
    /// build other than the one next to the test executable).
    pub fn start_binary(bin: &Path, config_text: &str, args: &[&str]) -> Ringfront {
        let dir = TempDir::new("ringfront-test");
        let config_path = dir.path().join("ringfront.conf");
        fs::write(&config_path, config_text).expect("write ringfront.conf");
        let mut cmd = Command::new(bin);
        cmd.arg("-c")
            .arg(&config_path)
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(driver) = std::env::var_os("RINGFRONT_DRIVER") {
            cmd.env("RINGFRONT_DRIVER", driver);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stderr = LineLog::collect(child.stderr.take().expect("stderr pipe"), "ringfront");
        let stdout = LineLog::collect(child.stdout.take().expect("stdout pipe"), "ringfront:out");
        let proc = Watched::new(child, "ringfront");
        let rf = Ringfront {
            proc,
            stderr,
            stdout,
            config_path,
            dir,
        };
        if !rf
            .stderr
            .wait_for(READY_TIMEOUT, |l| contains_word(l, "ready"))
        {
            let exit = rf.proc.wait_timeout(Duration::from_millis(100));
            panic!(
                "ringfront did not print a `ready` line (exit: {exit:?}); config:\n{config_text}\nstderr:\n{}",
                rf.stderr.lines().join("\n")
            );
        }
        rf
    }

    /// Runs `ringfront -t -c <file>` on `config_text`; returns its exit status and its
    /// stdout followed by its stderr.
    pub fn run_check(config_text: &str) -> (ExitStatus, String) {
        let dir = TempDir::new("ringfront-check");
        let config_path = dir.path().join("ringfront.conf");
        fs::write(&config_path, config_text).expect("write ringfront.conf");
        let bin = binary_path();
        let out = Command::new(&bin)
            .arg("-t")
            .arg("-c")
            .arg(&config_path)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status, text)
    }

    /// The temporary directory holding the config (and anything relative paths write).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// Replaces the config file (for reload tests: follow with `signal(libc::SIGHUP)`).
    pub fn write_config(&self, config_text: &str) {
        fs::write(&self.config_path, config_text).expect("write ringfront.conf");
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Every stderr line so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// Every stdout line so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lines()
    }

    /// Waits until some stderr line (printed before or during the wait) contains `needle`.
    /// False on timeout or when stderr closed without one.
    pub fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> bool {
        self.stderr.wait_for(timeout, |l| l.contains(needle))
    }

    /// Sends a signal (`libc::SIGHUP`, `libc::SIGTERM`, ...); panics if the process is gone.
    pub fn signal(&self, sig: i32) {
        self.proc
            .signal(sig, false)
            .unwrap_or_else(|e| panic!("signal {sig} to ringfront {}: {e}", self.pid()));
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        self.proc.wait_timeout(timeout)
    }

    /// The exit status if it has exited.
    pub fn exited(&self) -> Option<ExitStatus> {
        self.proc.exited()
    }
}

impl Drop for Ringfront {
    fn drop(&mut self) {
        // The whole process group: ringfront was started as its own group leader.
        let _ = self.proc.signal(libc::SIGKILL, true);
        self.proc.wait_timeout(Duration::from_secs(5));
    }
}

/// The ringfront binary: `$RINGFRONT_BIN`, else `ringfront` in the cargo profile directory
/// this test executable was built in (`target/<profile>/deps/<test>` -> `target/<profile>/`).
pub fn binary_path() -> PathBuf {
    if let Some(bin) = std::env::var_os("RINGFRONT_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut tried = Vec::new();
    for dir in exe.ancestors().skip(1).take(3) {
        let candidate = dir.join("ringfront");
        if candidate.is_file() {
            return candidate;
        }
        tried.push(candidate);
    }
    panic!(
        "ringfront binary not found (tried {tried:?}); build it first (`cargo build -p ringfront`, \
         same profile and target dir as the tests) or set RINGFRONT_BIN"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for the ringfront binary: prints like it would and waits for signals.
    fn fake_binary(dir: &TempDir, script_body: &str) -> PathBuf {
        let path = dir.path().join("fake-ringfront");
        fs::write(&path, format!("#!/bin/sh\n{script_body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn harness_waits_for_ready_collects_stderr_and_signals() {
        let bins = TempDir::new("testkit-fake");
        let bin = fake_binary(
            &bins,
            "echo \"bind: Address already in use\" >&2\n\
             test -f \"$2\" && echo \"config $2\" >&2\n\
             trap 'echo got hup >&2' HUP\n\
             echo \"2 workers ready\" >&2\n\
             while :; do sleep 0.05; done",
        );
        let rf = Ringfront::start_binary(&bin, "events {}\n", &[]);
        let lines = rf.stderr_lines();
        assert!(lines.iter().any(|l| l.starts_with("config ")), "{lines:?}");
        assert_eq!(fs::read_to_string(rf.config_path()).unwrap(), "events {}\n");
        rf.signal(libc::SIGHUP);
        assert!(rf.wait_for_stderr("got hup", Duration::from_secs(5)));
        assert!(!rf.wait_for_stderr("never printed", Duration::from_millis(50)));
        assert!(rf.wait_exit(Duration::from_millis(10)).is_none());
        rf.signal(libc::SIGTERM);
        let status = rf.wait_exit(Duration::from_secs(5)).expect("exited");
        assert!(!status.success());
        let dir = rf.dir().to_path_buf();
        drop(rf);
        assert!(!dir.exists());
    }

    #[test]
    #[should_panic(expected = "did not print a `ready` line")]
    fn harness_fails_fast_when_the_binary_exits() {
        let bins = TempDir::new("testkit-fake");
        let bin = fake_binary(&bins, "echo 'emerg: unknown directive' >&2; exit 1");
        Ringfront::start_binary(&bin, "bogus;\n", &[]);
    }
}
