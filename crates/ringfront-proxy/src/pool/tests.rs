//! The pool over real loopback sockets, under io_uring (where the kernel allows it) and epoll:
//! the backend side is a plain std socket whose reads show what the pool did to the other end.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use monoio::net::TcpStream;

use crate::stream::UpstreamStream;

use super::*;
use crate::clock::now_ms;
use crate::testutil::on_both;

const MINUTE: Duration = Duration::from_secs(60);

/// One connection: the pool's end and the backend's (non-blocking, to look without waiting).
async fn pair(l: &TcpListener) -> (UpstreamStream, std::net::TcpStream) {
    let ours = TcpStream::connect_addr(l.local_addr().unwrap())
        .await
        .unwrap();
    let (theirs, _) = l.accept().unwrap();
    theirs.set_nonblocking(true).unwrap();
    (ours.into(), theirs)
}

fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

/// Whether the pool closed its end, waiting up to a second for it.
async fn closed(theirs: &mut std::net::TcpStream) -> bool {
    for _ in 0..200 {
        match theirs.read(&mut [0; 16]) {
            Ok(0) => return true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            _ => return true,
        }
        monoio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

/// Whether the pool's end is still open after the watchers have had time to act.
async fn open(theirs: &mut std::net::TcpStream) -> bool {
    monoio::time::sleep(Duration::from_millis(30)).await;
    matches!(theirs.read(&mut [0; 16]), Err(e) if e.kind() == ErrorKind::WouldBlock)
}

async fn let_watchers_run() {
    monoio::time::sleep(Duration::from_millis(30)).await;
}

fn local(s: &UpstreamStream) -> SocketAddr {
    s.local_addr().unwrap()
}

#[test]
fn a_full_cache_closes_its_least_recently_used_connection() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(2);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        let (c, mut c_end) = pair(&l).await;
        pool.put(0, 0, 2, MINUTE, a, 1);
        pool.put(0, 1, 2, MINUTE, b, 1);
        pool.put(0, 0, 2, MINUTE, c, 1);
        assert!(closed(&mut a_end).await, "the oldest idle one is closed");
        assert!(open(&mut b_end).await && open(&mut c_end).await);
        assert_eq!(pool.idle(), 2);
    });
}

#[test]
fn take_gives_the_most_recently_used_first_and_its_request_count() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, _a_end) = pair(&l).await;
        let (b, _b_end) = pair(&l).await;
        let (a_addr, b_addr) = (local(&a), local(&b));
        pool.put(0, 0, 8, MINUTE, a, 3);
        pool.put(0, 0, 8, MINUTE, b, 7);
        let_watchers_run().await;
        let (s, n) = pool.take(0).unwrap().stream().await.unwrap();
        assert_eq!((local(&s), n), (b_addr, 7));
        let (s, n) = pool.take(0).unwrap().stream().await.unwrap();
        assert_eq!((local(&s), n), (a_addr, 3));
        assert!(pool.take(0).is_none());
        assert!(pool.take(5).is_none());
    });
}

#[test]
fn a_connection_taken_before_its_watcher_ran_comes_back_usable() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, mut a_end) = pair(&l).await;
        pool.put(0, 0, 8, MINUTE, a, 1);
        let (mut s, _) = pool.take(0).unwrap().stream().await.unwrap();
        let (r, _) = monoio::io::AsyncWriteRentExt::write_all(&mut s, b"ping".to_vec()).await;
        r.unwrap();
        a_end.set_nonblocking(false).unwrap();
        let mut got = [0; 4];
        a_end.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
    });
}

#[test]
fn the_sweep_closes_connections_idle_past_keepalive_timeout() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(2);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        let start = now_ms();
        pool.put(0, 0, 8, MINUTE, a, 1);
        pool.put(1, 1, 8, 2 * MINUTE, b, 1);
        let up = |_| false;
        let next = pool.sweep(start + 59_000, up).unwrap();
        assert!((start + 60_000..start + 61_000).contains(&next));
        assert!(open(&mut a_end).await);
        let next = pool.sweep(start + 61_000, up).unwrap();
        assert!(closed(&mut a_end).await);
        assert!(open(&mut b_end).await);
        assert!((start + 120_000..start + 121_000).contains(&next));
        assert_eq!(pool.sweep(start + 121_000, up), None);
        assert!(closed(&mut b_end).await);
        assert_eq!(pool.idle(), 0);
    });
}

#[test]
fn a_connection_the_backend_closes_leaves_the_pool_without_a_reuse_attempt() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, a_end) = pair(&l).await;
        let (b, _b_end) = pair(&l).await;
        let b_addr = local(&b);
        pool.put(0, 0, 8, MINUTE, b, 1);
        pool.put(0, 0, 8, MINUTE, a, 1);
        drop(a_end);
        let_watchers_run().await;
        assert_eq!(pool.idle(), 1);
        let (s, _) = pool.take(0).unwrap().stream().await.unwrap();
        assert_eq!(local(&s), b_addr);
        assert!(pool.take(0).is_none());
    });
}

#[test]
fn a_connection_the_backend_resets_or_writes_to_is_closed() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, mut a_end) = pair(&l).await;
        let (b, b_end) = pair(&l).await;
        pool.put(0, 0, 8, MINUTE, a, 1);
        pool.put(0, 0, 8, MINUTE, b, 1);
        let_watchers_run().await;
        a_end.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        socket2::SockRef::from(&b_end)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(b_end);
        assert!(closed(&mut a_end).await, "unsolicited bytes close it");
        assert_eq!(pool.idle(), 0);
        assert!(pool.take(0).is_none());
    });
}

/// A close that came while the connection was in use (reported then, not again: the watch
/// is edge-triggered) keeps it out of the pool when it comes back.
#[test]
fn a_connection_closed_while_in_use_is_not_pooled_again() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, a_end) = pair(&l).await;
        pool.put(0, 0, 8, MINUTE, a, 1);
        let_watchers_run().await;
        let (s, n) = pool.take(0).unwrap().stream().await.unwrap();
        drop(a_end);
        let_watchers_run().await;
        pool.put(0, 0, 8, MINUTE, s, n + 1);
        let_watchers_run().await;
        assert_eq!(pool.idle(), 0);
        assert!(pool.take(0).is_none());
    });
}

/// Bytes that arrive while a connection is in use and are read by its request are no
/// close: it is pooled again, and still watched (a later close takes it out).
#[test]
fn bytes_read_while_in_use_do_not_close_a_pooled_connection() {
    on_both(|| async {
        use monoio::io::AsyncReadRent;
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, mut a_end) = pair(&l).await;
        pool.put(0, 0, 8, MINUTE, a, 1);
        let_watchers_run().await;
        for round in 0..3u64 {
            let (mut s, n) = pool.take(0).unwrap().stream().await.unwrap();
            a_end.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
            let_watchers_run().await;
            let (r, _) = s.read(vec![0u8; 64]).await;
            assert_eq!(r.unwrap(), 19);
            pool.put(0, 0, 8, MINUTE, s, n + 1);
            let_watchers_run().await;
            assert_eq!(pool.idle(), 1, "round {round}");
            assert!(open(&mut a_end).await);
        }
        drop(a_end);
        let_watchers_run().await;
        assert_eq!(pool.idle(), 0, "the close after is seen");
    });
}

#[test]
fn the_sweep_closes_the_idle_connections_of_a_peer_marked_down() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(2);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        pool.put(0, 0, 8, MINUTE, a, 1);
        pool.put(0, 1, 8, MINUTE, b, 1);
        pool.sweep(now_ms(), |p| p == 0);
        assert!(closed(&mut a_end).await);
        assert!(open(&mut b_end).await);
        assert!(pool.take(0).is_none());
        assert_eq!(pool.idle(), 1);
    });
}

/// Groups of `groups[g]` peers each, numbered as `Topology` numbers them.
fn topology(groups: &[usize]) -> Topology {
    use ringfront_upstream::{PeerSpec, UpstreamSpec};
    let peer = |g: usize, i: usize| {
        let addr: SocketAddr = format!("127.0.0.1:{}", 1000 + 10 * g + i).parse().unwrap();
        PeerSpec {
            name: addr.to_string(),
            server: String::new(),
            addr,
            weight: 1,
            max_fails: 1,
            fail_timeout: 10,
            max_conns: 0,
            down: false,
            drain: false,
            slow_start_ms: 0,
        }
    };
    let specs = groups
        .iter()
        .enumerate()
        .map(|(g, &n)| UpstreamSpec {
            name: format!("g{g}"),
            primary: (0..n).map(|i| peer(g, i)).collect(),
            ..Default::default()
        })
        .collect();
    Topology::new(specs)
}

#[test]
fn a_reload_keeps_surviving_peers_connections_and_closes_removed_ones() {
    on_both(|| async {
        let l = listener();
        let mut old = Pool::new(3);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        let (c, mut c_end) = pair(&l).await;
        let b_addr = local(&b);
        old.put(0, 0, 8, MINUTE, a, 1);
        old.put(0, 1, 8, MINUTE, b, 1);
        old.put(1, 2, 8, MINUTE, c, 1);
        // Peer 1 survives as new peer 0; peers 0 and 2 are gone.
        let topo = topology(&[1]);
        let mut new = Pool::carry(old, &[Some(1)], &topo, |_| (8, MINUTE));
        assert!(closed(&mut a_end).await && closed(&mut c_end).await);
        assert!(open(&mut b_end).await);
        let (s, _) = new.take(0).unwrap().stream().await.unwrap();
        assert_eq!(local(&s), b_addr);
    });
}

#[test]
fn a_reload_that_shrinks_keepalive_keeps_the_newest() {
    on_both(|| async {
        let l = listener();
        let mut old = Pool::new(1);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        old.put(0, 0, 8, MINUTE, a, 1);
        old.put(0, 0, 8, MINUTE, b, 1);
        let new = Pool::carry(old, &[Some(0)], &topology(&[1]), |_| (1, MINUTE));
        assert!(closed(&mut a_end).await);
        assert!(open(&mut b_end).await);
        drop(new);
        assert!(
            closed(&mut b_end).await,
            "a dropped pool closes what it holds"
        );
    });
}

#[test]
fn a_taken_connection_dropped_unused_is_closed() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        pool.put(0, 0, 8, MINUTE, a, 1);
        let_watchers_run().await;
        drop(pool.take(0));
        assert!(closed(&mut a_end).await);
        pool.put(0, 0, 8, MINUTE, b, 1);
        drop(pool.take(0)); // before its watcher ever ran
        assert!(closed(&mut b_end).await);
        assert_eq!(pool.idle(), 0);
    });
}

#[test]
fn a_zero_cache_or_unknown_peer_keeps_nothing() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, mut a_end) = pair(&l).await;
        let (b, mut b_end) = pair(&l).await;
        pool.put(0, 0, 0, MINUTE, a, 1);
        pool.put(0, 3, 8, MINUTE, b, 1);
        assert!(closed(&mut a_end).await && closed(&mut b_end).await);
        assert_eq!(pool.idle(), 0);
    });
}

#[test]
fn slots_are_reused_across_many_idle_periods() {
    on_both(|| async {
        let l = listener();
        let mut pool = Pool::new(1);
        let (a, _a_end) = pair(&l).await;
        let mut s = a;
        for i in 0..200 {
            pool.put(0, 0, 8, MINUTE, s, i);
            if i % 2 == 0 {
                let_watchers_run().await;
            }
            let (back, n) = pool.take(0).unwrap().stream().await.unwrap();
            assert_eq!(n, i);
            s = back;
        }
        let st = pool.shared.borrow();
        assert_eq!(st.slot_count(), 1);
    });
}

#[test]
fn an_idle_connection_costs_little_memory() {
    let (held, watched) = watch::memory_per_idle();
    println!("bytes per idle pooled connection: io_uring (slot + node + fd) {held}, epoll (task + slot + node) {watched}");
    assert!(held <= 256, "{held}");
    assert!(watched <= 512, "{watched}");
}
