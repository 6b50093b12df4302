//! nginx's gzip filter on a relayed upstream response: decided on the upstream's head
//! (gzip_ok.rs); a compressed response's head loses `Content-Length` and
//! `Accept-Ranges`, its strong `ETag` becomes weak (`W/"..."`, one not quoted is dropped:
//! `ngx_http_weak_etag`), and it gains `Content-Encoding: gzip` after the other fields
//! and, with `gzip_vary on`, `Vary: Accept-Encoding`; its body (decoded from the
//! upstream's framing) goes through a [`GzipStream`], chunked to HTTP/1.1 clients and
//! ended by the connection's close for HTTP/1.0 ones.

use ringfront_config::Gzip;
use ringfront_http::{HeadWriter, ResponseHead};

use crate::gzip_ok::{decide, list_has_token, Fields, Request, Response, Verdict};
use crate::gzip_stream::GzipStream;
use crate::req::Cx;

/// The filter's part in one relayed response (only where it changes something).
pub struct RelayGzip {
    vary: bool,
    /// The body compressor; `None` when only `Vary` is added.
    stream: Option<GzipStream>,
    /// The compressed response goes out as chunks (HTTP/1.1 and a body to send).
    chunked: bool,
    compress: bool,
}

/// The upstream's head as the decision's [`Fields`].
struct Upstream<'a> {
    head: &'a ResponseHead,
    buf: &'a [u8],
}

impl Fields for Upstream<'_> {
    fn first(&self, name: &str) -> Option<&[u8]> {
        self.head.header(self.buf, name)
    }

    fn has_token(&self, name: &str, token: &[u8]) -> bool {
        self.head.headers.iter().any(|f| {
            f.name.get(self.buf).eq_ignore_ascii_case(name.as_bytes())
                && list_has_token(f.value.get(self.buf), token)
        })
    }
}

/// What the filter does to this response; `None` when it changes nothing (gzip off,
/// or a response it does not consider, or `Vary` alone without `gzip_vary`). Boxed: the
/// relay's future stays as small as it is without gzip.
pub fn start(g: &Gzip, cx: &Cx<'_>, head: &ResponseHead, buf: &[u8]) -> Option<Box<RelayGzip>> {
    let up = Upstream { head, buf };
    let resp = Response {
        status: head.status,
        content_type: up.first("content-type"),
        content_length: head.content_length,
        content_encoding: up.first("content-encoding"),
    };
    let req = cx.req;
    let now = crate::clock::now_secs() as i64;
    let verdict = decide(g, &Request::of(req), &resp, &up, now);
    let vary = verdict.vary(g);
    let compress = verdict == Verdict::Compress;
    if !compress && !vary {
        return None;
    }
    // A HEAD answer has no body to compress (nginx's chunked filter skips HEAD too).
    let body = compress && !req.head_only;
    let chunked = body && req.head.minor_version >= 1;
    Some(Box::new(RelayGzip {
        vary,
        stream: body.then(|| GzipStream::new(g.comp_level, chunked, head.content_length)),
        chunked,
        compress,
    }))
}

impl RelayGzip {
    /// The body is compressed (the upstream's framing is decoded first).
    pub fn compresses(&self) -> bool {
        self.stream.is_some()
    }

    /// `Transfer-Encoding: chunked` goes out.
    pub fn chunked(&self) -> bool {
        self.chunked
    }

    /// The client connection may stay open: a compressed body to an HTTP/1.0 client
    /// ends with the connection.
    pub fn keeps_alive(&self) -> bool {
        self.chunked || self.stream.is_none()
    }

    /// Writes the upstream field `name: value` as the filter changes it; `false` when it
    /// leaves the field alone (the caller writes it).
    pub fn field(&self, h: &mut HeadWriter<'_>, name: &[u8], value: &[u8]) -> bool {
        if !self.compress {
            return false;
        }
        if name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"accept-ranges")
        {
            return true;
        }
        if !name.eq_ignore_ascii_case(b"etag") || value.starts_with(b"W/") {
            return false;
        }
        if value.first() == Some(&b'"') {
            h.header_with(b"ETag", |out| {
                out.extend_from_slice(b"W/");
                out.extend_from_slice(value);
            });
        }
        true
    }

    /// The filter's own fields, after all others.
    pub fn last(&self, h: &mut HeadWriter<'_>) {
        if self.vary {
            h.header(b"Vary", b"Accept-Encoding");
        }
        if self.compress {
            h.header(b"Content-Encoding", b"gzip");
        }
    }

    /// Compresses the body bytes `out[from..]` in place; `last` ends the stream.
    pub fn seal(&mut self, out: &mut Vec<u8>, from: usize, last: bool) {
        if let Some(z) = &mut self.stream {
            let plain = out.split_off(from.min(out.len()));
            z.push(&plain, out, last);
        }
    }

    /// Compresses the body bytes in `bufs[plain]` into the other buffer; returns that
    /// buffer's index.
    pub fn pass(&mut self, bufs: &mut [Vec<u8>; 2], plain: usize, last: bool) -> usize {
        let Some(z) = &mut self.stream else {
            return plain;
        };
        let [a, b] = bufs;
        let (input, out) = if plain == 0 { (a, b) } else { (b, a) };
        out.clear();
        z.push(input, out, last);
        1 - plain
    }
}
