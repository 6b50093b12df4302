//! nginx's gzip filter on a static file: decided before the range filter, so a file
//! that is compressed is sent whole with a 200 (nginx's gzip header filter clears
//! `allow_ranges`: no 206, no 416, no `Accept-Ranges`), without `Content-Length`, with a
//! weak `ETag`, `Content-Encoding: gzip` and, with `gzip_vary on`, `Vary:
//! Accept-Encoding`; the file is read through the ring in chunks of at most [`CHUNK`]
//! bytes, each compressed and written before the next is read.

use monoio::fs::File;
use ringfront_config::{Gzip, LogLevel};

use crate::gzip_ok::{decide, Fields, Request, Response, Verdict};
use crate::gzip_stream::GzipStream;
use crate::io::write_all;
use crate::req::Cx;
use crate::static_cond::Plan;
use crate::stream::ClientStream;

/// The most bytes of a file read at once.
const CHUNK: usize = 64 << 10;

/// The filter's part in one file response.
pub struct FileGzip {
    pub vary: bool,
    /// Compressed (`Content-Encoding: gzip`).
    pub compress: bool,
    /// The compressed body goes out as chunks (HTTP/1.1).
    pub chunked: bool,
    level: u32,
}

/// A file's fields as the decision reads them: always a `Last-Modified` and an `ETag`,
/// never `Expires` or `Cache-Control` at that point.
struct FileFields;

impl Fields for FileFields {
    fn first(&self, name: &str) -> Option<&[u8]> {
        matches!(name, "last-modified" | "etag").then_some(b"")
    }

    fn has_token(&self, _: &str, _: &[u8]) -> bool {
        false
    }
}

/// What the filter does to the file answered by `plan` (made whole when compressed);
/// `None` when it changes nothing.
pub fn start(g: &Gzip, cx: &Cx<'_>, plan: &mut Plan, ctype: &str, size: u64) -> Option<FileGzip> {
    // The range filter has not run yet: a ranged answer is still a 200 of `size` bytes.
    let ranged = matches!(plan.status, 206 | 416);
    let (status, length) = match ranged {
        true => (200, size),
        false => (plan.status, plan.len),
    };
    let resp = Response {
        status,
        content_type: Some(ctype.as_bytes()),
        content_length: Some(length),
        content_encoding: None,
    };
    let verdict = decide(g, &Request::of(cx.req), &resp, &FileFields, 0);
    let vary = verdict.vary(g);
    let compress = verdict == Verdict::Compress;
    if compress {
        *plan = Plan {
            status: 200,
            start: 0,
            len: size,
            content_range: None,
            accept_ranges: false,
            parts: Vec::new(),
        };
    }
    (vary || compress).then_some(FileGzip {
        vary,
        compress,
        chunked: compress && !cx.req.head_only && cx.req.head.minor_version >= 1,
        level: g.comp_level,
    })
}

impl FileGzip {
    /// The filter's fields after all others.
    pub fn last(&self, fields: &mut Vec<(&str, &[u8])>) {
        if self.vary {
            fields.push(("Vary", b"Accept-Encoding"));
        }
        if self.compress {
            fields.push(("Content-Encoding", b"gzip"));
        }
    }
}

/// Writes what `out` holds (the head), then `size` bytes of `file` compressed. Returns
/// the bytes written after the head, whether all went out, and the buffer.
pub async fn body_out(
    cx: &Cx<'_>,
    stream: &mut ClientStream,
    file: &File,
    mut out: Vec<u8>,
    size: u64,
    gz: &FileGzip,
) -> (u64, bool, Vec<u8>) {
    let timeout = cx.settings().send_timeout;
    let mut z = GzipStream::new(gz.level, gz.chunked, Some(size));
    let want = usize::try_from(size).unwrap_or(CHUNK).clamp(1, CHUNK);
    let mut buf = Vec::with_capacity(want);
    let (mut pos, mut sent, mut head) = (0, 0, out.len() as u64);
    loop {
        buf.clear();
        if pos < size {
            let (r, b) = file.read_at(buf, pos).await;
            buf = b;
            match r {
                Ok(n) if n > 0 => pos += n as u64,
                r => {
                    let why = match r {
                        Err(e) => format!("pread() failed {}", crate::io::errno_text(&e)),
                        Ok(_) => "file was truncated while it was sent".to_string(),
                    };
                    cx.log(LogLevel::Crit, format_args!("{why}"), None);
                    return (sent, false, out);
                }
            }
        }
        z.push(&buf, &mut out, pos >= size);
        let n = out.len() as u64;
        let (r, o) = write_all(stream, out, timeout).await;
        out = o;
        if r.is_err() {
            return (sent, false, out);
        }
        sent += n - head;
        head = 0;
        out.clear();
        if pos >= size {
            return (sent, true, out);
        }
    }
}
