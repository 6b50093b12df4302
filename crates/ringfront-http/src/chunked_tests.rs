//! Unit tests for the chunked decoder: valid bodies at every split, strictness, limits.

use super::*;

/// Decode `data` in pieces of the given sizes (cycled), returning payload and consumed.
fn decode_split(data: &[u8], sizes: &[usize]) -> Result<(Vec<u8>, usize), ChunkError> {
    let mut dec = ChunkedDecoder::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < data.len() {
        let n = sizes[i % sizes.len()].max(1).min(data.len() - pos);
        i += 1;
        let p = dec.decode(&data[pos..pos + n], &mut out)?;
        assert!(p.consumed <= n);
        pos += p.consumed;
        if p.done {
            assert!(dec.is_done());
            return Ok((out, pos));
        }
        assert_eq!(p.consumed, n, "short consume without done");
    }
    panic!("body did not end: {:?}", String::from_utf8_lossy(data));
}

fn decode_all(data: &[u8]) -> Result<(Vec<u8>, usize), ChunkError> {
    decode_split(data, &[data.len().max(1)])
}

fn scan_err(data: &[u8]) -> ChunkError {
    let mut dec = ChunkedDecoder::new();
    match dec.scan(data) {
        Err(e) => e,
        Ok(p) => panic!("{:?} accepted: {p:?}", String::from_utf8_lossy(data)),
    }
}

const BODY: &[u8] = b"5\r\nhello\r\n1;ext=1;q=\"a b\"\r\n \r\n\
    1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: yes\r\nY:\r\n\r\nNEXT";

#[test]
fn decodes_whole_body() {
    let (out, consumed) = decode_all(BODY).unwrap();
    assert_eq!(out, b"hello abcdefghijklmnopqrstuvwxyz");
    assert_eq!(&BODY[consumed..], b"NEXT");
}

#[test]
fn every_split_gives_identical_result() {
    let expected = decode_all(BODY).unwrap();
    for sizes in [
        &[1][..],
        &[2],
        &[3],
        &[7],
        &[1, 4, 2, 9],
        &[13, 1, 1, 5],
        &[64],
    ] {
        assert_eq!(decode_split(BODY, sizes).unwrap(), expected, "{sizes:?}");
    }
    // Every single two-piece split.
    for cut in 1..BODY.len() {
        let mut dec = ChunkedDecoder::new();
        let mut out = Vec::new();
        let a = dec.decode(&BODY[..cut], &mut out).unwrap();
        let total = if a.done {
            a.consumed
        } else {
            assert_eq!(a.consumed, cut);
            let b = dec.decode(&BODY[cut..], &mut out).unwrap();
            assert!(b.done, "cut {cut}");
            cut + b.consumed
        };
        assert_eq!((out, total), expected, "cut {cut}");
    }
}

#[test]
fn scan_matches_decode() {
    let (_, consumed) = decode_all(BODY).unwrap();
    for step in 1..10 {
        let mut dec = ChunkedDecoder::new();
        let mut pos = 0;
        loop {
            let end = (pos + step).min(BODY.len());
            let p = dec.scan(&BODY[pos..end]).unwrap();
            pos += p.consumed;
            if p.done {
                break;
            }
        }
        assert_eq!(pos, consumed, "step {step}");
    }
}

#[test]
fn minimal_and_uppercase_bodies() {
    assert_eq!(decode_all(b"0\r\n\r\n").unwrap(), (vec![], 5));
    assert_eq!(decode_all(b"000\r\n\r\n").unwrap(), (vec![], 7));
    let (out, _) = decode_all(b"A\r\n0123456789\r\n0\r\n\r\n").unwrap();
    assert_eq!(out, b"0123456789");
    let (out, _) = decode_all(b"3 ;x\r\nabc\r\n0\t;y=z\r\n\r\n").unwrap();
    assert_eq!(out, b"abc");
}

#[test]
fn done_decoder_consumes_nothing() {
    let mut dec = ChunkedDecoder::new();
    assert!(dec.scan(b"0\r\n\r\n").unwrap().done);
    assert_eq!(
        dec.scan(b"more").unwrap(),
        ChunkProgress {
            consumed: 0,
            done: true
        }
    );
    assert_eq!(
        ChunkedDecoder::new().scan(b"").unwrap(),
        ChunkProgress::default()
    );
}

#[test]
fn rejects_bad_size_lines() {
    assert!(matches!(scan_err(b"\r\n\r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(
        scan_err(b"0x5\r\nhello\r\n0\r\n\r\n"),
        ChunkError::InvalidSize(_)
    ));
    assert!(matches!(scan_err(b"-5\r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(scan_err(b"+5\r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(scan_err(b" 5\r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(scan_err(b"5 \r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(scan_err(b"5 5\r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(scan_err(b"g\r\n"), ChunkError::InvalidSize(_)));
    assert!(matches!(scan_err(b";ext\r\n"), ChunkError::InvalidSize(_)));
}

#[test]
fn rejects_bare_lf_and_missing_crlf() {
    assert!(matches!(
        scan_err(b"5\nhello\r\n"),
        ChunkError::InvalidSize(_)
    ));
    assert!(matches!(scan_err(b"5\rhello"), ChunkError::MissingCrlf(_)));
    assert!(matches!(
        scan_err(b"5\r\nhello\n0\r\n\r\n"),
        ChunkError::MissingCrlf(_)
    ));
    assert!(matches!(
        scan_err(b"5\r\nhelloX\r\n"),
        ChunkError::MissingCrlf(_)
    ));
    assert!(matches!(
        scan_err(b"5\r\nhello\rX"),
        ChunkError::MissingCrlf(_)
    ));
    assert!(matches!(scan_err(b"0\r\n\n"), ChunkError::InvalidTrailer));
    assert!(matches!(scan_err(b"0\r\n\rX"), ChunkError::MissingCrlf(_)));
    assert!(matches!(
        scan_err(b"0\r\nA: b\n\r\n"),
        ChunkError::InvalidTrailer
    ));
    assert!(matches!(
        scan_err(b"0\r\nA: b\rX"),
        ChunkError::MissingCrlf(_)
    ));
}

#[test]
fn rejects_bad_extensions() {
    assert_eq!(scan_err(b"5;a\nb\r\n"), ChunkError::InvalidExtension);
    assert_eq!(scan_err(b"5;a\x00\r\n"), ChunkError::InvalidExtension);
    let mut long = b"5;".to_vec();
    long.resize(MAX_SIZE_LINE + 10, b'a');
    assert_eq!(scan_err(&long), ChunkError::SizeLineTooLong);
    let mut zeros = vec![b'0'; MAX_SIZE_LINE + 1];
    zeros.push(b'1');
    assert_eq!(scan_err(&zeros), ChunkError::SizeLineTooLong);
}

#[test]
fn rejects_oversized_chunks() {
    assert_eq!(scan_err(b"10000000000000000\r\n"), ChunkError::SizeTooLarge);
    assert_eq!(scan_err(b"FFFFFFFFFFFFFFFF\r\n"), ChunkError::SizeTooLarge);
    assert_eq!(scan_err(b"8000000000000000\r\n"), ChunkError::SizeTooLarge);
    // i64::MAX itself is accepted; the body is just incomplete.
    let mut dec = ChunkedDecoder::new();
    let p = dec.scan(b"7fffffffffffffff\r\nabc").unwrap();
    assert_eq!(
        p,
        ChunkProgress {
            consumed: 21,
            done: false
        }
    );
}

#[test]
fn rejects_bad_trailers() {
    assert_eq!(
        scan_err(b"0\r\n folded: x\r\n\r\n"),
        ChunkError::InvalidTrailer
    );
    assert_eq!(
        scan_err(b"0\r\nNo Colon\r\n\r\n"),
        ChunkError::InvalidTrailer
    );
    assert_eq!(scan_err(b"0\r\n: x\r\n\r\n"), ChunkError::InvalidTrailer);
    assert_eq!(
        scan_err(b"0\r\nA: x\x01\r\n\r\n"),
        ChunkError::InvalidTrailer
    );
    let mut big = b"0\r\nX: ".to_vec();
    big.resize(MAX_TRAILER_SECTION + 10, b'v');
    assert_eq!(scan_err(&big), ChunkError::TrailerTooLarge);
}

#[test]
fn errors_are_sticky() {
    let mut dec = ChunkedDecoder::new();
    let e = dec.scan(b"z").unwrap_err();
    assert_eq!(dec.scan(b"0\r\n\r\n"), Err(e.clone()));
    let mut out = Vec::new();
    assert_eq!(dec.decode(b"", &mut out), Err(e));
}

#[test]
fn large_chunk_is_streamed_without_buffering() {
    let mut dec = ChunkedDecoder::new();
    assert_eq!(dec.scan(b"100000\r\n").unwrap().consumed, 8);
    let block = vec![b'x'; 0x10000];
    for _ in 0..16 {
        let p = dec.scan(&block).unwrap();
        assert_eq!(
            p,
            ChunkProgress {
                consumed: block.len(),
                done: false
            }
        );
    }
    assert!(dec.scan(b"\r\n0\r\n\r\n").unwrap().done);
}

#[test]
fn garbage_never_panics() {
    let alphabet = b"0123456789abcdefABX;= \t\r\n:\x00\xff\"";
    let mut seed: u32 = 42;
    for len in 0..300usize {
        let buf: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                alphabet[(seed >> 16) as usize % alphabet.len()]
            })
            .collect();
        let mut dec = ChunkedDecoder::new();
        let mut out = Vec::new();
        for piece in buf.chunks(3) {
            match dec.decode(piece, &mut out) {
                Ok(p) if p.done => break,
                Ok(p) => assert_eq!(p.consumed, piece.len()),
                Err(_) => break,
            }
        }
    }
}
