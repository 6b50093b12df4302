//! Sending an open file: the head nginx's static handler and header filters write
//! (`Content-Type` by extension, `Content-Length`, `Last-Modified`, `ETag`,
//! `Accept-Ranges`), then the body read through the ring in chunks of at most
//! [`CHUNK`] bytes, each written under `send_timeout` before the next is read.

use monoio::buf::IoBufMut;
use monoio::fs::File;
use ringfront_config::LogLevel;

use crate::io::write_all;
use crate::req::{Cx, Reply};
use crate::respond::{self, Answer, Fields};
use crate::static_file::Opened;
use crate::stream::ClientStream;

/// The most bytes of a file held at once.
const CHUNK: usize = 64 << 10;

/// Sends `opened` (a regular file) as the answer; `type_uri` names its `Content-Type`.
pub async fn send(
    cx: &Cx<'_>,
    mut stream: ClientStream,
    mut out: Vec<u8>,
    opened: Opened,
    type_uri: &[u8],
) -> (Reply, Option<ClientStream>) {
    let Opened::File { file, size, mtime } = opened else {
        return (Reply::new(500, 0, 0, false), Some(stream));
    };
    let s = cx.settings();
    let type_uri = String::from_utf8_lossy(type_uri);
    let mut answer = Answer::of(cx);
    answer.decor = answer.decor.with_mtime(mtime);
    let last_modified = crate::date::imf_fixdate(u64::try_from(mtime).unwrap_or(0));
    let mut etag = format!("\"{:x}-{:x}\"", mtime, size);
    let own_etag = s.files.etag.then_some(etag.as_str());
    let mut plan = crate::static_cond::plan(cx.req, &s.files, size, mtime, own_etag);
    let ctype = s.files.content_type(&type_uri);
    let gz = s
        .gzip
        .as_ref()
        .and_then(|g| crate::gzip_file::start(g, cx, &mut plan, ctype, size));
    let compress = gz.as_ref().filter(|g| g.compress);
    if compress.is_some() {
        etag.insert_str(0, "W/");
        // A compressed body to an HTTP/1.0 client ends with the connection.
        answer.keep_alive &= cx.req.head.minor_version >= 1 || cx.req.head_only;
    }
    let (status, start, len) = (plan.status, plan.start, plan.len);
    let content_range = plan.content_range.as_deref().unwrap_or_default();
    let mut last: Vec<(&str, &[u8])> = Vec::with_capacity(1);
    if !content_range.is_empty() {
        last.push(("Content-Range", content_range.as_bytes()));
    }
    if plan.accept_ranges {
        last.push(("Accept-Ranges", b"bytes"));
    }
    if let Some(g) = &gz {
        g.last(&mut last);
    }
    if matches!(status, 412 | 416) {
        // nginx's special response for the status (its error_page too), with the range
        // filter's `Content-Range: bytes */SIZE` on a 416.
        drop(file);
        out.clear();
        let (shown, n) = respond::error_with(&mut out, &answer, status, &last);
        let bytes = out.len() as u64;
        let (r, o) = write_all(&mut stream, out, s.send_timeout).await;
        cx.w.give_buf(o);
        return (
            Reply::new(shown, n, bytes, answer.keep_alive && r.is_ok()),
            Some(stream),
        );
    }
    // An `add_header ETag|Last-Modified` in effect replaces the file's own.
    let own = |name: &str| {
        let name = name.as_bytes();
        !answer
            .decor
            .replaces(ringfront_http::Known::of(name), name, status)
    };
    let after: &[(&str, &[u8])] = match own("ETag") && s.files.etag {
        true => &[("ETag", etag.as_bytes())],
        false => &[],
    };
    let mut before: Vec<(&str, &[u8])> = Vec::with_capacity(2);
    if own("Last-Modified") {
        before.push(("Last-Modified", &last_modified));
    }
    if compress.is_some_and(|g| g.chunked) {
        before.push(("Transfer-Encoding", b"chunked"));
    }
    let body = status != 304;
    let multipart = !plan.parts.is_empty();
    let (boundary, multi_type, len) = match multipart {
        true => {
            let b = crate::static_multipart::boundary();
            let n = crate::static_multipart::length(&plan.parts, &b, ctype, size);
            let t = format!("multipart/byteranges; boundary={b}");
            (b, t, n)
        }
        false => (String::new(), String::new(), len),
    };
    // A compressed file is framed by the gzip filter; trailers are not added to it.
    let chunked = body && !multipart && compress.is_none() && answer.trailers(status);
    let fields = Fields {
        content_type: body.then_some(if multipart { &multi_type } else { ctype }),
        length: (body && compress.is_none()).then_some(len),
        before: &before,
        after,
        last: &last,
        chunked,
    };
    out.clear();
    respond::head(&mut out, &answer, status, &fields);
    let head_len = out.len() as u64;
    let mut reply = Reply::new(answer.sent(status), 0, head_len, answer.keep_alive);
    if answer.head_only || !body {
        let (r, o) = write_all(&mut stream, out, s.send_timeout).await;
        cx.w.give_buf(o);
        reply.reusable &= r.is_ok();
        return (reply, Some(stream));
    }
    let (sent, whole, o) = match (multipart, compress) {
        (_, Some(g)) => crate::gzip_file::body_out(cx, &mut stream, &file, out, size, g).await,
        (true, None) => {
            let how = (&plan.parts[..], &boundary[..], ctype, size);
            crate::static_multipart::body(cx, &mut stream, &file, out, how).await
        }
        // `add_trailer`: the file as chunks, then the trailers.
        (false, None) if chunked => {
            let mut end = Vec::new();
            let sent = crate::vars_response::head_of(&out);
            answer.decor.last_chunk(status, sent, &mut end);
            crate::trailers::file_out(cx, &mut stream, &file, out, (start, len), &end).await
        }
        (false, None) => body_out(cx, &mut stream, &file, out, start, len).await,
    };
    cx.w.give_buf(o);
    reply.body_bytes_sent = sent;
    reply.bytes_sent = head_len + sent;
    reply.reusable &= whole;
    (reply, Some(stream))
}

/// Writes what `out` holds, then `len` bytes of `file` from `start`. Returns the file
/// bytes written, whether all went out, and the buffer.
pub(crate) async fn body_out(
    cx: &Cx<'_>,
    stream: &mut ClientStream,
    file: &File,
    mut out: Vec<u8>,
    start: u64,
    len: u64,
) -> (u64, bool, Vec<u8>) {
    let timeout = cx.settings().send_timeout;
    let mut pacer = crate::paced::pacer(cx);
    let (mut pos, end) = (start, start + len);
    let mut sent = 0;
    while pos < end {
        let left = usize::try_from(end - pos).unwrap_or(usize::MAX);
        // A file larger than the pooled buffer's room gets one buffer of up to CHUNK.
        if out.capacity() - out.len() < left.min(CHUNK) && out.capacity() < CHUNK {
            out.reserve(left.min(CHUNK));
        }
        let (at, cap) = (out.len(), out.capacity());
        let want = left.min(cap - at);
        let (r, slice) = file.read_at(out.slice_mut(at..at + want), pos).await;
        out = slice.into_inner();
        let n = match r {
            Ok(0) => {
                cx.log(
                    LogLevel::Crit,
                    format_args!("file was truncated while it was sent"),
                    None,
                );
                return (sent, false, out);
            }
            Ok(n) => n,
            Err(e) => {
                cx.log(
                    LogLevel::Crit,
                    format_args!("pread() failed {}", crate::io::errno_text(&e)),
                    None,
                );
                return (sent, false, out);
            }
        };
        pos += n as u64;
        let (r, o) = crate::paced::write_paced(stream, out, timeout, pacer.as_mut()).await;
        out = o;
        if r.is_err() {
            return (sent, false, out);
        }
        sent += n as u64;
        out.clear();
    }
    if !out.is_empty() {
        // An empty file: the head alone.
        let (r, o) = write_all(stream, out, timeout).await;
        return (sent, r.is_ok(), o);
    }
    (sent, true, out)
}
