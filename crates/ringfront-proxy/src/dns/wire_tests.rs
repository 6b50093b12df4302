use super::*;

/// A response to `query(id, name, qtype)` with `records` (type, ttl, rdata) owned by a
/// pointer to the question name.
fn response(
    id: u16,
    name: &str,
    qtype: u16,
    rcode: u8,
    records: &[(u16, u32, Vec<u8>)],
) -> Vec<u8> {
    let mut p = query(id, name, qtype).unwrap();
    p[2] = 0x81;
    p[3] = 0x80 | rcode;
    p[7] = records.len() as u8;
    for (rtype, ttl, data) in records {
        p.extend_from_slice(&[0xc0, 12]);
        p.extend_from_slice(&rtype.to_be_bytes());
        p.extend_from_slice(&1u16.to_be_bytes());
        p.extend_from_slice(&ttl.to_be_bytes());
        p.extend_from_slice(&(data.len() as u16).to_be_bytes());
        p.extend_from_slice(data);
    }
    p
}

fn encoded(name: &str) -> Vec<u8> {
    let q = query(0, name, 1).unwrap();
    q[HEADER..q.len() - 4].to_vec()
}

#[test]
fn query_is_a_recursive_question() {
    let q = query(0x1234, "a.example.", TYPE_AAAA).unwrap();
    assert_eq!(
        q,
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x07example\x00\x00\x1c\x00\x01"
    );
    assert!(query(1, "a..b", TYPE_A).is_none());
    assert!(query(1, "", TYPE_A).is_none());
    assert!(query(1, &"x".repeat(64), TYPE_A).is_none());
}

#[test]
fn a_records_and_smallest_ttl() {
    let p = response(
        7,
        "h.test",
        TYPE_A,
        0,
        &[(1, 30, vec![127, 0, 0, 1]), (1, 5, vec![10, 0, 0, 2])],
    );
    let a = parse(&p, 7, "H.test", TYPE_A).unwrap();
    assert_eq!(
        a.addrs,
        vec![
            "127.0.0.1".parse::<IpAddr>().unwrap(),
            "10.0.0.2".parse().unwrap()
        ]
    );
    assert_eq!(a.ttl, 5);
    assert!(!a.truncated);
}

#[test]
fn cname_srv_and_aaaa() {
    let p = response(1, "h.test", TYPE_A, 0, &[(5, 9, encoded("real.test"))]);
    let a = parse(&p, 1, "h.test", TYPE_A).unwrap();
    assert_eq!(a.cname.as_deref(), Some("real.test"));
    assert!(a.addrs.is_empty());
    let mut srv = vec![0, 1, 0, 5, 0x1f, 0x90];
    srv.extend(encoded("b.test"));
    let p = response(2, "_http._tcp.h.test", TYPE_SRV, 0, &[(33, 60, srv)]);
    let a = parse(&p, 2, "_http._tcp.h.test", TYPE_SRV).unwrap();
    assert_eq!(
        a.srvs,
        vec![Srv {
            priority: 1,
            weight: 5,
            port: 8080,
            target: "b.test".into()
        }]
    );
    let p = response(
        3,
        "h.test",
        TYPE_AAAA,
        0,
        &[(28, 1, [0u8; 15].iter().copied().chain([1]).collect())],
    );
    assert_eq!(
        parse(&p, 3, "h.test", TYPE_AAAA).unwrap().addrs,
        vec!["::1".parse::<IpAddr>().unwrap()]
    );
}

#[test]
fn nxdomain_truncation_and_refusals() {
    let p = response(4, "h.test", TYPE_A, 3, &[]);
    assert_eq!(parse(&p, 4, "h.test", TYPE_A).unwrap().rcode, 3);
    let mut p = response(4, "h.test", TYPE_A, 0, &[]);
    p[2] |= 0x02;
    assert!(parse(&p, 4, "h.test", TYPE_A).unwrap().truncated);
    assert_eq!(parse(&p, 5, "h.test", TYPE_A), Err(WireError::WrongId(4)));
    assert_eq!(
        parse(&p, 4, "other.test", TYPE_A),
        Err(WireError::WrongQuestion)
    );
    assert_eq!(
        parse(&p, 4, "h.test", TYPE_AAAA),
        Err(WireError::WrongQuestion)
    );
    let q = query(4, "h.test", TYPE_A).unwrap();
    assert_eq!(
        parse(&q, 4, "h.test", TYPE_A),
        Err(WireError::NotResponse(0x0100))
    );
    let p = response(6, "h.test", TYPE_A, 0, &[(1, 30, vec![1, 2, 3])]);
    assert_eq!(
        parse(&p, 6, "h.test", TYPE_A),
        Err(WireError::BadRecord("A"))
    );
    let p = response(6, "h.test", TYPE_A, 0, &[(1, 30, vec![1, 2, 3, 4])]);
    assert_eq!(
        parse(&p[..p.len() - 1], 6, "h.test", TYPE_A),
        Err(WireError::Short)
    );
}

#[test]
fn a_pointer_loop_is_refused() {
    let mut p = response(8, "h.test", TYPE_A, 0, &[]);
    p[7] = 1;
    // A record whose owner name points at itself.
    let at = p.len() as u16;
    p.extend_from_slice(&(0xc000 | at).to_be_bytes());
    p.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]);
    assert_eq!(parse(&p, 8, "h.test", TYPE_A), Err(WireError::BadName));
}

/// Garbage, and every prefix and single-byte corruption of a good answer, never panic.
#[test]
fn hostile_packets_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let len = (next() % 600) as usize;
        let mut p: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if p.len() > 5 && next() % 2 == 0 {
            p[2] = 0x81;
            p[4] = 0;
            p[5] = 1;
        }
        let _ = parse(&p, packet_id(&p).unwrap_or(0), "h.test", TYPE_A);
    }
    let mut srv = vec![0, 1, 0, 5, 0x1f, 0x90];
    srv.extend(encoded("b.test"));
    let good = response(
        9,
        "h.test",
        TYPE_SRV,
        0,
        &[(33, 60, srv), (5, 1, encoded("c.test"))],
    );
    for cut in 0..good.len() {
        let _ = parse(&good[..cut], 9, "h.test", TYPE_SRV);
    }
    for i in 0..good.len() {
        for v in [0u8, 0x3f, 0xc0, 0xff, next() as u8] {
            let mut p = good.clone();
            p[i] = v;
            let _ = parse(&p, 9, "h.test", TYPE_SRV);
        }
    }
}
