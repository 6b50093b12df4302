//! Views of monoio's owned-buffer traits as byte slices, so that plaintext can be copied
//! between them and rustls. The only `unsafe` of the crate, each justified by the traits'
//! contracts (monoio's `IoBuf`/`IoBufMut`/`IoVecBuf` are `unsafe trait`s whose implementors
//! promise valid pointers and lengths while the value is owned).
#![allow(unsafe_code)]

use std::io;

use monoio::buf::{IoBuf, IoBufMut, IoVecBuf};
use monoio::BufResult;

/// The whole writable room of `buf`, zeroed first so that it is initialised memory.
pub fn spare<T: IoBufMut>(buf: &mut T) -> &mut [u8] {
    let len = buf.bytes_total();
    let ptr = buf.write_ptr();
    // SAFETY: `IoBufMut` guarantees `write_ptr()` is valid for `bytes_total()` bytes of
    // writes while `buf` is borrowed; they are zeroed here before the slice is formed, so
    // the slice covers initialised bytes only, and it borrows `buf` mutably.
    unsafe {
        std::ptr::write_bytes(ptr, 0, len);
        std::slice::from_raw_parts_mut(ptr, len)
    }
}

/// Marks the first `n` bytes of `buf` as filled when the read succeeded.
pub fn filled<T: IoBufMut>(mut buf: T, r: io::Result<usize>) -> BufResult<usize, T> {
    if let Ok(n) = r {
        let n = n.min(buf.bytes_total());
        // SAFETY: the first `n` bytes (within `bytes_total`) were zeroed by `spare` and then
        // written by the read; they are initialised and owned by `buf`.
        unsafe { buf.set_init(n) };
    }
    (r, buf)
}

/// The initialised bytes of `buf`.
pub fn bytes<T: IoBuf>(buf: &T) -> &[u8] {
    // SAFETY: `IoBuf` guarantees `read_ptr()` is valid for `bytes_init()` initialised bytes
    // while `buf` is borrowed.
    unsafe { std::slice::from_raw_parts(buf.read_ptr(), buf.bytes_init()) }
}

/// The slices `buf`'s iovecs describe, in order.
pub fn slices<T: IoVecBuf>(buf: &T) -> impl Iterator<Item = &[u8]> {
    let ptr = buf.read_iovec_ptr();
    let n = buf.read_iovec_len();
    // SAFETY: `IoVecBuf` guarantees `read_iovec_ptr()` points at `read_iovec_len()` valid
    // iovecs, each describing readable bytes, while `buf` is borrowed.
    let iovs = unsafe { std::slice::from_raw_parts(ptr, n) };
    iovs.iter().map(|v| {
        // SAFETY: as above, each iovec's base is valid for `iov_len` bytes.
        unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }
    })
}
