//! The log writer thread: workers format a line and hand it over a crossbeam channel, so no
//! worker ever blocks on file I/O. Files are opened by the writer, appended to, and flushed
//! whenever the channel runs dry. `reopen` (SIGUSR1) closes and reopens every file, as
//! nginx does for log rotation. A mark (`log_wait`) is acked once every line sent before it
//! is flushed: after the batch it came in, or after [`ACK_WITHIN`] more messages when lines
//! keep coming. Lines reach their files in the order they were sent: when a line goes to
//! another sink than the line before, the buffer of the one before is written out first
//! (an error-log line is in its file before the access-log line of the same request).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::thread::JoinHandle;

use std::sync::Arc;

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::log_wait::Acks;

/// Where a line goes. A file's path is shared: a sink goes with every line (a count, not
/// a copy).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Sink {
    Stderr,
    File(Arc<PathBuf>),
}

impl Sink {
    /// The sink for `path` (`/dev/stderr` is stderr, as nginx's).
    pub fn of(path: &std::path::Path) -> Sink {
        match path.as_os_str() == "/dev/stderr" {
            true => Sink::Stderr,
            false => Sink::File(Arc::new(path.to_path_buf())),
        }
    }
}

enum Msg {
    /// Whole lines (one or more, each ending with `\n`), written as they are.
    Line(Sink, Vec<u8>),
    Flush(Sender<()>),
    Reopen(Sender<()>),
    Mark(Arc<Acks>, u64),
}

/// A mark waits at most this many further messages for its flush, so that a channel that
/// never runs dry does not hold closing connections.
const ACK_WITHIN: usize = 64;

/// Cheap to clone; one per worker.
#[derive(Clone)]
pub struct Logger {
    tx: Sender<Msg>,
}

impl Logger {
    /// Starts the writer thread. It ends when every `Logger` clone is dropped.
    pub fn start() -> (Logger, JoinHandle<()>) {
        let (tx, rx) = unbounded();
        let handle = std::thread::Builder::new()
            .name("ringfront-log".into())
            .spawn(move || writer(rx))
            .unwrap_or_else(|e| panic!("cannot start the log thread: {e}"));
        (Logger { tx }, handle)
    }

    pub fn write(&self, sink: &Sink, line: Vec<u8>) {
        let _ = self.tx.send(Msg::Line(sink.clone(), line));
    }

    /// Asks for `acks.ack(seq)` once every line sent before is written (never blocks).
    pub(crate) fn mark(&self, acks: Arc<Acks>, seq: u64) {
        let _ = self.tx.send(Msg::Mark(acks, seq));
    }

    /// Blocks until every line sent before is written (used at exit).
    pub fn flush(&self) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }

    /// Blocks until every file is reopened at its path (nginx's USR1): lines sent before go
    /// to the file that was open (renamed or not), lines sent after go to a file created at
    /// the configured path. A file that cannot be reopened keeps the old one, as nginx does.
    pub fn reopen(&self) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        if self.tx.send(Msg::Reopen(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}

/// One error-log line in nginx's layout: `YYYY/MM/DD HH:MM:SS [level] PID#TID: *CONN msg`
/// (`TID` is the worker's index, or `hc` for the health checker), to every error log of
/// the snapshot, when `level` passes its threshold (then true).
pub(crate) fn error_line(
    logger: &Logger,
    snap: &crate::Snapshot,
    level: ringfront_config::LogLevel,
    tid: impl std::fmt::Display,
    conn: u64,
    msg: std::fmt::Arguments<'_>,
) -> bool {
    use ringfront_config::LogLevel;
    if level < snap.error_level {
        return false;
    }
    let name = match level {
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Notice => "notice",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
        LogLevel::Crit => "crit",
        LogLevel::Alert => "alert",
        LogLevel::Emerg => "emerg",
    };
    let conn = if conn == 0 {
        String::new()
    } else {
        format!("*{conn} ")
    };
    let line = format!(
        "{} [{name}] {}#{tid}: {conn}{msg}\n",
        crate::clock::wall().error_stamp(),
        std::process::id(),
    );
    for sink in &snap.error_logs {
        logger.write(sink, line.clone().into_bytes());
    }
    !snap.error_logs.is_empty()
}

fn open(path: &PathBuf) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// The writer's open files, found by the sink's shared path (the configuration's, or an
/// equal one from a reload), and the file the last line went to.
#[derive(Default)]
struct Files(Vec<(Arc<PathBuf>, io::BufWriter<File>)>, Option<usize>);

impl Files {
    /// The file of `path`, opened (appending) on first use; `None` when it cannot be.
    fn get(
        &mut self,
        path: &Arc<PathBuf>,
        stderr: &mut impl Write,
    ) -> Option<&mut io::BufWriter<File>> {
        let found = match self.0.iter().position(|(p, _)| Arc::ptr_eq(p, path)) {
            Some(i) => i,
            None => match self.0.iter().position(|(p, _)| p == path) {
                Some(i) => {
                    // A reload's sink: found by its own pointer from now on.
                    self.0[i].0 = path.clone();
                    i
                }
                None => match open(path) {
                    Ok(f) => {
                        self.0.push((path.clone(), io::BufWriter::new(f)));
                        self.0.len() - 1
                    }
                    Err(e) => {
                        let _ = writeln!(
                            stderr,
                            "ringfront: open() \"{}\" failed ({e})",
                            path.display()
                        );
                        return None;
                    }
                },
            },
        };
        self.switch_to(Some(found));
        self.0.get_mut(found).map(|(_, f)| f)
    }

    /// Writes out the buffer of the file the last line went to when the next goes elsewhere
    /// (`None`: stderr).
    fn switch_to(&mut self, next: Option<usize>) {
        if self.1 != next {
            if let Some((_, f)) = self.1.and_then(|i| self.0.get_mut(i)) {
                let _ = f.flush();
            }
            self.1 = next;
        }
    }

    fn flush(&mut self) {
        for (_, f) in &mut self.0 {
            let _ = f.flush();
        }
    }

    /// nginx's USR1: each file reopened at its path (a failure keeps the old one).
    fn reopen(&mut self, stderr: &mut impl Write) {
        for (path, f) in &mut self.0 {
            match open(path) {
                Ok(new) => *f = io::BufWriter::new(new),
                Err(e) => {
                    let _ = writeln!(
                        stderr,
                        "ringfront: [alert] reopen() \"{}\" failed ({e})",
                        path.display()
                    );
                }
            }
        }
    }
}

fn writer(rx: Receiver<Msg>) {
    let mut files = Files::default();
    let mut stderr = io::BufWriter::new(io::stderr());
    let flush_all = |files: &mut Files, stderr: &mut io::BufWriter<io::Stderr>| {
        files.flush();
        let _ = stderr.flush();
    };
    let mut marks: Vec<(Arc<Acks>, u64)> = Vec::new();
    let mut since_mark = 0;
    let ack = |marks: &mut Vec<(Arc<Acks>, u64)>| {
        marks.drain(..).for_each(|(acks, seq)| acks.ack(seq));
    };
    while let Ok(msg) = rx.recv() {
        let mut next = Some(msg);
        while let Some(msg) = next.take() {
            if !marks.is_empty() {
                since_mark += 1;
                if since_mark >= ACK_WITHIN {
                    flush_all(&mut files, &mut stderr);
                    ack(&mut marks);
                }
            }
            match msg {
                Msg::Mark(acks, seq) => {
                    if marks.is_empty() {
                        since_mark = 0;
                    }
                    marks.push((acks, seq));
                }
                Msg::Line(Sink::Stderr, line) => {
                    files.switch_to(None);
                    let _ = stderr.write_all(&line);
                }
                Msg::Line(Sink::File(path), line) => {
                    if !stderr.buffer().is_empty() {
                        let _ = stderr.flush();
                    }
                    if let Some(f) = files.get(&path, &mut stderr) {
                        let _ = f.write_all(&line);
                    }
                }
                Msg::Flush(done) => {
                    flush_all(&mut files, &mut stderr);
                    let _ = done.send(());
                }
                Msg::Reopen(done) => {
                    flush_all(&mut files, &mut stderr);
                    files.reopen(&mut stderr);
                    let _ = stderr.flush();
                    let _ = done.send(());
                }
            }
            next = rx.try_recv().ok();
        }
        flush_all(&mut files, &mut stderr);
        ack(&mut marks);
    }
    flush_all(&mut files, &mut stderr);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's error-log line is on disk before its access-log line is written: a
    /// reader that has seen the access line finds the error line too.
    #[test]
    fn a_line_for_another_file_writes_out_the_one_before() {
        let dir = std::env::temp_dir().join(format!("rf-logger-order-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (e, a) = (Arc::new(dir.join("e.log")), Arc::new(dir.join("a.log")));
        let mut files = Files::default();
        let mut err = Vec::new();
        for (path, line) in [(&a, "a0\n"), (&e, "e1\n"), (&a, "a1\n")] {
            let f = files.get(path, &mut err).expect("opened");
            f.write_all(line.as_bytes()).expect("buffered");
        }
        let on_disk = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(on_disk(&e), "e1\n", "written out when a.log's line came");
        assert_eq!(on_disk(&a), "a0\n", "a1 still buffered");
        files.flush();
        assert_eq!(on_disk(&a), "a0\na1\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
