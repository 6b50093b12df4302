//! Pieces the process harnesses share: a temporary directory removed on drop, a child watched
//! by a thread (so waiting with a timeout needs no polling), its output collected line by
//! line, and the two libc calls std does not offer (`kill`, `geteuid`).

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A fresh directory under `std::env::temp_dir()`, removed with its contents on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let name = format!(
                "{prefix}-{}-{}-{nanos:x}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            );
            let path = std::env::temp_dir().join(name);
            match fs::create_dir(&path) {
                Ok(()) => return TempDir { path },
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("cannot create temp dir {}: {e}", path.display()),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Sends `sig` to `pid` (a negative pid addresses a process group).
pub(crate) fn kill(pid: i32, sig: i32) -> io::Result<()> {
    #[allow(unsafe_code)]
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, sig) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub(crate) fn is_root() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) has no arguments, cannot fail and touches no memory of ours.
    let uid = unsafe { libc::geteuid() };
    uid == 0
}

/// A child process reaped by a watcher thread; its exit status is published under a condvar.
pub(crate) struct Watched {
    pid: u32,
    exit: Arc<(Mutex<Option<ExitStatus>>, Condvar)>,
}

impl Watched {
    pub fn new(mut child: Child, name: &str) -> Watched {
        let pid = child.id();
        let exit = Arc::new((Mutex::new(None), Condvar::new()));
        let exit2 = Arc::clone(&exit);
        thread::Builder::new()
            .name(format!("{name}-wait"))
            .spawn(move || {
                let status = child.wait().expect("wait for child");
                let (lock, cond) = &*exit2;
                *lock.lock().expect("exit lock") = Some(status);
                cond.notify_all();
            })
            .expect("spawn waiter thread");
        Watched { pid, exit }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn exited(&self) -> Option<ExitStatus> {
        *self.exit.0.lock().expect("exit lock")
    }

    pub fn wait_timeout(&self, timeout: Duration) -> Option<ExitStatus> {
        let (lock, cond) = &*self.exit;
        let guard = lock.lock().expect("exit lock");
        let (guard, _) = cond
            .wait_timeout_while(guard, timeout, |s| s.is_none())
            .expect("exit lock");
        *guard
    }

    /// Signals the process (or with `group`, its process group) unless it was reaped already;
    /// the check under the lock keeps us from signalling a recycled pid.
    pub fn signal(&self, sig: i32, group: bool) -> io::Result<()> {
        let guard = self.exit.0.lock().expect("exit lock");
        if guard.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "process already exited",
            ));
        }
        let pid = i32::try_from(self.pid).expect("pid fits i32");
        kill(if group { -pid } else { pid }, sig)
    }
}

/// Lines a child writes to one of its pipes, shared with the tests.
#[derive(Clone, Default)]
pub(crate) struct LineLog {
    inner: Arc<(Mutex<LogState>, Condvar)>,
}

#[derive(Default)]
struct LogState {
    lines: Vec<String>,
    eof: bool,
}

impl LineLog {
    /// Collects `pipe` line by line in a thread, echoing each line to our stderr with
    /// `label` (captured by the test harness unless the test fails).
    pub fn collect(pipe: impl Read + Send + 'static, label: &str) -> LineLog {
        let log = LineLog::default();
        let writer = log.clone();
        let label = label.to_string();
        thread::Builder::new()
            .name(format!("{label}-log"))
            .spawn(move || {
                let mut reader = BufReader::new(pipe);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match reader.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let line = String::from_utf8_lossy(&buf);
                            let line = line.trim_end_matches(['\r', '\n']).to_string();
                            // eprintln!, not io::stderr(): the test harness captures it.
                            eprintln!("[{label}] {line}");
                            writer.push(line);
                        }
                    }
                }
                let (lock, cond) = &*writer.inner;
                lock.lock().expect("log lock").eof = true;
                cond.notify_all();
            })
            .expect("spawn log thread");
        log
    }

    fn push(&self, line: String) {
        let (lock, cond) = &*self.inner;
        lock.lock().expect("log lock").lines.push(line);
        cond.notify_all();
    }

    pub fn lines(&self) -> Vec<String> {
        self.inner.0.lock().expect("log lock").lines.clone()
    }

    /// Waits for a line satisfying `pred`; false on timeout or when the pipe closed first.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let (lock, cond) = &*self.inner;
        let mut st = lock.lock().expect("log lock");
        let mut checked = 0;
        loop {
            if st.lines[checked..].iter().any(|l| pred(l)) {
                return true;
            }
            checked = st.lines.len();
            let now = Instant::now();
            if st.eof || now >= deadline {
                return false;
            }
            st = cond.wait_timeout(st, deadline - now).expect("log lock").0;
        }
    }
}

/// True when `word` occurs in `line` not embedded in a longer word ("ready" but not
/// "already").
pub(crate) fn contains_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_match_skips_already() {
        assert!(contains_word("ringfront: 2 workers ready", "ready"));
        assert!(contains_word("ready", "ready"));
        assert!(contains_word("[info] ready: listening", "ready"));
        assert!(!contains_word(
            "bind failed: Address already in use",
            "ready"
        ));
        assert!(!contains_word("readying", "ready"));
    }

    #[test]
    fn temp_dir_is_fresh_and_removed() {
        let a = TempDir::new("testkit-unit");
        let b = TempDir::new("testkit-unit");
        assert_ne!(a.path(), b.path());
        let p = a.path().to_path_buf();
        assert!(p.is_dir());
        drop(a);
        assert!(!p.exists());
    }
}
