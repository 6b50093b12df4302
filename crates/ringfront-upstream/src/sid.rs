//! The server id a `sticky cookie` names a peer by: 32 hex digits of a keyed hash
//! (SipHash-2-4, twice, for 128 bits) of the peer's address, as nginx 1.29.6 names a peer by
//! the MD5 of its address (so the same server has the same id in every group that lists
//! it). It does not show the address; it is the same in every worker, after a reload and
//! after a restart; a `secret` changes every id (without one the key is a fixed constant, so
//! an id can be checked against a guessed address, as nginx's MD5 can).

/// The 128-bit key of a group: SipHash of the secret under a fixed constant.
fn key(secret: &[u8]) -> [u64; 2] {
    const BASE: [u64; 2] = [0x7269_6e67_6672_6f6e, 0x7374_6963_6b79_2131];
    [
        siphash24(BASE, secret),
        siphash24([BASE[1], BASE[0]], secret),
    ]
}

/// The id of peer `name` (its address as nginx prints it, `127.0.0.1:8081`).
pub fn server_id(secret: &[u8], name: &str) -> String {
    let k = key(secret);
    let msg = name.as_bytes();
    let a = siphash24(k, msg);
    let b = siphash24([k[0] ^ 0xee, k[1]], msg);
    format!("{a:016x}{b:016x}")
}

#[inline]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// SipHash-2-4 (Aumasson and Bernstein) of `msg` under key `k`.
pub(crate) fn siphash24(k: [u64; 2], msg: &[u8]) -> u64 {
    let mut v = [
        k[0] ^ 0x736f_6d65_7073_6575,
        k[1] ^ 0x646f_7261_6e64_6f6d,
        k[0] ^ 0x6c79_6765_6e65_7261,
        k[1] ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = msg.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let m = u64::from_le_bytes(w);
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let rest = chunks.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    last[7] = msg.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_reference_vectors() {
        // The paper's key 00..0f; messages 00..(n-1) (Appendix A and the reference vectors).
        let k = [0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908];
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(k, &msg), 0xa129_ca61_49be_45e5);
        assert_eq!(siphash24(k, b""), 0x726f_db47_dd0e_0e31);
    }

    #[test]
    fn ids_are_stable_opaque_and_distinct() {
        let a = server_id(b"", "127.0.0.1:8081");
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!a.contains("8081") && !a.contains("127"));
        assert_eq!(a, server_id(b"", "127.0.0.1:8081"));
        assert_ne!(a, server_id(b"", "127.0.0.1:8082"));
        assert_ne!(a, server_id(b"s3cret", "127.0.0.1:8081"));
    }
}
