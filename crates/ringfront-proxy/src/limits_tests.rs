//! The preaccess phase's checks allocate nothing per request once warm: the keys built
//! (`$binary_remote_addr` alone and with `$uri`), `limit_req`'s lookups and accounts over
//! two zones, `limit_conn`'s counts held and given back, with passes, delays and
//! rejections. Counted by the unit tests' allocator (alloc_count.rs), per thread.

use std::net::Ipv4Addr;

use super::*;

fn snapshot() -> Snapshot {
    let text = "events {}
http {
    limit_req_zone $binary_remote_addr zone=addr:1m rate=10r/s;
    limit_req_zone $binary_remote_addr$uri zone=uri:1m rate=1r/s;
    limit_conn_zone $binary_remote_addr zone=conns:1m;
    server {
        listen 127.0.0.1:1;
        location / {
            limit_req zone=addr burst=5 nodelay;
            limit_req zone=uri burst=2;
            limit_conn conns 1;
        }
    }
}
";
    let host = ringfront_config::MemoryHost::default();
    let path = std::path::Path::new("/t/r.conf");
    let cfg = ringfront_config::parse_str(text, path, &host).unwrap();
    Snapshot::build(&cfg, 1).unwrap()
}

#[test]
fn a_requests_limit_checks_allocate_nothing() {
    let snap = snapshot();
    let l = &crate::route::location(&snap.servers[0], "/")
        .settings
        .limits;
    assert_eq!((l.req.len(), l.conn.len()), (2, 1));
    let (buf, head) = crate::testutil::request_head(b"GET /p HTTP/1.1\r\nHost: h\r\n\r\n");
    let quiet = |_: LogLevel, _: std::fmt::Arguments<'_>| {};
    let logs: Logs<'_> = (&quiet, &quiet);
    // Requests in flight: a ring of 8, so that an address (one of 5) comes back while its
    // count is held.
    let mut ring: [Held; 8] = std::array::from_fn(|_| Held::default());
    let mut seen = [0u32; 6];
    let mut request = |r: u32| {
        let mut req = crate::testutil::req(&buf, &head);
        req.client = (Ipv4Addr::from(0x0a00_0000 + r % 5), 40000).into();
        let vars = req.vars("", None, Some(&snap));
        // 20 requests a second: 4 an address, within `addr`, over `uri`.
        let now = 1_000_000 + u64::from(r) * 50;
        let (status, refuse, delay) = limit_req(&snap, l, &vars, logs, now);
        assert_eq!(refuse.is_some(), status == 3);
        assert_eq!(delay > 0, status == 2);
        seen[usize::from(status)] += 1;
        let (status, refuse, held) = limit_conn(&snap, l, &vars, logs);
        assert_eq!(refuse.is_some(), status == 2);
        seen[3 + usize::from(status)] += 1;
        ring[r as usize % 8] = held;
    };
    // Warm: the key buffer of this thread.
    request(0);
    let before = crate::alloc_count::allocations();
    for r in 1..2000 {
        request(r);
    }
    let during = crate::alloc_count::allocations() - before;
    assert_eq!(during, 0, "2000 requests allocated {during} times");
    assert!(seen[1] > 0 && seen[2] > 0 && seen[3] > 0, "{seen:?}");
    assert!(seen[4] > 0 && seen[5] > 0, "{seen:?}");
    drop(ring);
    let Table::Conn(conns) = &snap.limit_zones[2].table else {
        panic!("the third zone counts connections")
    };
    assert!(conns.is_empty(), "every count given back");
}

#[test]
fn held_counts_past_the_inline_ones_are_given_back() {
    let t = Arc::new(ConnTable::new(1 << 20));
    let mut held = Held::default();
    for k in 0..(HELD as u32 + 3) {
        let Acquire::Passed(s) = t.acquire(&k.to_be_bytes(), 1) else {
            panic!("a new key")
        };
        held.push(&t, s);
    }
    let mut all = Held::default();
    all.append(held);
    assert_eq!(t.len(), HELD + 3);
    drop(all);
    assert!(t.is_empty());
}
