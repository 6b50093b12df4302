//! Byte tests eight bytes at a time (SWAR: one `u64` holds eight bytes): case-insensitive
//! equality of field names and tokens, and the helpers the host check uses. Every function
//! here is exact for any byte values (no carry crosses from one byte into the next), and
//! agrees with its byte-at-a-time form (tests below).

/// `b` in each of the eight bytes.
pub(crate) const fn splat(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

/// 0x80 in every byte of `x` that is zero, nothing elsewhere (the high bit is masked off
/// before the add, so no borrow crosses bytes).
pub(crate) const fn zero_bytes(x: u64) -> u64 {
    let low7 = splat(0x7f);
    !(((x & low7) + low7) | x | low7)
}

/// `x` with its bytes `A`..=`Z` made lower case.
const fn lower(x: u64) -> u64 {
    let h = x & splat(0x7f);
    // High bit set where the low seven bits are >= 'A', and where they are > 'Z'.
    let at_least_a = h + splat(0x80 - b'A');
    let above_z = h + splat(0x80 - b'Z' - 1);
    let upper = at_least_a & !above_z & !x & splat(0x80);
    x | (upper >> 2)
}

/// The eight bytes of `s` from `at`, little-endian (`None` past the end).
fn word(s: &[u8], at: usize) -> Option<u64> {
    let w: [u8; 8] = s.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// ASCII case-insensitive equality, as `<[u8]>::eq_ignore_ascii_case`, eight bytes at a
/// time (the last word overlaps the one before it); values shorter than a word a byte at a
/// time. Field names are compared this way on every request.
#[inline]
pub fn eq_ignore_case(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a.eq_ignore_ascii_case(b);
    }
    let mut at = 0;
    while at < n {
        let start = at.min(n - 8);
        match (word(a, start), word(b, start)) {
            (Some(x), Some(y)) if lower(x) == lower(y) => {}
            _ => return false,
        }
        at += 8;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_is_to_ascii_lowercase_for_every_byte() {
        for b in 0..=255u8 {
            let x = splat(b);
            assert_eq!(lower(x), splat(b.to_ascii_lowercase()), "{b:#x}");
            assert_eq!(zero_bytes(x) != 0, b == 0, "{b:#x}");
        }
        // Neighbours do not disturb each other.
        let mixed = u64::from_le_bytes(*b"Az@[`{Z\xc1");
        assert_eq!(lower(mixed), u64::from_le_bytes(*b"az@[`{z\xc1"));
    }

    #[test]
    fn agrees_with_the_standard_comparison() {
        let names: [&[u8]; 9] = [
            b"Content-Length",
            b"content-length",
            b"CONTENT-LENGTH",
            b"Content-Lengti",
            b"Connection",
            b"keep-alive",
            b"KEEP-ALIVE",
            b"x-accel-",
            b"Date",
        ];
        for a in names {
            for b in names {
                assert_eq!(
                    eq_ignore_case(a, b),
                    a.eq_ignore_ascii_case(b),
                    "{a:?} {b:?}"
                );
            }
        }
        // Every byte at every position against its case twin and its neighbours.
        for len in 1..20 {
            for at in 0..len {
                for v in 0..=255u8 {
                    let mut a = vec![b'k'; len];
                    a[at] = v;
                    for w in [v, v ^ 0x20, v.wrapping_add(1), v.to_ascii_lowercase()] {
                        let mut b = vec![b'K'; len];
                        b[at] = w;
                        assert_eq!(eq_ignore_case(&a, &b), a.eq_ignore_ascii_case(&b));
                    }
                }
            }
        }
    }
}
