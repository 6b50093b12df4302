//! Reading a request body whole before the upstream is contacted (nginx's
//! `proxy_request_buffering on`, kept in memory and bounded by `client_max_body_size`), so
//! any retry can resend it. Chunked bodies are de-chunked by ringfront's own validator;
//! `Expect: 100-continue` is answered only when the body is actually wanted.

use std::ops::Range;

use monoio::net::TcpStream;
use ringfront_config::LocationSettings;
use ringfront_http::{BodyFraming, ChunkedDecoder, RequestHead};

use crate::io::{read_more, write_all};

/// Where the body is, once read.
pub enum Body {
    /// In the connection buffer (Content-Length bodies: no copy).
    InBuffer(Range<usize>),
    /// De-chunked into the caller's vector.
    Decoded,
}

pub enum BodyError {
    /// Answer with this status, then close.
    Reject(u16),
    /// The client went away or timed out: just close.
    Closed,
}

/// Result of reading the body: where it is and how many buffer bytes the request used.
pub type BodyRead = Result<(Body, usize), BodyError>;

async fn continue_100(stream: &mut TcpStream, s: &LocationSettings) -> Result<(), BodyError> {
    let (r, _) = write_all(
        stream,
        b"HTTP/1.1 100 Continue\r\n\r\n".to_vec(),
        s.send_timeout,
    )
    .await;
    r.map_err(|_| BodyError::Closed)
}

fn too_large(s: &LocationSettings, n: u64) -> bool {
    s.client_max_body_size != 0 && n > s.client_max_body_size
}

/// Reads the body of `head` (whose head ends at `head_len` in `buf`), appending to `buf`
/// (or de-chunking into `decoded`).
pub async fn read(
    stream: &mut TcpStream,
    mut buf: Vec<u8>,
    head: &RequestHead,
    head_len: usize,
    s: &LocationSettings,
    decoded: &mut Vec<u8>,
) -> (BodyRead, Vec<u8>) {
    match head.framing {
        BodyFraming::Length(n) => {
            if too_large(s, n) {
                return (Err(BodyError::Reject(413)), buf);
            }
            let Ok(n) = usize::try_from(n) else {
                return (Err(BodyError::Reject(413)), buf);
            };
            let want = head_len.saturating_add(n);
            if buf.len() < want && head.expect_continue {
                if let Err(e) = continue_100(stream, s).await {
                    return (Err(e), buf);
                }
            }
            while buf.len() < want {
                let spare = (want - buf.len()).min(1 << 20);
                let (r, b) = read_more(stream, buf, spare, s.client_body_timeout).await;
                buf = b;
                if !matches!(r, Ok(n) if n > 0) {
                    return (Err(BodyError::Closed), buf);
                }
            }
            (Ok((Body::InBuffer(head_len..want), want)), buf)
        }
        BodyFraming::Chunked => {
            let mut dec = ChunkedDecoder::new();
            let mut pos = head_len;
            if buf.len() == head_len && head.expect_continue {
                if let Err(e) = continue_100(stream, s).await {
                    return (Err(e), buf);
                }
            }
            loop {
                let progress = dec.decode(&buf[pos..], decoded);
                if too_large(s, decoded.len() as u64) {
                    return (Err(BodyError::Reject(413)), buf);
                }
                match progress {
                    Ok(p) => {
                        pos += p.consumed;
                        if p.done {
                            return (Ok((Body::Decoded, pos)), buf);
                        }
                    }
                    Err(_) => return (Err(BodyError::Reject(400)), buf),
                }
                let (r, b) = read_more(stream, buf, 16 * 1024, s.client_body_timeout).await;
                buf = b;
                if !matches!(r, Ok(n) if n > 0) {
                    return (Err(BodyError::Closed), buf);
                }
            }
        }
        _ => (Ok((Body::InBuffer(head_len..head_len), head_len)), buf),
    }
}
