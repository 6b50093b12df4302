//! Unit tests for response head parsing and RFC 9112 6.3 framing.

use super::*;

fn ok(raw: &[u8]) -> ResponseHead {
    let mut head = ResponseHead::new();
    match head.parse(raw) {
        Ok(Some(n)) => {
            assert_eq!(n, head.head_len);
            head
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
    }
}

fn err(raw: &[u8]) -> ResponseError {
    match ResponseHead::new().parse(raw) {
        Err(e) => e,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
    }
}

#[test]
fn simple_response() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello";
    let head = ok(raw);
    assert_eq!(head.status, 200);
    assert_eq!(head.minor_version, 1);
    assert_eq!(head.reason.get(raw), b"OK");
    assert_eq!(head.head_len, raw.len() - 5);
    assert_eq!(head.content_length, Some(5));
    assert!(!head.chunked && !head.connection_close && !head.upgrade);
    assert_eq!(head.header(raw, "server"), Some(&b"x"[..]));
    assert_eq!(head.framing(false), BodyFraming::Length(5));
    assert_eq!(head.framing(true), BodyFraming::None);
}

#[test]
fn partial_at_every_split_point() {
    let raw = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n";
    for i in 0..raw.len() {
        assert_eq!(
            ResponseHead::new().parse(&raw[..i]),
            Ok(None),
            "split at {i}"
        );
    }
    assert_eq!(ok(raw).framing(false), BodyFraming::Chunked);
}

#[test]
fn reason_may_be_missing() {
    let raw = b"HTTP/1.1 204\r\n\r\n";
    let head = ok(raw);
    assert_eq!(head.status, 204);
    assert!(head.reason.is_empty());
    assert_eq!(head.framing(false), BodyFraming::None);
}

#[test]
fn framing_rules() {
    let until_close = ok(b"HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!(until_close.framing(false), BodyFraming::UntilClose);
    for status in [100, 101, 103, 204, 304] {
        let raw = format!("HTTP/1.1 {status} X\r\nContent-Length: 10\r\n\r\n");
        assert_eq!(
            ok(raw.as_bytes()).framing(false),
            BodyFraming::None,
            "{status}"
        );
    }
    let chunked = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
    assert!(chunked.chunked);
    assert_eq!(chunked.framing(false), BodyFraming::Chunked);
    assert_eq!(chunked.framing(true), BodyFraming::None);
    let split =
        ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert!(split.chunked);
    let zero = ok(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(zero.framing(false), BodyFraming::Length(0));
}

#[test]
fn connection_close_rules() {
    assert!(ok(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").connection_close);
    assert!(ok(b"HTTP/1.0 200 OK\r\n\r\n").connection_close);
    assert!(!ok(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n").connection_close);
    assert!(!ok(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n").connection_close);
    let up = ok(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    assert!(up.upgrade && !up.connection_close);
}

#[test]
fn length_rejections() {
    assert_eq!(
        err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ResponseError::LengthAndTransferEncoding
    );
    assert_eq!(
        err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n"),
        ResponseError::ConflictingContentLength
    );
    // Repeated, even with the same value: a 502, never forwarded (issue 11 item 12).
    assert_eq!(
        err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
        ResponseError::ConflictingContentLength
    );
    for cl in ["+5", "0x5", "5 5", "", "-0", "18446744073709551616"] {
        let raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {cl}\r\n\r\n");
        assert_eq!(
            err(raw.as_bytes()),
            ResponseError::InvalidContentLength,
            "{cl:?}"
        );
    }
}

#[test]
fn transfer_encoding_rejections() {
    for te in ["gzip", "chunked, gzip", "chunked, chunked", "", "xchunked"] {
        let raw = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: {te}\r\n\r\n");
        assert_eq!(
            err(raw.as_bytes()),
            ResponseError::UnsupportedTransferEncoding,
            "{te:?}"
        );
    }
    assert_eq!(
        err(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ResponseError::UnsupportedTransferEncoding
    );
}

#[test]
fn malformed_status_lines_and_headers() {
    for raw in [
        &b"HTTP/2.0 200 OK\r\n\r\n"[..],
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1  200 OK\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
        b"<html>",
    ] {
        assert!(
            matches!(err(raw), ResponseError::StatusLine(_)),
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
    for raw in [
        &b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\rY: b\r\n\r\n",
    ] {
        assert!(
            matches!(err(raw), ResponseError::Header(_)),
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn header_limit() {
    let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..=MAX_HEADERS {
        raw.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    assert_eq!(err(&raw), ResponseError::TooManyHeaders);
}

#[test]
fn reuse_clears_previous_response() {
    let mut head = ResponseHead::new();
    let a = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    assert!(head.parse(a).unwrap().is_some());
    let b = b"HTTP/1.1 404 Not Found\r\n\r\n";
    assert_eq!(head.parse(b), Ok(Some(b.len())));
    assert!(!head.chunked && !head.connection_close);
    assert!(head.headers.is_empty());
    assert_eq!(head.reason.get(b), b"Not Found");
}

#[test]
fn garbage_never_panics() {
    let mut head = ResponseHead::new();
    let mut seed: u32 = 0x9e37_79b9;
    let alphabet = b"HTTP/1.0 2045\r\n: ,chunkedContent-Lgth\x00\xff\t";
    for len in 0..200usize {
        let buf: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                alphabet[(seed >> 16) as usize % alphabet.len()]
            })
            .collect();
        let _ = head.parse(&buf);
    }
}
