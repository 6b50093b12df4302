//! The body side of nginx's gzip filter: a gzip stream (zlib-rs through flate2) fed the
//! response body piece by piece as it passes, its output framed as chunks for HTTP/1.1
//! clients (nginx's chunked filter) or sent bare to HTTP/1.0 ones (the connection's close
//! ends the body). Memory is bounded by zlib's state and one output buffer, whatever the
//! body's size; output is flushed only at the end, as nginx does for buffered responses.
//! Each worker keeps its last compressor and resets it for the next response of the same
//! level and window, instead of allocating and clearing a fresh deflate state (~256 KiB)
//! per response.

use std::cell::RefCell;

use flate2::{Compress, Compression, FlushCompress, Status};

/// The most output produced per zlib call before the buffer grows.
const STEP: usize = 16 << 10;

/// A worker's spare compressor: (level, window bits, the compressor).
type Spare = (u32, u8, Compress);

thread_local! {
    /// The compressor of this worker's last finished response (worker state: `!Send`
    /// by construction, no lock).
    static SPARE: RefCell<Option<Spare>> = const { RefCell::new(None) };
}

/// One response's compressor.
pub struct GzipStream {
    /// Always `Some` until dropped (then it goes back to [`SPARE`]).
    z: Option<Compress>,
    level: u32,
    wbits: u8,
    /// Frame the output as chunks (the client speaks HTTP/1.1).
    chunked: bool,
    /// zlib's output before it is framed (chunked only).
    scratch: Vec<u8>,
    done: bool,
}

impl GzipStream {
    /// A stream at `level` (1..=9). Like nginx's `ngx_http_gzip_filter_memory`, a body
    /// whose length is known and small gets a smaller window (less memory, same output
    /// for that body).
    pub fn new(level: u32, chunked: bool, length: Option<u64>) -> Self {
        let mut wbits = 15u8;
        if let Some(n) = length.filter(|&n| n > 0) {
            while wbits > 9 && n < 1 << (wbits - 1) {
                wbits -= 1;
            }
        }
        let level = level.clamp(1, 9);
        let spare = SPARE.with(|s| s.borrow_mut().take());
        let z = match spare {
            Some((l, w, mut z)) if l == level && w == wbits => {
                z.reset();
                z
            }
            _ => Compress::new_gzip(Compression::new(level), wbits),
        };
        GzipStream {
            z: Some(z),
            level,
            wbits,
            chunked,
            scratch: Vec::new(),
            done: false,
        }
    }

    /// Compresses `input`, appending what zlib gives back to `out`; `last` ends the
    /// stream (final block, gzip trailer, and the last chunk when chunked). Nothing is
    /// appended once the stream has ended.
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>, last: bool) {
        if self.done {
            return;
        }
        self.done = last;
        if !self.chunked {
            self.deflate(input, out, last);
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.deflate(input, &mut scratch, last);
        if !scratch.is_empty() {
            out.extend_from_slice(format!("{:x}\r\n", scratch.len()).as_bytes());
            out.extend_from_slice(&scratch);
            out.extend_from_slice(b"\r\n");
        }
        if last {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        self.scratch = scratch;
    }

    /// Runs zlib over all of `input` (and to the stream's end when `last`).
    fn deflate(&mut self, mut input: &[u8], out: &mut Vec<u8>, last: bool) {
        let Some(z) = self.z.as_mut() else {
            return;
        };
        let flush = if last {
            FlushCompress::Finish
        } else {
            FlushCompress::None
        };
        loop {
            if out.capacity() - out.len() < STEP / 4 {
                out.reserve(STEP);
            }
            let before = z.total_in();
            let status = z.compress_vec(input, out, flush);
            let used = usize::try_from(z.total_in() - before).unwrap_or(input.len());
            input = input.get(used..).unwrap_or_default();
            match status {
                // The stream's end is written.
                Ok(Status::StreamEnd) => return,
                // All input is in zlib's state; it writes more as more comes.
                Ok(_) if !last && input.is_empty() => return,
                Ok(_) => {}
                // zlib refuses only misuse (a call after the end); nothing more to write.
                Err(_) => return,
            }
        }
    }
}

impl Drop for GzipStream {
    fn drop(&mut self) {
        if let Some(z) = self.z.take() {
            let spare = (self.level, self.wbits, z);
            // A worker thread ending drops its spare with it.
            let _ = SPARE.try_with(|s| *s.borrow_mut() = Some(spare));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// Reads chunked framing back (the test's own small decoder).
    fn dechunk(mut data: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let eol = data.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap(), 16).unwrap();
            data = &data[eol + 2..];
            if size == 0 {
                assert_eq!(data, b"\r\n");
                return body;
            }
            body.extend_from_slice(&data[..size]);
            assert_eq!(&data[size..size + 2], b"\r\n");
            data = &data[size + 2..];
        }
    }

    fn body(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| b"<p>ringfront gzip</p>\n"[i % 22] ^ (i / 997) as u8)
            .collect()
    }

    #[test]
    fn pieces_compress_to_the_whole() {
        let input = body(300_000);
        for level in [1, 6, 9] {
            let mut gz = GzipStream::new(level, false, None);
            let mut out = Vec::new();
            for piece in input.chunks(16 << 10) {
                gz.push(piece, &mut out, false);
            }
            gz.push(b"", &mut out, true);
            assert!(out.len() < input.len() / 2, "{level}: {}", out.len());
            assert_eq!(gunzip(&out), input, "level {level}");
        }
    }

    #[test]
    fn chunked_framing_and_the_last_chunk() {
        let input = body(70_000);
        let mut gz = GzipStream::new(1, true, Some(70_000));
        let mut out = Vec::new();
        let (a, b) = input.split_at(40_000);
        gz.push(a, &mut out, false);
        gz.push(b, &mut out, true);
        assert!(out.ends_with(b"\r\n0\r\n\r\n"));
        assert_eq!(gunzip(&dechunk(&out)), input);
        // After the end nothing more is written.
        let n = out.len();
        gz.push(b"more", &mut out, true);
        assert_eq!(out.len(), n);
    }

    #[test]
    fn a_reused_compressor_starts_a_new_stream() {
        let input = body(50_000);
        for cut in [0, 20_000, 50_000] {
            // The previous stream may have ended or been dropped half way.
            let mut z = GzipStream::new(6, false, None);
            z.push(&input[..cut], &mut Vec::new(), cut == 50_000);
            drop(z);
            let mut out = Vec::new();
            let mut z = GzipStream::new(6, false, None);
            assert!(SPARE.with(|s| s.borrow().is_none()), "taken from the spare");
            z.push(&input, &mut out, true);
            assert_eq!(gunzip(&out), input, "after a cut at {cut}");
        }
    }

    #[test]
    fn empty_and_small_bodies_are_whole_gzip_streams() {
        let mut out = Vec::new();
        GzipStream::new(1, false, Some(0)).push(b"", &mut out, true);
        assert_eq!(&out[..2], b"\x1f\x8b");
        assert_eq!(gunzip(&out), b"");
        let mut out = Vec::new();
        GzipStream::new(9, true, Some(3)).push(b"abc", &mut out, true);
        assert_eq!(gunzip(&dechunk(&out)), b"abc");
    }
}
