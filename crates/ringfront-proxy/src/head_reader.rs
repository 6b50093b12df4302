//! The one response-head reader: reads from an upstream (a proxied request or a health
//! probe) until a final response head is in, skipping interim 1xx answers (other than 101)
//! as nginx does, bounded in size and in time per read.

use std::time::Duration;

use monoio::io::AsyncReadRent;
use ringfront_http::ResponseHead;

use crate::io::{read_at_most, IoFail};

/// How much one read of a response head takes: nginx's default `proxy_buffer_size` (one
/// page). A larger head takes more reads; the body bytes a read takes behind the head are
/// copied by the relay, the rest of a large body moves without a copy (splice.rs).
const HEAD_READ: usize = 4096;

/// The response-head size ringfront accepts (nginx: `proxy_buffer_size`, 4k|8k; larger
/// heads are common enough behind modern apps that ringfront allows 64k).
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// Why no head could be read.
#[derive(Debug)]
pub enum HeadError {
    Io(std::io::Error),
    TimedOut,
    /// The peer closed the connection before a whole head arrived.
    Closed,
    /// Bytes that are not a valid head; `http`: they started like one (`HTTP/`).
    Invalid {
        http: bool,
        error: ringfront_http::ResponseError,
    },
    TooBig,
}

/// Reads one final response head into `buf` (which keeps the head and any body bytes that
/// came with it). `limit` gives the time allowed for each read.
pub async fn read<S: AsyncReadRent>(
    s: &mut S,
    mut buf: Vec<u8>,
    limit: impl Fn() -> Duration,
) -> (Result<ResponseHead, HeadError>, Vec<u8>) {
    let mut head = ResponseHead::new();
    loop {
        if !buf.is_empty() {
            match parse(&mut head, &mut buf) {
                Step::Done => return (Ok(head), buf),
                Step::Again => continue,
                Step::More => {}
                Step::Fail(e) => return (Err(e), buf),
            }
        }
        let (r, b) = read_at_most(s, buf, HEAD_READ, limit()).await;
        buf = b;
        match r {
            Ok(0) => return (Err(HeadError::Closed), buf),
            Ok(_) => {}
            Err(IoFail::Io(e)) => return (Err(HeadError::Io(e)), buf),
            Err(IoFail::Timeout) => return (Err(HeadError::TimedOut), buf),
        }
    }
}

enum Step {
    Done,
    /// An interim response was dropped from the buffer: parse what follows.
    Again,
    More,
    Fail(HeadError),
}

fn parse(head: &mut ResponseHead, buf: &mut Vec<u8>) -> Step {
    match head.parse(buf) {
        Ok(Some(n)) if n > MAX_RESPONSE_HEAD => Step::Fail(HeadError::TooBig),
        Ok(Some(n)) if (100..200).contains(&head.status) && head.status != 101 => {
            buf.drain(..n);
            *head = ResponseHead::new();
            Step::Again
        }
        Ok(Some(_)) => Step::Done,
        Ok(None) if buf.len() > MAX_RESPONSE_HEAD => Step::Fail(HeadError::TooBig),
        Ok(None) => Step::More,
        Err(error) => Step::Fail(HeadError::Invalid {
            http: buf.starts_with(b"HTTP/"),
            error,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8]) -> (Result<u16, String>, Vec<u8>) {
        let mut head = ResponseHead::new();
        let mut buf = bytes.to_vec();
        loop {
            match parse(&mut head, &mut buf) {
                Step::Done => return (Ok(head.status), buf),
                Step::Again => continue,
                Step::More => return (Err("more".into()), buf),
                Step::Fail(HeadError::Invalid { http, .. }) => {
                    return (Err(format!("Invalid {{ http: {http} }}")), buf)
                }
                Step::Fail(e) => return (Err(format!("{e:?}")), buf),
            }
        }
    }

    #[test]
    fn interim_answers_are_skipped() {
        let (r, buf) =
            parse_all(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
        assert_eq!(r, Ok(200));
        assert!(buf.starts_with(b"HTTP/1.1 200 OK"));
        assert_eq!(parse_all(b"HTTP/1.1 101 Switching\r\n\r\n").0, Ok(101));
    }

    #[test]
    fn partial_invalid_and_too_big() {
        assert_eq!(parse_all(b"HTTP/1.1 200 OK\r\nA: b").0, Err("more".into()));
        assert_eq!(
            parse_all(b"HTTP/1.1 2x0 OK\r\n\r\n").0,
            Err("Invalid { http: true }".into())
        );
        assert_eq!(
            parse_all(b"hello there\r\n\r\n").0,
            Err("Invalid { http: false }".into())
        );
        let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
        while big.len() <= MAX_RESPONSE_HEAD {
            big.extend_from_slice(b"X-Filler: ");
            big.extend_from_slice(&[b'a'; 2000]);
            big.extend_from_slice(b"\r\n");
        }
        assert_eq!(parse_all(&big).0, Err("TooBig".into()));
        big.extend_from_slice(b"\r\n");
        assert_eq!(parse_all(&big).0, Err("TooBig".into()));
    }

    #[test]
    fn reads_across_reads_over_a_socket() {
        let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = monoio::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let server = monoio::spawn(async move {
                use monoio::io::AsyncWriteRentExt;
                let (mut s, _) = l.accept().await.unwrap();
                let _ = s
                    .write_all(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2".to_vec())
                    .await;
                monoio::time::sleep(Duration::from_millis(5)).await;
                let _ = s.write_all(b"04 No Content\r\n\r\n".to_vec()).await;
                s
            });
            let mut c = monoio::net::TcpStream::connect(addr).await.unwrap();
            let (r, _) = read(&mut c, Vec::new(), || Duration::from_secs(5)).await;
            assert_eq!(r.unwrap().status, 204);
            drop(server.await);
            let (r, _) = read(&mut c, Vec::new(), || Duration::from_secs(5)).await;
            assert!(matches!(r, Err(HeadError::Closed)));
        });
    }
}
