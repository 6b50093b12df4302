//! A worker's access-log lines, gathered while its tasks run and handed to the log thread
//! together: one message (and one buffer) per sink for all the requests that ended in one
//! turn of the event loop, rather than one per line. A task of the worker hands them over;
//! it is woken by the first line of a batch and runs after the tasks already woken, so the
//! lines leave within the turn that wrote them ("a moment after the response", as before).
//! Anything that must come after them (an error-log line, a mark a closing connection
//! waits for) hands the batch over first, so a worker's lines keep their order.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::logger::{Logger, Sink};

/// What a batch starts with for each sink: room for about two `combined` lines, doubled as
/// more come. Small on purpose: while the log thread is behind (a slow disk), every batch
/// waits in its channel, and a turn often ends one request.
const BATCH_CAPACITY: usize = 256;

pub(crate) struct Batch(Rc<Inner>);

struct Inner {
    logger: Logger,
    lines: RefCell<Vec<(Sink, Vec<u8>)>>,
    /// The task that hands batches over, once spawned; its waker while it waits.
    spawned: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Batch {
    pub(crate) fn new(logger: Logger) -> Self {
        Batch(Rc::new(Inner {
            logger,
            lines: RefCell::default(),
            spawned: Cell::new(false),
            waker: Cell::new(None),
        }))
    }

    /// Appends what `write` writes (whole lines) to the batch for `sink`. Inside a monoio
    /// runtime (the handing-over task is spawned on first use).
    pub(crate) fn push(&self, sink: &Sink, write: impl FnOnce(&mut Vec<u8>)) {
        let mut lines = self.0.lines.borrow_mut();
        let first = lines.is_empty();
        match lines.iter_mut().find(|(s, _)| s == sink) {
            Some((_, buf)) => write(buf),
            None => {
                let mut buf = Vec::with_capacity(BATCH_CAPACITY);
                write(&mut buf);
                lines.push((sink.clone(), buf));
            }
        }
        drop(lines);
        if first {
            self.wake();
        }
    }

    /// Hands every gathered line to the log thread now.
    pub(crate) fn hand_over(&self) {
        self.0.hand_over();
    }

    fn wake(&self) {
        if !self.0.spawned.replace(true) {
            let inner = self.0.clone();
            monoio::spawn(async move {
                loop {
                    poll_fn(|cx| match inner.lines.borrow().is_empty() {
                        true => {
                            inner.waker.set(Some(cx.waker().clone()));
                            Poll::Pending
                        }
                        false => Poll::Ready(()),
                    })
                    .await;
                    inner.hand_over();
                }
            });
        } else if let Some(w) = self.0.waker.take() {
            w.wake();
        }
    }
}

impl Inner {
    fn hand_over(&self) {
        let lines = std::mem::take(&mut *self.lines.borrow_mut());
        for (sink, buf) in lines {
            self.logger.write(&sink, buf);
        }
    }
}

impl Drop for Inner {
    /// The worker ends: what is left goes too.
    fn drop(&mut self) {
        self.hand_over();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn runtime() -> monoio::Runtime<monoio::LegacyDriver> {
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .build()
            .unwrap()
    }

    /// A fresh folder for one test's files.
    fn folder(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ringfront-log-batch-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn sink_in(dir: &std::path::Path, name: &str) -> (Sink, PathBuf) {
        let path = dir.join(name);
        (Sink::File(Arc::new(path.clone())), path)
    }

    #[test]
    fn lines_of_one_turn_go_together_and_in_order() {
        let dir = folder("order");
        let (a, a_path) = sink_in(&dir, "a.log");
        let (b, b_path) = sink_in(&dir, "b.log");
        let (logger, _thread) = Logger::start();
        let task_logger = logger.clone();
        // A task of its own, as a connection's (woken tasks run in the order they woke).
        let task = async move {
            let logger = task_logger;
            let batch = Batch::new(logger.clone());
            batch.push(&a, |o| o.extend_from_slice(b"1\n"));
            batch.push(&b, |o| o.extend_from_slice(b"x\n"));
            batch.push(&a, |o| o.extend_from_slice(b"2\n"));
            assert_eq!(batch.0.lines.borrow().len(), 2, "one buffer per sink");
            // A task queued behind the handing-over one: once it has run, so has that.
            monoio::spawn(async {}).await;
            assert!(
                batch.0.lines.borrow().is_empty(),
                "handed over in the same turn"
            );
            batch.push(&a, |o| o.extend_from_slice(b"3\n"));
            // An error-log line of the worker comes after: the batch goes first.
            batch.hand_over();
            logger.write(&a, b"error\n".to_vec());
        };
        runtime().block_on(async move { monoio::spawn(task).await });
        logger.flush();
        assert_eq!(std::fs::read(&a_path).unwrap(), b"1\n2\n3\nerror\n");
        assert_eq!(std::fs::read(&b_path).unwrap(), b"x\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn lines_left_when_the_worker_ends_are_written() {
        let dir = folder("end");
        let (a, a_path) = sink_in(&dir, "a.log");
        let (logger, _thread) = Logger::start();
        runtime().block_on(async {
            let batch = Batch::new(logger.clone());
            batch.push(&a, |o| o.extend_from_slice(b"last\n"));
        });
        logger.flush();
        assert_eq!(std::fs::read(&a_path).unwrap(), b"last\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
