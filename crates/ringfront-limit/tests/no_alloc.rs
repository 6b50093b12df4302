//! A request's limit check allocates nothing once the zones exist: hashing the key,
//! `limit_req`'s lookups and accounts over one or several zones (delays and rejections
//! included), and `limit_conn`'s acquire and release. Counted by a global allocator, per
//! thread.

use ringfront_testkit::alloc_count::{allocations, Counting};

use ringfront_limit::conn::Acquire;
use ringfront_limit::{check_each, ConnTable, KeyHash, Limit, Rate, ReqTable, Verdict};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Requests from 300 addresses over 4 seconds against `zones` (rate 1 r/s, burst 1, the
/// first delaying, the others nodelay): verdicts of every kind.
fn requests(zones: &[ReqTable], now0: u64) -> [u32; 4] {
    let mut seen = [0; 4];
    for r in 0..3000u32 {
        let addr = (r % 300).wrapping_mul(2_654_435_761).to_be_bytes();
        let key = KeyHash::of(&addr);
        let now = now0 + u64::from(r) * 4000 / 3000;
        let limit = |n: usize| {
            zones.get(n).map(|table| Limit {
                table,
                rate: Rate(1000),
                key: Some(key),
                burst: 1000,
                delay: if n == 0 { 0 } else { u64::MAX / 2000 },
            })
        };
        let i = match check_each(zones.len(), limit, now) {
            Verdict::Declined => 0,
            Verdict::Passed => 1,
            Verdict::Delayed { .. } => 2,
            Verdict::Rejected { .. } => 3,
        };
        seen[i] += 1;
    }
    seen
}

#[test]
fn limit_req_never_allocates() {
    let before = allocations();
    drop(std::hint::black_box(vec![0u8; 64]));
    assert_eq!(allocations() - before, 1, "the counter sees this thread");
    for n in [1, 3, 8] {
        let zones: Vec<ReqTable> = (0..n).map(|_| ReqTable::new(1 << 20)).collect();
        let before = allocations();
        let seen = requests(&zones, 1_000_000);
        let during = allocations() - before;
        assert_eq!(during, 0, "{n} zones allocated {during} times");
        assert_eq!(seen[0], 0);
        assert!(seen[1] > 0 && seen[3] > 0, "{n} zones: {seen:?}");
        if n > 1 {
            assert!(seen[2] > 0, "{n} zones: {seen:?}");
        }
    }
}

#[test]
fn limit_conn_never_allocates() {
    let t = ConnTable::new(1 << 20);
    let before = allocations();
    let mut held = [None; 64];
    let mut busy = 0;
    for r in 0..5000u32 {
        let key = KeyHash::of(&(r % 50).to_be_bytes());
        let spot = &mut held[r as usize % 64];
        if let Some(s) = spot.take() {
            t.release(s);
        }
        match t.acquire_hashed(key, 1) {
            Acquire::Passed(s) => *spot = Some(s),
            Acquire::Busy => busy += 1,
            Acquire::Full => panic!("a 1m zone holds 50 keys"),
        }
    }
    for s in held.iter_mut().filter_map(Option::take) {
        t.release(s);
    }
    assert_eq!(allocations() - before, 0);
    assert!(busy > 0, "some key was in flight twice");
    assert!(t.is_empty());
}
