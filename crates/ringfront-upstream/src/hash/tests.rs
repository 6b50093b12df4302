//! `ip_hash` and `hash KEY` against values worked out from nginx's formulas by hand
//! (`hash = (hash * 113 + octet) % 6271` from 89; `(crc32([REHASH] KEY) >> 16) & 0x7fff`).

use super::*;
use crate::testutil::{peer, topo_with, Bench, NO_KEY};
use crate::*;

fn ip(s: &str) -> RequestKey<'static> {
    RequestKey {
        client: Some(s.parse().unwrap()),
        hash: b"",
    }
}

fn key(k: &'static [u8]) -> RequestKey<'static> {
    RequestKey {
        client: None,
        hash: k,
    }
}

fn group(balancer: Balancer, weights: &[u32]) -> Bench {
    let peers = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| peer(9001 + i as u16, w))
        .collect();
    Bench::new(topo_with(balancer, peers, vec![]))
}

#[test]
fn ip_hash_by_hand() {
    // 192.168.1.x: 89 -> (89*113+192)%6271 = 3978 -> 4441 -> 154; 154 % 3 = 1.
    let mut g = group(Balancer::IpHash, &[1, 1, 1]);
    assert_eq!(g.pick(&ip("192.168.1.10"), 0), Some(1));
    // Only the first three octets count.
    assert_eq!(g.pick(&ip("10.0.0.1"), 0), Some(0));
    assert_eq!(g.pick(&ip("10.0.0.200"), 0), Some(0));
    assert_eq!(g.pick(&ip("172.16.5.4"), 0), Some(1));
    assert_eq!(g.pick(&ip("8.8.8.8"), 0), Some(2));
    // IPv6: all sixteen bytes.
    assert_eq!(g.pick(&ip("2001:db8::1"), 0), Some(2));
    // No address: nginx's pseudo address, three zero bytes.
    assert_eq!(g.pick(&NO_KEY, 0), Some(1));
    // Weighted: 154 % 6 = 4 falls in the third peer's interval [3, 6).
    let mut g = group(Balancer::IpHash, &[1, 2, 3]);
    assert_eq!(g.pick(&ip("192.168.1.10"), 0), Some(2));
}

#[test]
fn ip_hash_rehashes_past_bad_and_tried_peers() {
    // 192.168.1.x visits peers 1, 2, 2, 0, 1, ... as it re-hashes.
    let mut g = group(Balancer::IpHash, &[1, 1, 1]);
    g.fail(1, 100);
    let mut at = g.attempt();
    let k = ip("192.168.1.10");
    assert_eq!(g.select(&mut at, &k, 100), Selection::Peer(2));
    g.free(&mut at, true, 100);
    // Next try: 2 is tried (one step), then 0.
    assert_eq!(g.select(&mut at, &k, 100), Selection::Peer(0));
    assert_eq!(at.bal.tries, 2);
}

#[test]
fn ip_hash_falls_back_to_round_robin_after_20_rehashes() {
    // 10.1.107.x never reaches peer 3 within 21 steps.
    let mut g = group(Balancer::IpHash, &[1, 1, 1, 1]);
    for id in 0..3 {
        g.fail(id, 0);
    }
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &ip("10.1.107.1"), 0), Selection::Peer(3));
    assert_eq!(at.bal.tries, 21);
    // Everything failed out: no live upstreams.
    g.fail(3, 0);
    assert_eq!(g.pick(&ip("10.1.107.1"), 0), None);
}

#[test]
fn ip_hash_single_peer_and_down() {
    let mut g = group(Balancer::IpHash, &[1]);
    assert_eq!(g.pick(&ip("1.2.3.4"), 0), Some(0));
    let mut p = peer(1, 1);
    p.down = true;
    let mut g = Bench::new(topo_with(Balancer::IpHash, vec![p], vec![]));
    assert_eq!(g.pick(&ip("1.2.3.4"), 0), None);
}

#[test]
fn hash_key_by_hand() {
    // Sequences from crc32: "/a" -> 1, 0, 2, 0, ...; with weights 2,1,1 -> 0.
    let mut g = group(Balancer::Hash { consistent: false }, &[1, 1, 1]);
    assert_eq!(g.pick(&key(b"/a"), 0), Some(1));
    assert_eq!(g.pick(&key(b"/b"), 0), Some(2));
    assert_eq!(g.pick(&key(b"user42"), 0), Some(0));
    assert_eq!(g.pick(&key(b"x"), 0), Some(1));
    let mut g = group(Balancer::Hash { consistent: false }, &[2, 1, 1]);
    assert_eq!(g.pick(&key(b"/a"), 0), Some(0));
    assert_eq!(g.pick(&key(b"/b"), 0), Some(0));
    assert_eq!(g.pick(&key(b"user42"), 0), Some(2));
}

#[test]
fn hash_rehash_prefixes_the_count() {
    // "/b" visits 2, 1, 0, 2: with peer 2 down the first re-hash ("1/b") lands on 1.
    let mut ps: Vec<_> = (0..3).map(|i| peer(9001 + i, 1)).collect();
    ps[2].down = true;
    let mut g = Bench::new(topo_with(Balancer::Hash { consistent: false }, ps, vec![]));
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &key(b"/b"), 0), Selection::Peer(1));
    assert_eq!(at.bal.rehash, 2);
    g.free(&mut at, true, 0);
    // Retry: "2/b" -> 0.
    assert_eq!(g.select(&mut at, &key(b"/b"), 0), Selection::Peer(0));
    assert_eq!(step(b"/a", 0, 0) & 0x7fff, step(b"/a", 0, 0));
    let mut buf = [0u8; 20];
    assert_eq!(decimal(0, &mut buf), b"0");
    assert_eq!(decimal(1234, &mut buf), b"1234");
    assert_eq!(decimal(u64::MAX, &mut buf), b"18446744073709551615");
}

#[test]
fn hash_fallbacks() {
    // An empty key is round robin.
    let mut g = group(Balancer::Hash { consistent: false }, &[1, 1, 1]);
    let seq: Vec<_> = (0..3).map(|_| g.pick(&NO_KEY, 0).unwrap()).collect();
    assert_eq!(seq, [0, 1, 2]);
    // "k12" never reaches peer 3 in 21 steps: round robin finds it.
    let mut g = group(Balancer::Hash { consistent: false }, &[1, 1, 1, 1]);
    for id in 0..3 {
        g.fail(id, 0);
    }
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &key(b"k12"), 0), Selection::Peer(3));
    assert_eq!(at.bal.tries, 21);
}

#[test]
fn hash_falls_back_to_backups_through_round_robin() {
    // nginx accepts `backup` written before `hash` and reaches it through the
    // round-robin fallback once every primary is failed out (verified against nginx 1.22
    // in tests/semantics_balancers_failures.rs).
    let t = topo_with(
        Balancer::Hash { consistent: false },
        vec![peer(1, 1), peer(2, 1)],
        vec![peer(3, 1)],
    );
    assert_eq!(t.upstreams[0].tries(), 3);
    let mut g = Bench::new(t);
    g.fail(0, 0);
    g.fail(1, 0);
    assert_eq!(g.pick(&key(b"/a"), 0), Some(2));
}
