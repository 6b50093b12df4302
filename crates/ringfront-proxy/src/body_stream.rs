//! `proxy_request_buffering off`: the request body passed to the upstream as it arrives,
//! after the head (nginx's `r->request_body_no_buffering`). A sized body keeps its
//! `Content-Length` and is read exactly (bytes of a pipelined next request stay unread); a
//! chunked one is de-chunked by ringfront's validator and sent chunked again, one chunk per
//! read (nginx's `ngx_http_proxy_body_output_filter`), ending `0\r\n\r\n`. One bounded
//! buffer per request: at most [`STEP`] bytes are read before they are written on. Each
//! client read waits at most `client_body_timeout`, each upstream write
//! `proxy_send_timeout`.

use std::time::Duration;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRent};
use ringfront_config::LocationSettings;
use ringfront_http::{BodyFraming, ChunkedDecoder, RequestHead};
use ringfront_upstream::exchange::{Cause, Failure, Phase};

use crate::io::{write_all, IoFail};
use crate::stream::ClientStream;

/// The most bytes read from the client before they go on.
pub const STEP: usize = 16 * 1024;

/// Why streaming stopped.
#[derive(Debug)]
pub enum StreamError {
    /// The client's fault: answer this status (nginx: 400 for a bad chunk, 408 on
    /// `client_body_timeout`, 413 past `client_max_body_size`) with this error-log line.
    Client(u16, Option<&'static str>),
    /// The client closed the connection: nothing to answer (400 in the log, as nginx).
    ClientClosed,
    /// Writing to the upstream failed.
    Upstream(Failure),
}

enum Kind {
    /// Body bytes still to come.
    Length(u64),
    Chunked(ChunkedDecoder),
}

/// A body being streamed.
pub struct BodyStream {
    kind: Kind,
    /// Bytes from the client not yet passed on (raw: chunk framing included).
    pending: Vec<u8>,
    /// Decoded body bytes so far (`client_max_body_size` of a chunked body).
    received: u64,
    /// Bytes written to the upstream after the head's write (`$upstream_bytes_sent`).
    sent: u64,
    /// The buffers of the last write and decode, reused (no allocation per read).
    spare: Vec<u8>,
    data: Vec<u8>,
    done: bool,
}

impl BodyStream {
    /// Whether nginx streams this request's body (`ngx_http_proxy_handler`): buffering off,
    /// no `proxy_set_body`, the body passed, and a chunked body only with
    /// `proxy_http_version 1.1` written; and, as `ngx_http_read_client_request_body`, not when the whole body
    /// already came with the head (it is then buffered as usual).
    pub fn wanted(s: &LocationSettings, head: &RequestHead, preread: &[u8]) -> bool {
        let streams = !s.request_body.buffering
            && s.proxy_pass.is_some()
            && s.proxy_set_body.is_none()
            && s.proxy_pass_request_body;
        if !streams {
            return false;
        }
        match head.framing {
            BodyFraming::Length(n) => n > 0 && (preread.len() as u64) < n,
            BodyFraming::Chunked if s.request_body.chunked_streams => {
                // A bad chunk already here is refused as buffered, before any upstream.
                let mut dec = ChunkedDecoder::new();
                matches!(dec.scan(preread), Ok(p) if !p.done)
            }
            _ => false,
        }
    }

    /// The stream of `head`'s body, starting with the bytes that came with the head.
    pub fn new(head: &RequestHead, preread: &[u8]) -> BodyStream {
        let kind = match head.framing {
            BodyFraming::Length(n) => Kind::Length(n),
            _ => Kind::Chunked(ChunkedDecoder::new()),
        };
        let mut pending = Vec::with_capacity(STEP);
        pending.extend_from_slice(preread);
        BodyStream {
            kind,
            pending,
            received: 0,
            sent: 0,
            spare: Vec::new(),
            data: Vec::new(),
            done: false,
        }
    }

    /// What the client sent past the body's end (a chunked body's pipelined next
    /// request), once the body is done.
    pub fn leftover(&self) -> &[u8] {
        match self.done {
            true => &self.pending,
            false => &[],
        }
    }

    /// The body bytes written after the request's first write.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The whole body went on.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The chunked body is sent chunked (`Transfer-Encoding: chunked`, no length).
    pub fn chunked(&self) -> bool {
        matches!(self.kind, Kind::Chunked(_))
    }

    /// Passes the whole body on to `up`, reading the client as needed.
    pub async fn pump<U: AsyncWriteRent>(
        &mut self,
        client: &mut ClientStream,
        up: &mut U,
        s: &LocationSettings,
    ) -> Result<(), StreamError> {
        loop {
            let out = self.take(s)?;
            if !out.is_empty() {
                self.sent += out.len() as u64;
                let (r, mut back) = write_all(up, out, s.proxy_send_timeout).await;
                r.map_err(|e| StreamError::Upstream(send_failure(e)))?;
                back.clear();
                match self.pending.capacity() {
                    0 => self.pending = back,
                    _ => self.spare = back,
                }
            }
            if self.done {
                return Ok(());
            }
            self.read(client, s.client_body_timeout).await?;
        }
    }

    /// The body bytes that came with the head, to go out with the request's head in one
    /// write (as nginx's request chain).
    pub fn first(&mut self, s: &LocationSettings) -> Result<Vec<u8>, StreamError> {
        self.take(s)
    }

    /// What of the pending bytes goes on now (a chunk re-framed).
    fn take(&mut self, s: &LocationSettings) -> Result<Vec<u8>, StreamError> {
        match &mut self.kind {
            Kind::Length(rest) => {
                // Reads stop at the body's end, so all that is pending is body.
                let n = self
                    .pending
                    .len()
                    .min(usize::try_from(*rest).unwrap_or(usize::MAX));
                *rest -= n as u64;
                self.done = *rest == 0;
                self.pending.truncate(n);
                Ok(std::mem::take(&mut self.pending))
            }
            Kind::Chunked(dec) => {
                let data = &mut self.data;
                data.clear();
                let p = dec.decode(&self.pending, data).map_err(|_| {
                    StreamError::Client(400, Some("client sent invalid chunked body"))
                })?;
                self.pending.drain(..p.consumed);
                self.received += data.len() as u64;
                let max = s.client_max_body_size;
                if max != 0 && self.received > max {
                    let msg = "client intended to send too large chunked body";
                    return Err(StreamError::Client(413, Some(msg)));
                }
                let mut out = std::mem::take(&mut self.spare);
                out.clear();
                if !data.is_empty() {
                    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                    out.extend_from_slice(data);
                    out.extend_from_slice(b"\r\n");
                }
                if p.done {
                    out.extend_from_slice(b"0\r\n\r\n");
                    self.done = true;
                }
                Ok(out)
            }
        }
    }

    /// Reads more of the body from the client (a sized body: never past its end).
    async fn read(
        &mut self,
        client: &mut ClientStream,
        limit: Duration,
    ) -> Result<(), StreamError> {
        let want = match self.kind {
            Kind::Length(rest) => usize::try_from(rest).unwrap_or(STEP).min(STEP),
            Kind::Chunked(_) => STEP,
        };
        let mut buf = std::mem::take(&mut self.pending);
        buf.reserve(want);
        let len = buf.len();
        let r = crate::deadline::timeout(limit, client.read(buf.slice_mut(len..len + want))).await;
        match r {
            Ok((Ok(n), slice)) => {
                self.pending = slice.into_inner();
                match n {
                    0 => Err(StreamError::ClientClosed),
                    _ => Ok(()),
                }
            }
            Ok((Err(_), _)) => Err(StreamError::ClientClosed),
            Err(_) => Err(StreamError::Client(408, None)),
        }
    }
}

fn send_failure(e: IoFail) -> Failure {
    match e {
        IoFail::Io(e) => Failure::io(Phase::SendRequest, &e),
        IoFail::Timeout => Failure::new(Phase::SendRequest, Cause::TimedOut),
    }
}
