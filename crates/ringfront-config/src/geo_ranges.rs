//! `geo ... { ranges; FROM-TO VALUE; delete FROM-TO; }` as nginx builds it: each range is
//! cut at /16 boundaries and each piece goes into its /16 block's sorted list with nginx's
//! rules — a piece inside one already there splits it, one sharing its start or end
//! shortens it, the same piece replaces its value, any other overlap is an error — and
//! `delete` removes exactly matching pieces. The result is a sorted list of disjoint
//! pieces, so that a lookup is a binary search.

/// One piece: first and last address (inside one /16) and its value.
pub type Piece = (u32, u32, String);

/// Adds `FROM-TO`; `Err((from, to))` names the piece it overlaps, for nginx's `range
/// "X" overlaps "A-B"`.
pub fn add(pieces: &mut Vec<Piece>, from: u32, to: u32, value: &str) -> Result<(), (u32, u32)> {
    for (s, e) in split(from, to) {
        add_piece(pieces, s, e, value)?;
    }
    Ok(())
}

/// Removes the pieces of `FROM-TO`; false when one of them was not there (nginx's warning
/// `no address range "X" to delete`).
pub fn delete(pieces: &mut Vec<Piece>, from: u32, to: u32) -> bool {
    let mut all = true;
    for (s, e) in split(from, to) {
        match pieces.iter().position(|p| p.0 == s && p.1 == e) {
            Some(i) => {
                pieces.remove(i);
            }
            None => all = false,
        }
    }
    all
}

/// The value of the piece holding `addr`.
pub fn find(pieces: &[Piece], addr: u32) -> Option<&str> {
    let i = pieces.partition_point(|p| p.1 < addr);
    pieces.get(i).filter(|p| p.0 <= addr).map(|p| p.2.as_str())
}

/// `FROM-TO` cut at /16 boundaries.
fn split(from: u32, to: u32) -> impl Iterator<Item = (u32, u32)> {
    let blocks = (from >> 16)..=(to >> 16);
    blocks.map(move |h| {
        let (lo, hi) = (h << 16, (h << 16) | 0xffff);
        (from.max(lo), to.min(hi))
    })
}

/// nginx's insertion into one /16 block, scanning its pieces from the last.
fn add_piece(pieces: &mut Vec<Piece>, s: u32, e: u32, value: &str) -> Result<(), (u32, u32)> {
    let block = s >> 16;
    let first = pieces.partition_point(|p| (p.0 >> 16) < block);
    let end = pieces.partition_point(|p| (p.0 >> 16) <= block);
    let new = |s, e| (s, e, value.to_string());
    for i in (first..end).rev() {
        let (ps, pe) = (pieces[i].0, pieces[i].1);
        if e < ps {
            continue;
        }
        if s > pe {
            pieces.insert(i + 1, new(s, e));
        } else if s == ps && e == pe {
            pieces[i].2 = value.to_string();
        } else if s > ps && e < pe {
            let tail = (e + 1, pe, pieces[i].2.clone());
            pieces[i].1 = s - 1;
            pieces.insert(i + 1, new(s, e));
            pieces.insert(i + 2, tail);
        } else if s == ps && e < pe {
            pieces[i].0 = e + 1;
            pieces.insert(i, new(s, e));
        } else if s > ps && e == pe {
            pieces[i].1 = s - 1;
            pieces.insert(i + 1, new(s, e));
        } else {
            return Err((ps, pe));
        }
        return Ok(());
    }
    pieces.insert(first, new(s, e));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }

    fn build(lines: &[(&str, &str, &str)]) -> Vec<Piece> {
        let mut p = Vec::new();
        for (f, t, v) in lines {
            add(&mut p, ip(f), ip(t), v).unwrap();
        }
        p
    }

    fn at<'a>(p: &'a [Piece], a: &str) -> Option<&'a str> {
        find(p, ip(a))
    }

    #[test]
    fn inserts_split_and_shorten_as_nginx() {
        // geo.t's $geo_insert: test, then test2 inside it, then loopback inside that.
        let p = build(&[
            ("127.0.0.0", "127.0.0.255", "test"),
            ("127.0.0.1", "127.0.0.2", "test2"),
            ("127.0.0.1", "127.0.0.1", "loopback"),
        ]);
        assert_eq!(at(&p, "127.0.0.1"), Some("loopback"));
        assert_eq!(at(&p, "127.0.0.2"), Some("test2"));
        assert_eq!(at(&p, "127.0.0.0"), Some("test"));
        assert_eq!(at(&p, "127.0.0.3"), Some("test"));
        let before = build(&[
            ("127.0.0.0", "127.0.0.255", "test"),
            ("127.0.0.0", "127.0.0.1", "lo"),
        ]);
        assert_eq!(at(&before, "127.0.0.1"), Some("lo"));
        assert_eq!(at(&before, "127.0.0.2"), Some("test"));
        let after = build(&[
            ("127.0.0.0", "127.0.0.255", "test"),
            ("127.0.0.1", "127.0.0.255", "lo"),
        ]);
        assert_eq!(at(&after, "127.0.0.0"), Some("test"));
        assert_eq!(at(&after, "127.0.0.200"), Some("lo"));
        assert_eq!(at(&after, "127.0.1.0"), None);
    }

    #[test]
    fn other_overlaps_are_errors_and_same_piece_replaces() {
        let mut p = build(&[("10.0.0.5", "10.0.0.9", "a")]);
        assert_eq!(
            add(&mut p, ip("10.0.0.7"), ip("10.0.0.20"), "b"),
            Err((ip("10.0.0.5"), ip("10.0.0.9")))
        );
        add(&mut p, ip("10.0.0.5"), ip("10.0.0.9"), "c").unwrap();
        assert_eq!(at(&p, "10.0.0.6"), Some("c"));
    }

    #[test]
    fn ranges_across_16_bit_blocks_and_delete() {
        // geo.t: two /16 pieces, the latter with greater low octets.
        let mut p = build(&[
            ("10.10.3.0", "10.11.2.255", "foo"),
            ("10.12.3.0", "10.13.2.255", "foo2"),
        ]);
        assert_eq!(at(&p, "10.11.2.1"), Some("foo"));
        assert_eq!(at(&p, "10.13.2.1"), Some("foo2"));
        assert!(delete(&mut p, ip("10.10.3.0"), ip("10.11.2.255")));
        assert_eq!(at(&p, "10.11.2.1"), None);
        assert_eq!(at(&p, "10.13.2.1"), Some("foo2"));
        assert!(!delete(&mut p, ip("10.10.3.0"), ip("10.10.3.1")));
        let mut d = build(&[
            ("127.0.0.0", "127.0.0.255", "test"),
            ("127.0.0.1", "127.0.0.1", "lo"),
        ]);
        for (f, t) in [
            ("127.0.0.0", "127.0.0.0"),
            ("127.0.0.2", "127.0.0.255"),
            ("127.0.0.1", "127.0.0.1"),
        ] {
            assert!(delete(&mut d, ip(f), ip(t)));
        }
        assert!(d.is_empty());
    }
}
