//! A `multipart/byteranges` 206 for several ranges, byte for byte as nginx's range filter
//! writes it: a 20-digit boundary from one counter for the process, each part's
//! `Content-Type` and `Content-Range`, the closing delimiter.

use std::sync::atomic::{AtomicU64, Ordering};

use monoio::fs::File;

use crate::io::write_all;
use crate::req::Cx;
use crate::stream::ClientStream;

/// nginx's `ngx_next_temp_number(0)`: 1, 2, ... shared by the workers.
static BOUNDARY: AtomicU64 = AtomicU64::new(0);

/// The next boundary.
pub fn boundary() -> String {
    format!("{:020}", BOUNDARY.fetch_add(1, Ordering::Relaxed) + 1)
}

/// The head of one part: `CRLF --BOUNDARY CRLF Content-Type: T CRLF Content-Range: ...`.
fn part_head(out: &mut Vec<u8>, boundary: &str, ctype: &str, (s, e): (u64, u64), size: u64) {
    let text = format!(
        "\r\n--{boundary}\r\nContent-Type: {ctype}\r\nContent-Range: bytes {s}-{}/{size}\r\n\r\n",
        e - 1
    );
    out.extend_from_slice(text.as_bytes());
}

fn closing(boundary: &str) -> String {
    format!("\r\n--{boundary}--\r\n")
}

/// The body's length for `parts` of a file of `size` bytes.
pub fn length(parts: &[(u64, u64)], boundary: &str, ctype: &str, size: u64) -> u64 {
    let mut head = Vec::new();
    let mut n = closing(boundary).len() as u64;
    for &p in parts {
        head.clear();
        part_head(&mut head, boundary, ctype, p, size);
        n += head.len() as u64 + (p.1 - p.0);
    }
    n
}

/// Writes what `out` holds (the head), then the parts. Returns the body bytes written,
/// whether all went out, and the buffer.
pub async fn body(
    cx: &Cx<'_>,
    stream: &mut ClientStream,
    file: &File,
    mut out: Vec<u8>,
    (parts, boundary, ctype, size): (&[(u64, u64)], &str, &str, u64),
) -> (u64, bool, Vec<u8>) {
    let mut sent = 0;
    for &p in parts {
        let before = out.len();
        part_head(&mut out, boundary, ctype, p, size);
        let framing = (out.len() - before) as u64;
        let (n, whole, o) =
            crate::static_send::body_out(cx, stream, file, out, p.0, p.1 - p.0).await;
        out = o;
        sent += framing + n;
        if !whole {
            return (sent, false, out);
        }
    }
    out.extend_from_slice(closing(boundary).as_bytes());
    let n = out.len() as u64;
    let (r, o) = write_all(stream, out, cx.settings().send_timeout).await;
    (sent + n, r.is_ok(), o)
}
