//! The log writer thread: workers format a line and hand it over a crossbeam channel, so no
//! worker ever blocks on file I/O. Files are opened by the writer, appended to, and flushed
//! whenever the channel runs dry. `reopen` (SIGUSR1) closes and reopens every file, as
//! nginx does for log rotation. A mark (`log_wait`) is acked once every line sent before it
//! is flushed: after the batch it came in, or after [`ACK_WITHIN`] more messages when lines
//! keep coming.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::thread::JoinHandle;

use std::sync::Arc;

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::log_wait::Acks;

/// Where a line goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Sink {
    Stderr,
    File(PathBuf),
}

enum Msg {
    Line(Sink, String),
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

    pub fn write(&self, sink: &Sink, line: String) {
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
        logger.write(sink, line.clone());
    }
    !snap.error_logs.is_empty()
}

fn open(path: &PathBuf) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    OpenOptions::new().create(true).append(true).open(path)
}

fn writer(rx: Receiver<Msg>) {
    let mut files: HashMap<PathBuf, io::BufWriter<File>> = HashMap::new();
    let mut stderr = io::BufWriter::new(io::stderr());
    let flush_all = |files: &mut HashMap<PathBuf, io::BufWriter<File>>,
                     stderr: &mut io::BufWriter<io::Stderr>| {
        for f in files.values_mut() {
            let _ = f.flush();
        }
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
                    let _ = stderr.write_all(line.as_bytes());
                }
                Msg::Line(Sink::File(path), line) => {
                    if !files.contains_key(&path) {
                        match open(&path) {
                            Ok(f) => {
                                files.insert(path.clone(), io::BufWriter::new(f));
                            }
                            Err(e) => {
                                let _ = writeln!(
                                    stderr,
                                    "ringfront: open() \"{}\" failed ({e})",
                                    path.display()
                                );
                                continue;
                            }
                        }
                    }
                    if let Some(f) = files.get_mut(&path) {
                        let _ = f.write_all(line.as_bytes());
                    }
                }
                Msg::Flush(done) => {
                    flush_all(&mut files, &mut stderr);
                    let _ = done.send(());
                }
                Msg::Reopen(done) => {
                    flush_all(&mut files, &mut stderr);
                    for (path, f) in files.iter_mut() {
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
