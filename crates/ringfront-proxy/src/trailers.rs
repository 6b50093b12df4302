//! `add_trailer`'s framing: a body sent as chunks of ours and ended by the last chunk with the
//! trailer fields, as nginx's chunked filter does once the headers filter set
//! `expect_trailers` (an HTTP/1.1 request, not `HEAD`, a status with a body). Used by the
//! relay, ringfront's own answers and static files.

use monoio::buf::IoBufMut;
use monoio::fs::File;
use ringfront_config::LogLevel;

use crate::io::write_all;
use crate::req::Cx;
use crate::stream::ClientStream;

/// Whether a request can get trailers at all: HTTP/1.1 or later and not `HEAD` (nginx's
/// chunked filter sends HTTP/1.0 clients the body unframed, and `HEAD` no body).
pub fn possible(minor_version: u8, head_only: bool) -> bool {
    minor_version >= 1 && !head_only
}

/// Frames `buf[from..]` as one chunk (nothing for no bytes) and appends `last`, the last
/// chunk and trailers, once the body is complete.
pub fn frame(buf: &mut Vec<u8>, from: usize, last: Option<&[u8]>) {
    let n = buf.len().saturating_sub(from);
    if n > 0 {
        let size = format!("{n:x}\r\n");
        buf.splice(from..from, size.bytes());
        buf.extend_from_slice(b"\r\n");
    }
    if let Some(last) = last {
        buf.extend_from_slice(last);
    }
}

/// The most file bytes in one chunk.
const CHUNK: usize = 64 << 10;
/// A chunk-size line of fixed width (leading zeros are valid chunk sizes), written before
/// the bytes are read behind it.
const SIZE_LINE: usize = 8;

/// Writes what `out` holds (the head), then `len` bytes of `file` from `start` as chunks,
/// then `last`. Returns the bytes written after the head, whether all went out, and the
/// buffer (`static_send::body_out` with chunked framing).
pub async fn file_out(
    cx: &Cx<'_>,
    stream: &mut ClientStream,
    file: &File,
    mut out: Vec<u8>,
    (start, len): (u64, u64),
    last: &[u8],
) -> (u64, bool, Vec<u8>) {
    let timeout = cx.settings().send_timeout;
    let (mut pos, end) = (start, start + len);
    let mut sent = 0;
    // The head is not counted as sent body bytes.
    let mut skip = out.len();
    while pos < end {
        let left = usize::try_from(end - pos).unwrap_or(usize::MAX).min(CHUNK);
        out.reserve(SIZE_LINE + left + 2);
        let line = out.len();
        out.extend_from_slice(&[b'0'; SIZE_LINE]);
        let at = out.len();
        let (r, slice) = file.read_at(out.slice_mut(at..at + left), pos).await;
        out = slice.into_inner();
        let n = match r {
            Ok(n) if n > 0 => n,
            Ok(_) => return truncated(cx, sent, out),
            Err(e) => {
                let what = format!("pread() failed {}", crate::io::errno_text(&e));
                cx.log(LogLevel::Crit, format_args!("{what}"), None);
                return (sent, false, out);
            }
        };
        pos += n as u64;
        let size = format!("{n:06x}\r\n");
        out[line..line + SIZE_LINE].copy_from_slice(size.as_bytes());
        out.extend_from_slice(b"\r\n");
        if pos >= end {
            out.extend_from_slice(last);
        }
        let body = (out.len() - skip) as u64;
        skip = 0;
        let (r, o) = write_all(stream, out, timeout).await;
        out = o;
        if r.is_err() {
            return (sent, false, out);
        }
        sent += body;
        out.clear();
    }
    if len == 0 {
        out.extend_from_slice(last);
        let body = (out.len() - skip) as u64;
        let (r, o) = write_all(stream, out, timeout).await;
        return (body, r.is_ok(), o);
    }
    (sent, true, out)
}

fn truncated(cx: &Cx<'_>, sent: u64, out: Vec<u8>) -> (u64, bool, Vec<u8>) {
    cx.log(
        LogLevel::Crit,
        format_args!("file was truncated while it was sent"),
        None,
    );
    (sent, false, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_pieces_as_chunks_and_ends_with_the_trailers() {
        let mut b = b"HEADabc".to_vec();
        frame(&mut b, 4, None);
        assert_eq!(b, b"HEAD3\r\nabc\r\n");
        let mut b = Vec::new();
        frame(&mut b, 0, Some(b"0\r\nX: 1\r\n\r\n"));
        assert_eq!(b, b"0\r\nX: 1\r\n\r\n");
        assert!(possible(1, false) && !possible(0, false) && !possible(1, true));
    }
}
