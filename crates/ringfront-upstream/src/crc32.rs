//! CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320): nginx's `ngx_crc32_short`,
//! `ngx_crc32_long` and the `ngx_crc32_init/update/final` triple all compute this one.

const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// `ngx_crc32_init`.
pub(crate) const INIT: u32 = 0xFFFF_FFFF;

/// `ngx_crc32_update`: continue a running (not yet finished) CRC over `data`.
pub(crate) fn update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// `ngx_crc32_final`.
pub(crate) fn finish(crc: u32) -> u32 {
    crc ^ INIT
}

/// The CRC-32 of `data` in one go.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    finish(update(INIT, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        // Updating in pieces equals hashing the concatenation.
        assert_eq!(finish(update(update(INIT, b"1234"), b"56789")), 0xCBF4_3926);
    }
}
