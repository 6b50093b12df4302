//! `client_body_in_file_only on|clean`: the body read straight into its temporary file,
//! [`STEP`] bytes at a time (no more of it in memory), and sent to the upstream from that
//! file by every try. A sized body is read exactly (a pipelined next request stays
//! unread); a chunked one is de-chunked by ringfront's validator. The bytes of the body
//! that came with the head are taken out of the connection buffer, so what is left there
//! after the head is the next request.

use std::io;
use std::time::Duration;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRent};
use ringfront_config::LocationSettings;
use ringfront_http::{BodyFraming, ChunkedDecoder, RequestHead};
use ringfront_upstream::exchange::{Cause, Failure, Phase};

use crate::body::{continue_100, too_large, BodyError};
use crate::body_file::BodyFile;
use crate::body_stream::STEP;
use crate::io::{read_more, write_all, IoFail};
use crate::stream::ClientStream;

/// Why spooling stopped.
pub enum SpoolError {
    /// As a buffered read: answer (400, 413) or close.
    Body(BodyError),
    /// The temporary file could not be made or written (nginx: 500).
    File(io::Error),
}

impl From<BodyError> for SpoolError {
    fn from(e: BodyError) -> Self {
        SpoolError::Body(e)
    }
}

/// Reads the body of `head` (whose head ends at `head_len` in `buf`) into a new file.
pub async fn spool(
    stream: &mut ClientStream,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    head_len: usize,
    s: &LocationSettings,
    keep: bool,
) -> Result<BodyFile, SpoolError> {
    if let BodyFraming::Length(n) = head.framing {
        if too_large(s, n) {
            return Err(BodyError::Reject(413).into());
        }
    }
    if head.expect_continue {
        continue_100(stream, s).await?;
    }
    let mut file = BodyFile::create(&s.request_body.temp_path, keep)
        .await
        .map_err(SpoolError::File)?;
    match head.framing {
        BodyFraming::Length(n) => sized(stream, buf, head_len, n, s, &mut file).await?,
        _ => chunked(stream, buf, head_len, s, &mut file).await?,
    }
    Ok(file)
}

async fn append(file: &mut BodyFile, data: Vec<u8>) -> Result<Vec<u8>, SpoolError> {
    let (r, mut data) = file.append(data).await;
    r.map_err(SpoolError::File)?;
    data.clear();
    Ok(data)
}

async fn sized(
    stream: &mut ClientStream,
    buf: &mut Vec<u8>,
    head_len: usize,
    n: u64,
    s: &LocationSettings,
    file: &mut BodyFile,
) -> Result<(), SpoolError> {
    let pre = buf.len().saturating_sub(head_len);
    let taken = usize::try_from(n).map_or(pre, |n| n.min(pre));
    let first: Vec<u8> = buf.drain(head_len..head_len + taken).collect();
    let mut chunk = append(file, first).await?;
    while file.len() < n {
        let want = usize::try_from(n - file.len()).map_or(STEP, |r| r.min(STEP));
        chunk = read_upto(stream, chunk, want, s.client_body_timeout).await?;
        chunk = append(file, chunk).await?;
    }
    Ok(())
}

/// Reads at least one byte and at most `want` into the empty `chunk`.
async fn read_upto(
    stream: &mut ClientStream,
    mut chunk: Vec<u8>,
    want: usize,
    limit: Duration,
) -> Result<Vec<u8>, SpoolError> {
    chunk.reserve(want);
    match crate::deadline::timeout(limit, stream.read(chunk.slice_mut(0..want))).await {
        Ok((Ok(n), slice)) if n > 0 => Ok(slice.into_inner()),
        _ => Err(BodyError::Closed.into()),
    }
}

async fn chunked(
    stream: &mut ClientStream,
    buf: &mut Vec<u8>,
    head_len: usize,
    s: &LocationSettings,
    file: &mut BodyFile,
) -> Result<(), SpoolError> {
    let mut dec = ChunkedDecoder::new();
    let mut data = Vec::with_capacity(STEP);
    loop {
        let p = dec
            .decode(buf.get(head_len..).unwrap_or_default(), &mut data)
            .map_err(|_| BodyError::Reject(400))?;
        buf.drain(head_len..head_len + p.consumed);
        if too_large(s, file.len() + data.len() as u64) {
            return Err(BodyError::Reject(413).into());
        }
        data = append(file, data).await?;
        if p.done {
            return Ok(());
        }
        let (r, b) = read_more(stream, std::mem::take(buf), STEP, s.client_body_timeout).await;
        *buf = b;
        if !matches!(r, Ok(n) if n > 0) {
            return Err(BodyError::Closed.into());
        }
    }
}

/// The file's first [`STEP`] bytes (or all of a shorter body).
pub async fn first_part(f: &BodyFile) -> io::Result<Vec<u8>> {
    let Some(file) = f.file() else {
        return Ok(Vec::new());
    };
    let want = usize::try_from(f.len()).map_or(STEP, |n| n.min(STEP));
    let buf = Vec::with_capacity(want);
    let (r, buf) = file.read_exact_at(buf.slice_mut(0..want), 0).await;
    r.map(|()| buf.into_inner())
}

/// Sends the body from its file to the upstream, from byte `from` on, after the head
/// (`proxy_send_timeout` for each write).
pub async fn send_file<U: AsyncWriteRent>(
    f: &BodyFile,
    from: u64,
    up: &mut U,
    limit: Duration,
) -> Result<(), Failure> {
    let Some(file) = f.file() else {
        return Ok(());
    };
    let mut buf = Vec::with_capacity(STEP);
    let mut at = from;
    while at < f.len() {
        let want = usize::try_from(f.len() - at).map_or(STEP, |r| r.min(STEP));
        buf.clear();
        let (r, b) = file.read_at(buf.slice_mut(0..want), at).await;
        buf = b.into_inner();
        match r {
            Ok(n) if n > 0 => at += n as u64,
            // The file lost bytes under us: nginx fails the request too.
            _ => return Err(Failure::new(Phase::SendRequest, Cause::Closed)),
        }
        let (r, b) = write_all(up, buf, limit).await;
        buf = b;
        match r {
            Ok(()) => {}
            Err(IoFail::Io(e)) => return Err(Failure::io(Phase::SendRequest, &e)),
            Err(IoFail::Timeout) => return Err(Failure::new(Phase::SendRequest, Cause::TimedOut)),
        }
    }
    Ok(())
}
