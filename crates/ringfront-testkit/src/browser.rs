//! Headless Chromium for tests that need a real browser: the DOM after the page's scripts ran
//! ([`dump_dom`]) and a PNG of the rendered page ([`screenshot`]).
//!
//! Each run gets a throwaway profile (`--user-data-dir` in a [`TempDir`]) and no network
//! beyond loopback: every non-loopback request goes to a dead proxy (`--proxy-server` on
//! 127.0.0.1:9; Chromium always connects to loopback hosts directly), host names other than
//! `localhost` do not resolve, and background services (updates, sync, metrics) are off.
//! `--no-sandbox` is required when the tests run as root (as in CI containers);
//! `--disable-dev-shm-usage` avoids crashes with a small `/dev/shm`. The browser runs in its
//! own process group, and the whole group is killed on timeout.
//!
//! The binary is `$RINGFRONT_CHROMIUM` if set, else [`CHROMIUM_BIN`] (Debian: `apt-get
//! install chromium`).

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{kill, TempDir};

/// Where Debian installs Chromium.
pub const CHROMIUM_BIN: &str = "/usr/bin/chromium";

/// How long [`dump_dom`] and [`screenshot`] let the browser run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The browser binary: `$RINGFRONT_CHROMIUM`, else [`CHROMIUM_BIN`].
pub fn chromium_path() -> PathBuf {
    std::env::var_os("RINGFRONT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CHROMIUM_BIN))
}

/// Whether the browser binary exists.
pub fn available() -> bool {
    chromium_path().is_file()
}

/// The flags every run uses (before the mode flags and the URL).
pub fn base_args(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-sync",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--metrics-recording-only",
        "--mute-audio",
        "--proxy-server=http://127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}

/// The serialized DOM of `url` after it loaded (`--dump-dom`).
pub fn dump_dom(url: &str) -> io::Result<String> {
    dump_dom_timeout(url, DEFAULT_TIMEOUT)
}

/// [`dump_dom`] with a time limit of `timeout`.
pub fn dump_dom_timeout(url: &str, timeout: Duration) -> io::Result<String> {
    dump_dom_with(url, &[], timeout)
}

/// [`dump_dom`] with more flags (`extra`, e.g. a pinned test certificate or a virtual time
/// budget that lets the page's fetches finish before the DOM is taken).
pub fn dump_dom_with(url: &str, extra: &[String], timeout: Duration) -> io::Result<String> {
    let mut mode = vec!["--dump-dom".to_string()];
    mode.extend_from_slice(extra);
    let out = run(&mode, url, timeout)?;
    if out.stdout.is_empty() {
        return Err(io::Error::other(format!(
            "chromium printed no DOM for {url}; stderr:\n{}",
            out.stderr_tail()
        )));
    }
    String::from_utf8(out.stdout)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("DOM not UTF-8: {e}")))
}

/// Saves a `width`×`height` PNG of `url` at `path` (`--screenshot`); checks that the file
/// is a PNG.
pub fn screenshot(url: &str, path: &Path, width: u32, height: u32) -> io::Result<()> {
    screenshot_timeout(url, path, width, height, DEFAULT_TIMEOUT)
}

/// [`screenshot`] with a time limit of `timeout`.
pub fn screenshot_timeout(
    url: &str,
    path: &Path,
    width: u32,
    height: u32,
    timeout: Duration,
) -> io::Result<()> {
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    // A stale file must not pass for this run's screenshot.
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let args = [
        format!("--screenshot={}", path.display()),
        format!("--window-size={width},{height}"),
        "--hide-scrollbars".to_string(),
    ];
    let out = run(&args, url, timeout)?;
    let mut head = [0u8; 8];
    let read = std::fs::File::open(&path).and_then(|mut f| f.read_exact(&mut head));
    if let Err(e) = read {
        return Err(io::Error::other(format!(
            "no screenshot at {}: {e}; stderr:\n{}",
            path.display(),
            out.stderr_tail()
        )));
    }
    if head != PNG_SIGNATURE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a PNG", path.display()),
        ));
    }
    Ok(())
}

struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Output {
    /// The last lines of stderr, without Chromium's D-Bus noise.
    fn stderr_tail(&self) -> String {
        let text = String::from_utf8_lossy(&self.stderr);
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("dbus")).collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Runs the browser on `url` with the base flags plus `mode`; an error if it fails to start,
/// exits unsuccessfully or outlives `timeout` (then its process group is killed).
fn run(mode: &[String], url: &str, timeout: Duration) -> io::Result<Output> {
    let bin = chromium_path();
    let profile = TempDir::new("ringfront-chromium");
    let mut cmd = Command::new(&bin);
    cmd.args(base_args(profile.path()))
        .args(mode)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start {}: {e}", bin.display())))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child, timeout);
    // Helpers (zygote, renderer) that outlived the browser would hold the pipes open.
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(-pid, libc::SIGKILL);
    }
    let status = status?;
    let out = Output {
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    match status {
        Some(s) if s.success() => Ok(out),
        Some(s) => Err(io::Error::other(format!(
            "chromium on {url} exited with {s}; stderr:\n{}",
            out.stderr_tail()
        ))),
        None => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "chromium on {url} ran past {timeout:?} and was killed; stderr:\n{}",
                out.stderr_tail()
            ),
        )),
    }
}

/// The exit status, or `None` after killing the process group at `timeout`.
fn wait(child: &mut Child, timeout: Duration) -> io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        if Instant::now() >= deadline {
            // SIGTERM first: the browser then ends and reaps its helpers itself (killed
            // outright they would become orphans, and a container's init may never reap
            // them). SIGKILL to the whole group if it is not gone within two seconds.
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = kill(pid, libc::SIGTERM);
                let grace = Instant::now() + Duration::from_secs(2);
                while Instant::now() < grace {
                    if child.try_wait()?.is_some() {
                        return Ok(None);
                    }
                    thread::sleep(Duration::from_millis(20));
                }
                let _ = kill(-pid, libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{After, RawBackend};

    fn require_chromium() {
        assert!(
            available(),
            "chromium not installed: apt-get install chromium ({} missing)",
            chromium_path().display()
        );
    }

    fn page_server(html: &str) -> RawBackend {
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
             Content-Length: {}\r\n\r\n{html}",
            html.len()
        );
        RawBackend::start(reply.as_bytes(), After::Keep)
    }

    const PAGE: &str = "<!DOCTYPE html><html><head><title>t</title>\
        <style>body{background:#0a0}</style></head><body>\
        <table><tr class=\"peer state-up\" data-peer=\"a\"><td>a</td></tr></table>\
        <div id=\"made\"></div>\
        <script>document.getElementById('made').textContent='by script';</script>\
        </body></html>";

    #[test]
    fn dom_and_screenshot() {
        require_chromium();
        let server = page_server(PAGE);
        let url = format!("http://127.0.0.1:{}/status", server.port());
        let dom = dump_dom(&url).unwrap();
        assert!(
            dom.contains("<tr class=\"peer state-up\" data-peer=\"a\">"),
            "{dom}"
        );
        // The DOM is the one after scripts ran.
        assert!(dom.contains("<div id=\"made\">by script</div>"), "{dom}");
        assert!(server.requests() >= 1);

        let dir = TempDir::new("ringfront-shot");
        let png = dir.path().join("page.png");
        screenshot(&url, &png, 640, 480).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(PNG_SIGNATURE));
        // IHDR: width and height, big-endian, right after the signature and chunk header.
        assert_eq!(&bytes[16..24], &[0, 0, 2, 128, 0, 0, 1, 224]);
    }

    #[test]
    fn no_network_beyond_loopback() {
        require_chromium();
        // A page that tries an outside host: it must neither hang nor reach it.
        let server = page_server(
            "<html><body><img src=\"http://example.com/x.png\" \
             onerror=\"document.getElementById('p').dataset.blocked='yes'\">\
             <p id=\"p\">local</p></body></html>",
        );
        let url = format!("http://127.0.0.1:{}/", server.port());
        let start = Instant::now();
        let dom = dump_dom(&url).unwrap();
        assert!(
            dom.contains("<p id=\"p\" data-blocked=\"yes\">local</p>"),
            "{dom}"
        );
        assert!(start.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn timeout_kills_the_browser() {
        require_chromium();
        // Answers nothing: the browser waits for the response until we kill it.
        let server = RawBackend::start(b"", After::Stall(Duration::from_secs(60)));
        let url = format!("http://127.0.0.1:{}/", server.port());
        let start = Instant::now();
        let err = dump_dom_timeout(&url, Duration::from_secs(3)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn missing_screenshot_is_an_error() {
        require_chromium();
        let dir = TempDir::new("ringfront-shot");
        // The folder does not exist, so Chromium cannot write the file.
        let png = dir.path().join("nope").join("page.png");
        let server = page_server(PAGE);
        let url = format!("http://127.0.0.1:{}/", server.port());
        assert!(screenshot(&url, &png, 100, 100).is_err());
    }
}
