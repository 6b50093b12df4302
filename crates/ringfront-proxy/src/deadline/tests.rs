use std::future::pending;
use std::time::{Duration, Instant};

use super::*;

fn run<F: Future<Output = ()>>(f: F) {
    monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()
        .expect("epoll runtime")
        .block_on(f);
}

fn noop() -> Waker {
    Waker::noop().clone()
}

/// Injected time: only entries due at `now` fire; stale ones never do.
#[test]
fn expire_fires_due_live_entries_only() {
    let mut inner = Inner::default();
    let w = noop();
    let a = inner.take(&w);
    inner.push(100, Entry { at: 1_100, key: a });
    let b = inner.take(&w);
    inner.push(100, Entry { at: 1_105, key: b });
    let c = inner.take(&w);
    inner.push(5_000, Entry { at: 6_000, key: c });
    let mut woken = Vec::new();
    assert_eq!(inner.expire(1_099, &mut woken), Some(1_100));
    assert!(woken.is_empty() && inner.is_live(a));
    // b finished: its slot moves on, the entry goes stale.
    inner.slots[b.idx as usize].gen += 1;
    assert_eq!(inner.expire(1_100, &mut woken), Some(6_000));
    assert_eq!(woken.len(), 1);
    assert!(inner.slots[a.idx as usize].fired && !inner.is_live(a));
    assert!(inner.is_live(c));
    assert_eq!(inner.expire(7_000, &mut woken), None);
    assert_eq!(woken.len(), 2);
    assert_eq!(inner.queued, 0);
}

/// A free slot keeps its waker: the same task takes it again without a clone, another
/// task's I/O puts its own there, and a deadline wakes only the task that holds the slot.
#[test]
fn a_free_slot_keeps_its_waker_for_the_same_task_only() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let (a, b) = (Arc::new(Count(0.into())), Arc::new(Count(0.into())));
    let (wa, wb) = (Waker::from(a.clone()), Waker::from(b.clone()));
    let q = Queue::default();
    q.running.set(true);
    let queued = |w: &Waker| match q.register(Duration::from_secs(60), w) {
        State::Queued(key) => key,
        _ => panic!("not queued"),
    };
    let k = queued(&wa);
    assert_eq!(Arc::strong_count(&a), 3, "a, wa and the slot's clone");
    q.release(k);
    assert_eq!(Arc::strong_count(&a), 3, "the free slot keeps it");
    let k = queued(&wa);
    assert_eq!(Arc::strong_count(&a), 3, "taken again: no new clone");
    q.release(k);
    let k = queued(&wb);
    assert_eq!(q.inner.borrow().slots.len(), 1, "the same slot");
    assert_eq!((Arc::strong_count(&a), Arc::strong_count(&b)), (2, 3));
    assert!(q.inner.borrow().is_live(k));
    q.expire(u64::MAX);
    assert_eq!(
        (a.0.load(SeqCst), b.0.load(SeqCst)),
        (0, 1),
        "b's deadline wakes b"
    );
}

#[test]
fn stale_entries_are_compacted_and_slots_reused() {
    let q = Queue::default();
    q.running.set(true);
    let w = noop();
    for _ in 0..10_000 {
        match q.register(Duration::from_secs(60), &w) {
            State::Queued(key) => q.release(key),
            _ => panic!("not queued"),
        }
    }
    let inner = q.inner.borrow();
    assert_eq!(inner.live, 0);
    assert_eq!(inner.slots.len(), 1, "one slot, reused");
    assert!(inner.queued <= 65, "{} entries kept", inner.queued);
}

#[test]
fn fires_after_the_limit_never_before() {
    run(async {
        monoio::spawn(reap());
        for ms in [20u64, 55] {
            let t0 = Instant::now();
            let r = timeout(Duration::from_millis(ms), pending::<()>()).await;
            let took = t0.elapsed();
            assert!(r.is_err());
            assert!(
                took >= Duration::from_millis(ms),
                "{ms} ms fired after {took:?}"
            );
            let late = 40;
            assert!(took < Duration::from_millis(ms + late), "{ms} ms: {took:?}");
        }
        QUEUE.with(|q| assert_eq!(q.inner.borrow().live, 0));
    });
}

#[test]
fn a_finished_operation_is_not_cut_short() {
    run(async {
        monoio::spawn(reap());
        let r = timeout(
            Duration::from_millis(200),
            monoio::time::sleep(Duration::from_millis(10)),
        )
        .await;
        assert!(r.is_ok());
        // Its stale entry must not fire on anything else later.
        let r = timeout(Duration::from_secs(5), async {
            monoio::time::sleep(Duration::from_millis(300)).await;
            7
        })
        .await;
        assert_eq!(r.ok(), Some(7));
    });
}

#[test]
fn a_shorter_deadline_wakes_a_reaper_sleeping_to_a_longer_one() {
    run(async {
        monoio::spawn(reap());
        let long = monoio::spawn(timeout(Duration::from_secs(30), pending::<()>()));
        monoio::time::sleep(Duration::from_millis(5)).await;
        let t0 = Instant::now();
        assert!(timeout(Duration::from_millis(20), pending::<()>())
            .await
            .is_err());
        assert!(t0.elapsed() < Duration::from_millis(20 + 40));
        drop(long);
    });
}

#[test]
fn without_a_reaper_monoio_timers_stand_in() {
    run(async {
        let t0 = Instant::now();
        assert!(timeout(Duration::from_millis(15), pending::<()>())
            .await
            .is_err());
        assert!(t0.elapsed() >= Duration::from_millis(15));
        assert!(timeout(Duration::ZERO, pending::<()>()).await.is_err());
    });
}

#[test]
fn limits_round_up_to_whole_milliseconds() {
    assert_eq!(whole_ms(Duration::ZERO), 0);
    assert_eq!(whole_ms(Duration::from_nanos(1)), 1);
    assert_eq!(whole_ms(Duration::from_micros(1_000)), 1);
    assert_eq!(whole_ms(Duration::from_nanos(1_000_001)), 2);
    assert_eq!(whole_ms(Duration::from_millis(60_000)), 60_000);
    assert_eq!(whole_ms(Duration::new(86_400, 999_999_999)), 86_401_000);
}
