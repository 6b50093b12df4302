//! `split_clients` at request time: nginx's MurmurHash2 of the rendered string, compared
//! with each part's upper bound in order (`*`, bound 0, takes the rest; no part: `""`).

use ringfront_config::SplitClients;

/// nginx's `ngx_murmur_hash2` (MurmurHash2, seed 0, little-endian blocks).
pub fn murmur2(data: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    let mut h: u32 = data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        if rest.len() == 3 {
            h ^= u32::from(rest[2]) << 16;
        }
        if rest.len() >= 2 {
            h ^= u32::from(rest[1]) << 8;
        }
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// The value for a rendered source string.
pub fn pick<'a>(s: &'a SplitClients, source: &[u8]) -> &'a str {
    let hash = murmur2(source);
    s.parts
        .iter()
        .find(|(bound, _)| *bound == 0 || hash < *bound)
        .map_or("", |(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::murmur2;

    /// Known values of MurmurHash2 with seed 0 (the four-byte blocks are checked against
    /// nginx itself by tests/split_clients.rs).
    #[test]
    fn reference_values() {
        assert_eq!(murmur2(b""), 0);
        assert_eq!(murmur2(b"a"), 0x92685f5e);
    }
}
