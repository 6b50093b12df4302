//! Values the machine gives variables: `$request_id` (16 random bytes per request, drawn
//! only when a template reads it, as nginx's `RAND_bytes`) and `$hostname` (`gethostname`,
//! lower-cased as nginx stores it).

use std::sync::OnceLock;

/// 16 bytes from the kernel's random source; a counter mixed with the clock should that
/// fail, so ids stay distinct.
#[allow(unsafe_code)]
pub fn draw() -> [u8; 16] {
    let mut id = [0u8; 16];
    // SAFETY: `id` is a valid, writable buffer of exactly the length passed.
    let n = unsafe { libc::getrandom(id.as_mut_ptr().cast(), id.len(), 0) };
    if n != id.len() as isize {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let count = NEXT.fetch_add(1, Ordering::Relaxed);
        id[..8].copy_from_slice(&crate::clock::unix_ms().to_le_bytes());
        id[8..].copy_from_slice(&count.to_le_bytes());
    }
    id
}

/// `$hostname`: read once.
#[allow(unsafe_code)]
pub fn hostname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is valid for `buf.len()` bytes; the kernel writes at most that many.
        let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if r != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_and_the_name_is_lower_case() {
        assert_ne!(draw(), draw());
        let h = hostname();
        assert!(!h.is_empty());
        assert_eq!(h, h.to_ascii_lowercase());
    }
}
