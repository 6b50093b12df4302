//! The 64-bit key hash the tables store in place of the key (nginx keeps the key bytes and
//! compares them; a table of atomic slots keeps only this hash, so two keys with the same
//! 64-bit hash share a state — one chance in 2^61 per pair).

/// What a table needs of a key: its hash, and its length (what nginx's slab charges the
/// state). Taken from the bytes once, so the caller may build the key in a buffer it reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHash {
    pub hash: u64,
    pub len: usize,
}

impl KeyHash {
    pub fn of(key: &[u8]) -> KeyHash {
        KeyHash {
            hash: hash(key),
            len: key.len(),
        }
    }
}

/// FNV-1a over the bytes, then a 64-bit finaliser (splitmix) so that keys differing in
/// their last bytes (addresses) spread over the table.
pub fn hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    #[test]
    fn distinct_keys_hash_apart() {
        assert_ne!(super::hash(b"\x7f\0\0\x01"), super::hash(b"\x7f\0\0\x02"));
        assert_eq!(super::hash(b"abc"), super::hash(b"abc"));
    }
}
