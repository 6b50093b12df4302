//! nginx's `ngx_crypt`: a password against a stored hash of `auth_basic_user_file`.
//! `{PLAIN}`, `{SHA}`, `{SSHA}` and Apache's `$apr1$` are computed here; anything else goes
//! to the system's crypt(3) (libxcrypt: `$1$`, `$5$`, `$6$`, `$2y$`, `$y$`, DES...).

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CString};

use md5::{Digest, Md5};
use sha1::Sha1;

/// What crypting `password` with the salt `stored` gave: equal to `stored` or not; `Err`
/// where crypt(3) failed (nginx's 500).
pub fn verify(password: &[u8], stored: &[u8]) -> Result<bool, ()> {
    // Both are C strings to nginx: the password ends at a NUL.
    let key = password.split(|&b| b == 0).next().unwrap_or_default();
    let made = if let Some(salt) = stored.strip_prefix(b"$apr1$") {
        apr1(key, salt)
    } else if stored.starts_with(b"{PLAIN}") {
        [&b"{PLAIN}"[..], key].concat()
    } else if let Some(encoded) = stored.strip_prefix(b"{SSHA}") {
        ssha(key, encoded)
    } else if stored.starts_with(b"{SHA}") {
        let mut out = b"{SHA}".to_vec();
        encode_base64(&mut out, &Sha1::digest(key));
        out
    } else {
        libc_crypt(key, stored)?
    };
    Ok(made == stored)
}

/// `{SSHA}`: base64(SHA1(key salt) salt), the salt what follows the stored digest.
fn ssha(key: &[u8], encoded: &[u8]) -> Vec<u8> {
    let decoded = crate::vars_auth::decode_base64(encoded).filter(|d| d.len() >= 20);
    let salt = decoded.as_deref().map_or(&[][..], |d| &d[20..]);
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(salt);
    let digest = [&sha.finalize()[..], salt].concat();
    let mut out = b"{SSHA}".to_vec();
    encode_base64(&mut out, &digest);
    out
}

/// Apache's apr1: Poul-Henning Kamp's MD5 crypt with the `$apr1$` magic.
fn apr1(key: &[u8], rest: &[u8]) -> Vec<u8> {
    const MAGIC: &[u8] = b"$apr1$";
    let end = rest
        .iter()
        .take(8)
        .position(|&b| b == b'$')
        .unwrap_or(rest.len().min(8));
    let salt = &rest[..end];
    let mut md5 = Md5::new();
    md5.update(key);
    md5.update(MAGIC);
    md5.update(salt);
    let alt = Md5::new()
        .chain_update(key)
        .chain_update(salt)
        .chain_update(key)
        .finalize();
    for chunk in (0..key.len()).step_by(16) {
        md5.update(&alt[..(key.len() - chunk).min(16)]);
    }
    let mut i = key.len();
    while i > 0 {
        md5.update(if i & 1 == 1 { &[0u8][..] } else { &key[..1] });
        i >>= 1;
    }
    let mut fin = md5.finalize();
    for round in 0..1000 {
        let mut ctx = Md5::new();
        if round & 1 == 1 {
            ctx.update(key);
        } else {
            ctx.update(fin);
        }
        if round % 3 != 0 {
            ctx.update(salt);
        }
        if round % 7 != 0 {
            ctx.update(key);
        }
        if round & 1 == 1 {
            ctx.update(fin);
        } else {
            ctx.update(key);
        }
        fin = ctx.finalize();
    }
    let mut out = [MAGIC, salt, b"$"].concat();
    let f = |i: usize| u32::from(fin[i]);
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        to64(&mut out, (f(a) << 16) | (f(b) << 8) | f(c), 4);
    }
    to64(&mut out, f(11), 2);
    out
}

/// crypt(3)'s alphabet, six bits at a time from the low end.
fn to64(out: &mut Vec<u8>, mut v: u32, n: usize) {
    const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for _ in 0..n {
        out.push(ITOA64[(v & 0x3f) as usize]);
        v >>= 6;
    }
}

/// Standard base64 with padding (`ngx_encode_base64`).
fn encode_base64(out: &mut Vec<u8>, src: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for group in src.chunks(3) {
        let mut n = 0u32;
        for (i, b) in group.iter().enumerate() {
            n |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..4 {
            let c = ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize];
            out.push(if i <= group.len() { c } else { b'=' });
        }
    }
}

/// `struct crypt_data`'s size is 32256 bytes in libxcrypt; a larger buffer is fine.
const CRYPT_DATA_SIZE: usize = 32 << 10;

thread_local! {
    /// The worker's crypt_r scratch (zeroed once, as libxcrypt asks).
    static CRYPT_DATA: RefCell<Vec<u8>> = RefCell::new(vec![0; CRYPT_DATA_SIZE]);
}

#[link(name = "crypt")]
extern "C" {
    fn crypt_r(phrase: *const c_char, setting: *const c_char, data: *mut c_void) -> *mut c_char;
}

/// The system's crypt(3) (reentrant form); `Err` where it returned no string.
fn libc_crypt(key: &[u8], setting: &[u8]) -> Result<Vec<u8>, ()> {
    let key = CString::new(key).map_err(|_| ())?;
    let setting = CString::new(setting).map_err(|_| ())?;
    CRYPT_DATA.with(|data| {
        let mut data = data.borrow_mut();
        #[allow(unsafe_code)]
        // SAFETY: both strings are NUL-terminated and live across the call; `data` is a
        // zero-initialised buffer at least `sizeof(struct crypt_data)` long (byte-aligned
        // struct of char arrays), used by this thread only; the result points into `data`
        // and is copied out before `data` is touched again.
        let out = unsafe {
            let p = crypt_r(key.as_ptr(), setting.as_ptr(), data.as_mut_ptr().cast());
            if p.is_null() {
                return Err(());
            }
            std::ffi::CStr::from_ptr(p).to_bytes().to_vec()
        };
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Hashes made with `openssl passwd` (and the RFC's SHA-1 of "secret").
    #[test]
    fn formats_as_nginx() {
        let ok = |stored: &str| verify(b"secret", stored.as_bytes()).unwrap();
        assert!(ok("{PLAIN}secret"));
        assert!(!ok("{PLAIN}secre"));
        assert!(ok("{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="));
        assert!(!ok("{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ"));
        assert!(ok("$apr1$salt1234$G61s9lpZAELkzUFCbj/53/"));
        assert!(ok("$1$salt1234$GexpiwjB8qThXlxv/yIG6."));
        assert!(ok("$6$abcdefgh$ltjgWl6579NluT/Vi1nwEvcil.G5Nbc4NiXZaNGStk8PSwGfQv72N2CKPPrVACtLtip/cZ/1GM/O6IND4WQhG."));
        assert!(!verify(b"wrong", b"$apr1$salt1234$G61s9lpZAELkzUFCbj/53/").unwrap());
    }

    #[test]
    fn ssha_salt_after_the_digest() {
        let mut stored = b"{SSHA}".to_vec();
        let digest = [
            &Sha1::new()
                .chain_update(b"pw")
                .chain_update(b"NaCl")
                .finalize()[..],
            b"NaCl",
        ]
        .concat();
        encode_base64(&mut stored, &digest);
        assert!(verify(b"pw", &stored).unwrap());
        assert!(!verify(b"px", &stored).unwrap());
    }

    #[test]
    fn base64_pads() {
        let enc = |s: &[u8]| {
            let mut o = Vec::new();
            encode_base64(&mut o, s);
            String::from_utf8(o).unwrap()
        };
        assert_eq!(enc(b"a"), "YQ==");
        assert_eq!(enc(b"ab"), "YWI=");
        assert_eq!(enc(b"abc"), "YWJj");
    }
}
