use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use super::*;

/// Runs `f` on an epoll runtime, then on an io_uring one where this kernel has io_uring.
fn on_both_drivers<F, Fut>(f: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()
        .expect("epoll runtime")
        .block_on(f());
    if monoio::utils::detect_uring() {
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .enable_timer()
            .build()
            .expect("io_uring runtime")
            .block_on(f());
    } else {
        eprintln!("io_uring unavailable: epoll only");
    }
}

/// A hang is a failure, not a stuck test run.
async fn within(what: &str, fut: impl Future<Output = ()>) {
    monoio::time::timeout(Duration::from_secs(10), fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no wakeup within 10 s"));
}

#[test]
fn another_thread_wakes_a_parked_runtime_every_time() {
    on_both_drivers(|| async {
        let (notifier, bell) = bell().unwrap();
        let signal = Rc::new(Signal::default());
        bell.install(signal.clone()).unwrap();
        let (ask, asked) = std::sync::mpsc::channel::<u32>();
        let helper = std::thread::spawn(move || {
            // Each request is answered while the runtime is (or is about to be) parked in
            // its wait: both orders must wake it.
            for _ in asked {
                notifier.notify();
            }
        });
        for round in 0..500 {
            ask.send(round).unwrap();
            within("ping-pong", signal.wait()).await;
        }
        drop(ask);
        helper.join().unwrap();
    });
}

#[test]
fn a_burst_of_rings_is_one_wakeup_and_later_rings_still_wake() {
    on_both_drivers(|| async {
        let (notifier, bell) = bell().unwrap();
        let signal = Rc::new(Signal::default());
        bell.install(signal.clone()).unwrap();
        let n = notifier.clone();
        std::thread::spawn(move || (0..10_000).for_each(|_| n.notify()))
            .join()
            .unwrap();
        within("burst", signal.wait()).await;
        // One byte was written for the whole burst: nothing more to read.
        let extra = monoio::time::timeout(Duration::from_millis(30), signal.wait()).await;
        assert!(extra.is_err(), "a coalesced burst woke the runtime twice");
        let n = notifier.clone();
        std::thread::spawn(move || n.notify()).join().unwrap();
        within("after the burst", signal.wait()).await;
    });
}

#[test]
fn a_channel_message_wakes_the_receiver() {
    on_both_drivers(|| async {
        let (tx, rx) = channel::<u32>().unwrap();
        let signal = Rc::new(Signal::default());
        rx.bell.install(signal.clone()).unwrap();
        let sender = std::thread::spawn(move || {
            for v in 0..100 {
                tx.send(v).unwrap();
            }
        });
        let mut got = Vec::new();
        while got.len() < 100 {
            within("channel", signal.wait()).await;
            got.extend(rx.rx.try_iter());
        }
        sender.join().unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
    });
}

#[test]
fn a_signal_raised_before_the_wait_is_kept_and_a_dropped_wait_loses_nothing() {
    on_both_drivers(|| async {
        let s = Signal::default();
        s.raise();
        within("raised before", s.wait()).await;
        // A wait given up (as the losing branch of a select) leaves no stale waker.
        let gone = monoio::time::timeout(Duration::from_millis(1), s.wait()).await;
        assert!(gone.is_err());
        assert!(s.waiter.take().is_none());
        s.raise();
        within("raised after a dropped wait", s.wait()).await;
    });
}

#[test]
fn a_local_raise_wakes_the_waiting_task() {
    on_both_drivers(|| async {
        let s = Rc::new(Signal::default());
        let r = s.clone();
        monoio::spawn(async move { r.raise() });
        within("local raise", s.wait()).await;
    });
}

#[test]
fn a_reload_waits_until_every_worker_applied_it() {
    let applied = Arc::new(Applied::new(2, 1));
    assert!(
        applied.wait(1, Duration::ZERO),
        "the initial generation is applied"
    );
    let (go, gone) = std::sync::mpsc::channel::<()>();
    let workers = {
        let applied = applied.clone();
        std::thread::spawn(move || {
            applied.set(0, 2);
            gone.recv().unwrap();
            applied.set(1, 3);
        })
    };
    assert!(
        !applied.wait(2, Duration::from_millis(10)),
        "worker 1 has not applied generation 2"
    );
    go.send(()).unwrap();
    assert!(applied.wait(2, Duration::from_secs(10)));
    workers.join().unwrap();
}
