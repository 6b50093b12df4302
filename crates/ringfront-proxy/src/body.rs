//! Reading a request body whole before the upstream is contacted (nginx's
//! `proxy_request_buffering on`, kept in memory and bounded by `client_max_body_size`), so
//! any retry can resend it. The body is held once, in its own buffer: the bytes that came
//! with the head are moved there, the rest is read straight into it, and the upstream
//! request sends it from there (no copy into the request). Chunked bodies are de-chunked by
//! ringfront's own validator; `Expect: 100-continue` is answered only when the body is
//! actually wanted.

use std::time::Duration;

use crate::stream::ClientStream;
use monoio::buf::IoBufMut;
use monoio::io::AsyncReadRent;
use ringfront_config::LocationSettings;
use ringfront_http::{BodyFraming, ChunkedDecoder, HeadWriter, RequestHead};

use crate::io::{read_more, write_all};

pub enum BodyError {
    /// Answer with this status, then close.
    Reject(u16),
    /// The client went away or timed out: just close.
    Closed,
}

/// The body, and how many bytes of the connection buffer the request used (head included).
pub type BodyRead = Result<(Vec<u8>, usize), BodyError>;

pub(crate) async fn continue_100(
    stream: &mut ClientStream,
    s: &LocationSettings,
) -> Result<(), BodyError> {
    let mut out = Vec::with_capacity(32);
    HeadWriter::response(&mut out, 100).finish();
    let (r, _) = write_all(stream, out, s.send_timeout).await;
    r.map_err(|_| BodyError::Closed)
}

pub(crate) fn too_large(s: &LocationSettings, n: u64) -> bool {
    s.client_max_body_size != 0 && n > s.client_max_body_size
}

/// Reads the body of `head` (whose head ends at `head_len` in `buf`). Like nginx, an
/// HTTP/1.1 request with `Expect: 100-continue` gets the interim answer whenever its body
/// is wanted — even when it is empty or already here — unless it is refused as too large.
pub async fn read(
    stream: &mut ClientStream,
    buf: Vec<u8>,
    head: &RequestHead,
    head_len: usize,
    s: &LocationSettings,
) -> (BodyRead, Vec<u8>) {
    let size = match head.framing {
        BodyFraming::Length(n) if too_large(s, n) => return (Err(BodyError::Reject(413)), buf),
        BodyFraming::Length(n) => match usize::try_from(n) {
            Ok(n) => Some(n),
            Err(_) => return (Err(BodyError::Reject(413)), buf),
        },
        _ => None,
    };
    if head.expect_continue {
        if let Err(e) = continue_100(stream, s).await {
            return (Err(e), buf);
        }
    }
    match head.framing {
        BodyFraming::Length(_) => {
            let r = sized(stream, &buf, head_len, size.unwrap_or(0), s).await;
            (r, buf)
        }
        BodyFraming::Chunked => chunked(stream, buf, head_len, s).await,
        _ => (Ok((Vec::new(), head_len)), buf),
    }
}

/// A Content-Length body: what came with the head, then exactly the rest (bytes of a
/// pipelined next request stay unread).
async fn sized(
    stream: &mut ClientStream,
    buf: &[u8],
    head_len: usize,
    n: usize,
    s: &LocationSettings,
) -> BodyRead {
    let pre = buf.get(head_len..).unwrap_or_default();
    let taken = pre.len().min(n);
    // Grown as bytes arrive: a declared length is not an allocation the client can demand.
    let mut body = Vec::with_capacity(n.min(READ_STEP));
    body.extend_from_slice(&pre[..taken]);
    while body.len() < n {
        let (r, b) = read_upto(stream, body, n, s.client_body_timeout).await;
        body = b;
        if !matches!(r, Some(k) if k > 0) {
            return Err(BodyError::Closed);
        }
    }
    Ok((body, head_len + taken))
}

/// How much room one read of a body makes at most.
const READ_STEP: usize = 1 << 20;

/// Reads into `body` without going past `end` bytes in all; `None` on a timeout or an error.
async fn read_upto(
    stream: &mut ClientStream,
    mut body: Vec<u8>,
    end: usize,
    limit: Duration,
) -> (Option<usize>, Vec<u8>) {
    let len = body.len();
    body.reserve((end - len).min(READ_STEP));
    let end = end.min(body.capacity());
    match crate::deadline::timeout(limit, stream.read(body.slice_mut(len..end))).await {
        Ok((r, slice)) => (r.ok(), slice.into_inner()),
        Err(_) => (None, Vec::new()),
    }
}

/// A chunked body, de-chunked as it arrives.
async fn chunked(
    stream: &mut ClientStream,
    mut buf: Vec<u8>,
    head_len: usize,
    s: &LocationSettings,
) -> (BodyRead, Vec<u8>) {
    let mut dec = ChunkedDecoder::new();
    let mut decoded = Vec::new();
    let mut pos = head_len;
    loop {
        let progress = dec.decode(&buf[pos..], &mut decoded);
        if too_large(s, decoded.len() as u64) {
            return (Err(BodyError::Reject(413)), buf);
        }
        match progress {
            Ok(p) => {
                pos += p.consumed;
                if p.done {
                    return (Ok((decoded, pos)), buf);
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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;
    use crate::testutil::on_both;

    /// A connected pair: ours (monoio) and the client's (blocking std, in this thread).
    async fn pair() -> (ClientStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (ours, _) = l.accept().unwrap();
        ours.set_nonblocking(true).unwrap();
        let ours = monoio::net::TcpStream::from_std(ours).unwrap();
        (ClientStream::Plain(ours), client)
    }

    fn head(bytes: &[u8]) -> (RequestHead, usize) {
        let mut h = RequestHead::new();
        let n = h.parse(bytes).unwrap().unwrap();
        (h, n)
    }

    fn settings(max: u64) -> LocationSettings {
        LocationSettings {
            client_max_body_size: max,
            client_body_timeout: Duration::from_secs(5),
            ..LocationSettings::default()
        }
    }

    #[test]
    fn a_sized_body_is_read_exactly_and_pipelined_bytes_stay() {
        on_both(|| async {
            let (mut ours, mut client) = pair().await;
            let first = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123";
            let (h, n) = head(first);
            // The rest of the body and the next request arrive after the head.
            client
                .write_all(b"456789GET /next HTTP/1.1\r\n\r\n")
                .unwrap();
            let (r, buf) = read(&mut ours, first.to_vec(), &h, n, &settings(0)).await;
            let Ok((body, consumed)) = r else {
                panic!("body not read")
            };
            assert_eq!(body, b"0123456789");
            assert_eq!(
                consumed,
                first.len(),
                "the bytes read with the head, all body"
            );
            assert_eq!(
                buf, first,
                "the connection buffer is not grown for the body"
            );
            // The next request is still in the socket, unread.
            let (r, next) =
                crate::io::read_more(&mut ours, Vec::new(), 64, Duration::from_secs(5)).await;
            assert!(matches!(r, Ok(n) if n > 0));
            assert_eq!(next, b"GET /next HTTP/1.1\r\n\r\n");
        });
    }

    #[test]
    fn expect_100_continue_is_answered_when_the_body_is_wanted() {
        on_both(|| async {
            let (mut ours, mut client) = pair().await;
            let bytes =
                b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
            let (h, n) = head(bytes);
            let mut answer = [0u8; 25];
            let reader = std::thread::spawn(move || {
                client.read_exact(&mut answer).unwrap();
                client.write_all(b"ok").unwrap();
                (answer, client)
            });
            let (r, _) = read(&mut ours, bytes.to_vec(), &h, n, &settings(0)).await;
            let (answer, _client) = reader.join().unwrap();
            assert_eq!(&answer, b"HTTP/1.1 100 Continue\r\n\r\n");
            assert!(matches!(r, Ok((ref b, _)) if b == b"ok"));
        });
    }

    #[test]
    fn limits_and_bad_chunks_are_refused() {
        on_both(|| async {
            let (mut ours, _client) = pair().await;
            let bytes = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n";
            let (h, n) = head(bytes);
            let (r, _) = read(&mut ours, bytes.to_vec(), &h, n, &settings(1024)).await;
            assert!(matches!(r, Err(BodyError::Reject(413))));
            let bytes = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
            let (h, n) = head(bytes);
            let (r, _) = read(&mut ours, bytes.to_vec(), &h, n, &settings(0)).await;
            assert!(matches!(r, Ok((ref b, c)) if b == b"hello" && c == bytes.len()));
            let bytes = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
            let (h, n) = head(bytes);
            let (r, _) = read(&mut ours, bytes.to_vec(), &h, n, &settings(0)).await;
            assert!(matches!(r, Err(BodyError::Reject(400))));
        });
    }

    #[test]
    fn a_huge_declared_length_is_not_an_allocation() {
        on_both(|| async {
            let (mut ours, mut client) = pair().await;
            let bytes = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000000000\r\n\r\n";
            let (h, n) = head(bytes);
            client.write_all(b"only this").unwrap();
            drop(client);
            let (r, _) = read(&mut ours, bytes.to_vec(), &h, n, &settings(0)).await;
            assert!(matches!(r, Err(BodyError::Closed)));
        });
    }
}
