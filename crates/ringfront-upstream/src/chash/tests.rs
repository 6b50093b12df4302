//! The ketama ring against values computed from nginx's formula by hand
//! (`crc32(HOST \0 PORT PREV_HASH)`, 160 points per unit of weight).

use super::*;
use crate::testutil::{peer, topo_with, Bench, NO_KEY};
use crate::*;

fn key(k: &'static [u8]) -> RequestKey<'static> {
    RequestKey {
        client: None,
        hash: k,
    }
}

fn three() -> Bench {
    let peers = (0..3).map(|i| peer(19801 + i, 1)).collect();
    Bench::new(topo_with(
        Balancer::Hash { consistent: true },
        peers,
        vec![],
    ))
}

#[test]
fn host_and_port_as_nginx_splits_them() {
    assert_eq!(
        host_port("127.0.0.1:19801"),
        (&b"127.0.0.1"[..], &b"19801"[..])
    );
    assert_eq!(host_port("[::1]:80"), (&b"[::1]"[..], &b"80"[..]));
    assert_eq!(
        host_port("unix:/tmp/s.sock"),
        (&b"/tmp/s.sock"[..], &b""[..])
    );
    assert_eq!(host_port("UNIX:/x"), (&b"/x"[..], &b""[..]));
    assert_eq!(host_port("example.com"), (&b"example.com"[..], &b""[..]));
    assert_eq!(host_port("a:b1"), (&b"a:b1"[..], &b""[..]));
    assert_eq!(host_port("host:"), (&b"host"[..], &b""[..]));
    assert_eq!(host_port("8080"), (&b"8080"[..], &b""[..]));
    assert_eq!(host_port(""), (&b""[..], &b""[..]));
}

#[test]
fn ring_points_by_hand() {
    let t = three().t;
    let ring = t.upstreams[0].ring.as_ref().unwrap();
    assert_eq!(ring.len(), 480);
    assert_eq!(ring.points[0].hash, 0x012a_96b9);
    assert_eq!(ring.points[479].hash, 0xffa0_275a);
    assert!(ring.points.windows(2).all(|w| w[0].hash < w[1].hash));
    // The first two points of 127.0.0.1:19801: crc32("127.0.0.1\019801" + prev LE).
    let mut prev = 0u32;
    let mut firsts = vec![];
    for _ in 0..2 {
        let mut data = b"127.0.0.1\x0019801".to_vec();
        data.extend_from_slice(&prev.to_le_bytes());
        prev = crc32::crc32(&data);
        firsts.push(prev);
    }
    assert_eq!(firsts, [0x157a_cd6d, 0xfd4c_9237]);
    assert!(ring
        .points
        .iter()
        .any(|p| p.hash == 0x157a_cd6d && p.server == 0));
}

#[test]
fn keys_map_by_hand() {
    let mut g = three();
    for (k, want) in [
        (&b"/a"[..], 0),
        (b"/b", 2),
        (b"user42", 2),
        (b"x", 1),
        (b"key-1", 1),
    ] {
        assert_eq!(
            g.pick(
                &RequestKey {
                    client: None,
                    hash: k
                },
                0
            ),
            Some(want)
        );
    }
}

#[test]
fn unusable_server_walks_to_the_next_point() {
    let mut g = three();
    let before = g.pick(&key(b"/b"), 0).unwrap();
    g.fail(before, 0);
    let after = g.pick(&key(b"/b"), 0).unwrap();
    assert_ne!(after, before);
    // The same request, retried: never the same peer twice.
    let mut at = g.attempt();
    let first = match g.select(&mut at, &key(b"x"), 1) {
        Selection::Peer(id) => id,
        Selection::NoLive => panic!("no peer"),
    };
    g.free(&mut at, false, 1);
    let Selection::Peer(second) = g.select(&mut at, &key(b"x"), 1) else {
        panic!("no peer");
    };
    assert_ne!(first, second);
}

#[test]
fn addresses_of_one_server_share_its_points_and_take_turns() {
    // One `server localhost:19801` resolving to two addresses, and one other server.
    let mut a = peer(19801, 1);
    a.server = "localhost:19801".into();
    let mut b = a.clone();
    b.name = "[::1]:19801".into();
    let mut c = peer(19802, 1);
    c.server = "other:19802".into();
    let t = topo_with(Balancer::Hash { consistent: true }, vec![a, b, c], vec![]);
    // Both addresses generate the same points; de-duplication keeps one of each.
    assert_eq!(t.upstreams[0].ring.as_ref().unwrap().len(), 320);
    let mut g = Bench::new(t);
    // Find a key of the shared server, then watch it alternate between its addresses.
    let k = (0..100u32)
        .map(|i| format!("k{i}"))
        .find(|k| {
            g.pick(
                &RequestKey {
                    client: None,
                    hash: k.as_bytes(),
                },
                0,
            ) != Some(2)
        })
        .unwrap();
    let rk = RequestKey {
        client: None,
        hash: k.as_bytes(),
    };
    let seq: Vec<_> = (0..4).map(|_| g.pick(&rk, 0).unwrap()).collect();
    assert!(seq.contains(&0) && seq.contains(&1) && !seq.contains(&2));
}

#[test]
fn fallbacks() {
    // Empty key: round robin.
    let mut g = three();
    let seq: Vec<_> = (0..3).map(|_| g.pick(&NO_KEY, 0).unwrap()).collect();
    assert_eq!(seq, [0, 1, 2]);
    // Every peer failed out: 20 ring steps, then round robin, then no live upstreams.
    for id in 0..3 {
        g.fail(id, 0);
    }
    let mut at = g.attempt();
    assert_eq!(g.select(&mut at, &key(b"/a"), 0), Selection::NoLive);
    assert_eq!(at.bal.tries, 21);
    // Empty group: no ring points, nothing to pick.
    let mut g = Bench::new(topo_with(
        Balancer::Hash { consistent: true },
        vec![],
        vec![],
    ));
    assert_eq!(g.pick(&key(b"/a"), 0), None);
}

#[test]
fn absurd_weight_is_capped() {
    let mut p = peer(1, u32::MAX);
    p.server = "a:1".into();
    let ring = Ring::with_cap(&[p, peer(2, 1)], 1000);
    assert_eq!(ring.len(), 1000);
    assert!(ring.points.iter().all(|p| p.server == 0));
}
