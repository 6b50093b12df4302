use super::*;
use std::sync::Arc;

const ZONE: u64 = 1 << 20;

/// A table with the rate its limit gives it.
struct Z {
    t: ReqTable,
    rate: Rate,
}

impl Z {
    fn new(size: u64, rate: Rate) -> Z {
        Z {
            t: ReqTable::new(size),
            rate,
        }
    }

    fn lookup(&self, key: &[u8], now: u64, burst: u64, account: bool) -> Lookup {
        self.t.lookup(key, now, self.rate, burst, account)
    }

    fn account(&self, slot: usize, now: u64) -> u64 {
        self.t.account(slot, now, self.rate)
    }

    fn len(&self) -> usize {
        self.t.len()
    }
}

#[test]
fn one_request_per_second_with_burst() {
    let t = Z::new(ZONE, Rate(1000));
    let k = b"10.0.0.1";
    assert_eq!(t.lookup(k, 10_000, 0, true), Lookup::Ok(0));
    // 100 ms later: 0 - 100 + 1000 = 900 > burst 0.
    assert_eq!(t.lookup(k, 10_100, 0, true), Lookup::Busy(900));
    // A rejected request is not counted: a second later the bucket is empty again.
    assert_eq!(t.lookup(k, 11_000, 0, true), Lookup::Ok(0));
    // With burst=1 (1000): 1000 - 200 + ... = 800 passes and is stored.
    assert_eq!(t.lookup(k, 11_200, 1000, true), Lookup::Ok(800));
    assert_eq!(t.lookup(k, 11_200, 1000, true), Lookup::Busy(1800));
    assert_eq!(t.len(), 1);
}

#[test]
fn lookups_before_the_last_limit_do_not_account() {
    let t = Z::new(ZONE, Rate(1000));
    let Lookup::Again(slot) = t.lookup(b"k", 5_000, 0, false) else {
        panic!("a new key passes");
    };
    // Not accounted yet: a fresh state reads as drained.
    assert!(matches!(t.lookup(b"k", 5_000, 0, false), Lookup::Again(s) if s == slot));
    assert_eq!(t.account(slot, 5_000), 0);
    assert_eq!(t.lookup(b"k", 5_500, 0, false), Lookup::Busy(500));
    assert_eq!(t.account(slot, 5_500), 500);
    assert_eq!(t.lookup(b"k", 5_500, 2000, true), Lookup::Ok(1500));
}

#[test]
fn same_millisecond_keeps_last() {
    let t = Z::new(ZONE, Rate(10_000));
    assert_eq!(t.lookup(b"a", 1_000, 5000, true), Lookup::Ok(0));
    assert_eq!(t.lookup(b"a", 1_000, 5000, true), Lookup::Ok(1000));
    assert_eq!(t.lookup(b"a", 1_050, 5000, true), Lookup::Ok(1500));
}

#[test]
fn a_zone_holds_as_many_states_as_nginx_slab() {
    // The smallest zone: 5 pages of 128-byte states.
    let t = Z::new(8 * 4096, Rate(1000));
    let most = slab::states(8 * 4096, slab::req_cost(4));
    assert_eq!(most, 160);
    for i in 0..400u32 {
        assert!(!matches!(
            t.lookup(&i.to_be_bytes(), 1_000 + u64::from(i), 0, true),
            Lookup::Error
        ));
    }
    assert_eq!(t.len() as u64, most, "new keys evict old ones at the limit");
}

#[test]
fn eviction_takes_the_least_recently_updated() {
    let t = Z::new(8 * 4096, Rate(1));
    for i in 0..160u32 {
        t.lookup(&i.to_be_bytes(), 1_000 + u64::from(i), 1_000_000, true);
    }
    // Keep key 0 busy, then add a key: some state other than key 0's is evicted.
    t.lookup(&0u32.to_be_bytes(), 2_000, 1_000_000, true);
    for i in 1000..1100u32 {
        t.lookup(&i.to_be_bytes(), 3_000, 1_000_000, true);
    }
    // Key 0 (recent) kept its excess: at rate 1 (0.001 r/s) it has barely drained.
    match t.lookup(&0u32.to_be_bytes(), 3_000, 1_000_000, true) {
        Lookup::Ok(e) => assert!(e >= 1990, "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn drained_states_a_minute_old_are_reused() {
    let t = Z::new(8 * 4096, Rate(1000));
    for i in 0..160u32 {
        t.lookup(&i.to_be_bytes(), 1_000, 0, true);
    }
    let left = t.t.budget.left();
    for i in 160..320u32 {
        t.lookup(&i.to_be_bytes(), 100_000, 0, true);
    }
    assert_eq!(t.t.budget.left(), left, "reused, not charged again");
    assert_eq!(t.len(), 160);
}

#[test]
fn threads_count_every_request_of_a_key() {
    // 8 threads x 1000 requests of one key in the same millisecond with a large burst:
    // every one is accounted (CAS), none lost.
    let t = Arc::new(Z::new(ZONE, Rate(1)));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut ok = 0;
                for _ in 0..1000 {
                    if let Lookup::Ok(_) = t.lookup(b"shared", 50_000, 100_000_000, true) {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let ok: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(ok, 8000);
    assert_eq!(
        t.lookup(b"shared", 50_000, 0, true),
        Lookup::Busy(8_000_000)
    );
    assert_eq!(t.len(), 1, "one state for the key");
}

#[test]
fn threads_inserting_many_keys_keep_one_state_each() {
    let t = Arc::new(Z::new(ZONE, Rate(1000)));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..2000u32 {
                    t.lookup(&i.to_be_bytes(), 1_000, 1_000_000, true);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Each key was seen 4 times in the same millisecond: 3 accounted on its one state
    // (the first is free), whichever thread made it.
    for i in 0..2000u32 {
        assert_eq!(
            t.lookup(&i.to_be_bytes(), 1_000, 1_000_000, true),
            Lookup::Ok(4000),
            "key {i}"
        );
    }
}
