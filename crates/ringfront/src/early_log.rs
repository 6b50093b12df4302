//! The error log before the configuration's own runs (nginx's `-e FILE`): messages of the
//! start, of `-t` and of a failed start go to stderr, prefixed `ringfront:`, and, when `-e`
//! names a file, also to that file in the error log's layout
//! (`2026/11/29 18:43:33 [emerg] 1234#0: message`), as nginx writes them there.

use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct EarlyLog {
    file: Option<PathBuf>,
}

impl EarlyLog {
    pub fn new(file: Option<PathBuf>) -> Self {
        EarlyLog { file }
    }

    /// An `[emerg]` line: stderr and the `-e` file.
    pub fn emerg(&self, msg: &str) {
        self.line("emerg", msg);
    }

    /// A line of `level` to stderr and the `-e` file.
    pub fn line(&self, level: &str, msg: &str) {
        eprintln!("ringfront: [{level}] {msg}");
        self.to_file(level, msg);
    }

    /// Appends to the `-e` file only (nothing without one); a file that cannot be opened is
    /// said once on stderr, as nginx's `open() failed` at start.
    pub fn to_file(&self, level: &str, msg: &str) {
        let Some(path) = &self.file else { return };
        let line = format!(
            "{} [{level}] {}#0: {msg}\n",
            ringfront_proxy::error_stamp(),
            std::process::id()
        );
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        match opened {
            Ok(mut f) => {
                let _ = f.write_all(line.as_bytes());
            }
            Err(e) => eprintln!(
                "ringfront: [alert] could not open error log file: open() \"{}\" failed ({e})",
                path.display()
            ),
        }
    }
}
