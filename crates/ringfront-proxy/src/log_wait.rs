//! A connection that closes after its response is closed only once the log lines its
//! requests handed to the log thread are in their files, as nginx's is (nginx writes the
//! access-log line in the worker, then closes): a client that reads to the close and then
//! reads the log finds the line, and the error-log lines before it. The worker neither
//! writes nor blocks: it sends a mark behind its lines; the log thread acks the marks after
//! its next flush and rings the worker's log bell; the closing task waits for its mark (at
//! most [`MAX_WAIT`]) while the worker serves everything else. A response on a connection
//! kept alive does not wait (the line is handed over before the next request is read).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::wake::{Notifier, Signal};

/// How long a closing connection waits for its lines: a log thread stalled on a slow disk
/// does not hold connections open for longer.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(1);

/// One worker's marks as the log thread sees them: the newest written, and its bell.
pub struct Acks {
    done: AtomicU64,
    bell: Notifier,
}

impl Acks {
    /// The log thread wrote (and flushed) every line sent before mark `seq`.
    pub(crate) fn ack(&self, seq: u64) {
        self.done.fetch_max(seq, Ordering::SeqCst);
        self.bell.notify();
    }
}

/// The worker's side: marks sent, and the tasks waiting for theirs.
pub(crate) struct LogWait {
    acks: Arc<Acks>,
    sent: Cell<u64>,
    waiters: Rc<RefCell<Vec<Waker>>>,
}

impl LogWait {
    /// Installs the log bell on the current runtime; `None` when it cannot be made (then
    /// connections close without waiting, as before).
    pub(crate) fn install() -> Option<LogWait> {
        let (bell, rx) = crate::wake::bell().ok()?;
        let rung = Rc::new(Signal::default());
        rx.install(rung.clone()).ok()?;
        let waiters: Rc<RefCell<Vec<Waker>>> = Rc::default();
        let woken = waiters.clone();
        monoio::spawn(async move {
            loop {
                rung.wait().await;
                let all = std::mem::take(&mut *woken.borrow_mut());
                all.into_iter().for_each(Waker::wake);
            }
        });
        let acks = Arc::new(Acks {
            done: AtomicU64::new(0),
            bell,
        });
        Some(LogWait {
            acks,
            sent: Cell::new(0),
            waiters,
        })
    }

    /// The next mark to send behind this worker's lines, and the acks it goes to.
    pub(crate) fn next_mark(&self) -> (Arc<Acks>, u64) {
        let seq = self.sent.get() + 1;
        self.sent.set(seq);
        (self.acks.clone(), seq)
    }

    /// Resolves once mark `seq` is acked.
    pub(crate) fn written(&self, seq: u64) -> Written<'_> {
        Written { lw: self, seq }
    }
}

pub(crate) struct Written<'a> {
    lw: &'a LogWait,
    seq: u64,
}

impl Future for Written<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Registered before the look: an ack after it rings the bell, which wakes us.
        self.lw.waiters.borrow_mut().push(cx.waker().clone());
        match self.lw.acks.done.load(Ordering::SeqCst) >= self.seq {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_waited_for_until_acked() {
        let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        rt.block_on(async {
            let lw = LogWait::install().unwrap();
            let (acks, seq) = lw.next_mark();
            assert_eq!(seq, 1);
            let early = monoio::time::timeout(Duration::from_millis(30), lw.written(seq)).await;
            assert!(early.is_err(), "not acked yet");
            // The log thread's side, from another thread.
            let t = std::thread::spawn(move || acks.ack(seq));
            monoio::time::timeout(Duration::from_secs(5), lw.written(seq))
                .await
                .expect("acked");
            t.join().unwrap();
            // An older mark is done at once.
            lw.written(1).await;
        });
    }
}
