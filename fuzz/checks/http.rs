//! Invariants of the HTTP codec under arbitrary input, shared by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and the stable corpus replay test
//! (`crates/ringfront-http/tests/fuzz_corpus.rs`), both of which include this file.
//!
//! Reads arrive in arbitrary pieces (io_uring), so every check compares feeding the input
//! whole with feeding it split: the answer must not depend on where the reads were cut.

use ringfront_http::{
    BodyFraming, ChunkError, ChunkProgress, ChunkedDecoder, RequestError, RequestHead,
    ResponseError, ResponseHead,
};

/// Inputs up to this length are checked at every prefix length; longer ones at a sample.
const EXHAUSTIVE_PREFIXES: usize = 512;

/// Prefix lengths to try for an input of `len` bytes (always includes 0 and `len`).
fn prefix_lengths(len: usize) -> Vec<usize> {
    if len <= EXHAUSTIVE_PREFIXES {
        return (0..=len).collect();
    }
    let mut ks: Vec<usize> = (0..=64).collect();
    ks.extend(len - 64..=len);
    let step = len / 64;
    ks.extend((1..64).map(|i| i * step));
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// A head parser under test: `parse` as the codec exposes it, plus the per-head checks.
trait Head: Default + Clone + PartialEq + std::fmt::Debug {
    type Error: Clone + PartialEq + std::fmt::Debug + std::fmt::Display;
    fn parse(&mut self, buf: &[u8]) -> Result<Option<usize>, Self::Error>;
    fn head_len(&self) -> usize;
    fn check_parsed(&self, buf: &[u8]);
}

impl Head for RequestHead {
    type Error = RequestError;
    fn parse(&mut self, buf: &[u8]) -> Result<Option<usize>, RequestError> {
        RequestHead::parse(self, buf)
    }
    fn head_len(&self) -> usize {
        self.head_len
    }
    fn check_parsed(&self, buf: &[u8]) {
        let head = &buf[..self.head_len];
        assert!(!self.method.is_empty(), "empty method");
        assert!(self.method.end as usize <= head.len() && self.target.end as usize <= head.len());
        assert!(self.minor_version <= 1);
        assert_ne!(
            self.framing,
            BodyFraming::UntilClose,
            "request framed until close"
        );
        if let Some(end) = self.invalid_host {
            // A refused Host is answered 400 by the caller: nothing after it is read.
            assert!(end <= head.len(), "invalid Host line past the head");
            assert_eq!(self.framing, BodyFraming::None, "invalid Host with a body");
            assert!(!self.keep_alive, "invalid Host kept alive");
        } else if self.minor_version == 1 {
            assert!(
                self.host.is_some(),
                "HTTP/1.1 request without Host accepted"
            );
        }
        for h in &self.headers {
            assert!(h.name.end as usize <= head.len() && h.value.end as usize <= head.len());
            assert!(!h.name.is_empty(), "empty header name");
        }
        for span in [self.method, self.target] {
            assert!(span.start <= span.end);
        }
        let _ = self.is_head(buf);
        let _ = self.header(buf, "host");
    }
}

impl Head for ResponseHead {
    type Error = ResponseError;
    fn parse(&mut self, buf: &[u8]) -> Result<Option<usize>, ResponseError> {
        ResponseHead::parse(self, buf)
    }
    fn head_len(&self) -> usize {
        self.head_len
    }
    fn check_parsed(&self, buf: &[u8]) {
        let head = &buf[..self.head_len];
        assert!((100..=999).contains(&self.status), "status {}", self.status);
        assert!(self.minor_version <= 1);
        assert!(self.reason.end as usize <= head.len());
        assert!(
            !(self.chunked && self.content_length.is_some()),
            "response framed two ways"
        );
        for h in &self.headers {
            assert!(h.name.end as usize <= head.len() && h.value.end as usize <= head.len());
            assert!(!h.name.is_empty(), "empty header name");
        }
        let _ = self.framing(false);
        let _ = self.framing(true);
        let _ = self.header(buf, "content-length");
    }
}

/// Parse `buf` whole, then at growing prefixes (the same head reused, as a connection
/// does). Every prefix must give `Ok(None)` (incomplete) or exactly the whole input's
/// answer; once a prefix gives an answer, every longer one gives the same; a complete
/// head at the whole input means `head_len <= len` and the answer of `buf[..head_len]`
/// is that head too (bytes after the head never matter).
fn check_head<H: Head>(buf: &[u8]) {
    let mut fresh = H::default();
    let whole = fresh.parse(buf);
    if let Err(e) = &whole {
        let _ = e.to_string();
    }
    if let Ok(Some(n)) = whole {
        assert!(n > 0 && n <= buf.len(), "head_len {n} of {}", buf.len());
        assert_eq!(fresh.head_len(), n);
        fresh.check_parsed(buf);
    }
    // Parsing twice (the head already filled) gives the same answer and the same head.
    let mut again = fresh.clone();
    assert_eq!(again.parse(buf), whole, "second parse differs");
    if matches!(whole, Ok(Some(_))) {
        assert_eq!(again, fresh, "second parse gives another head");
    }

    let mut reused = H::default();
    let mut decided: Option<usize> = None;
    for k in prefix_lengths(buf.len()) {
        let part = reused.parse(&buf[..k]);
        match (&part, decided) {
            (Ok(None), None) => {}
            (Ok(None), Some(at)) => {
                panic!("prefix {at} gave {whole:?}, longer prefix {k} gives incomplete")
            }
            _ => {
                assert_eq!(
                    part,
                    whole,
                    "prefix of {k} bytes answers differently from the whole {} bytes",
                    buf.len()
                );
                if matches!(part, Ok(Some(_))) {
                    assert_eq!(reused, fresh, "prefix of {k} bytes parses another head");
                }
                decided.get_or_insert(k);
            }
        }
    }
    if let Ok(Some(n)) = whole {
        let mut exact = H::default();
        assert_eq!(
            exact.parse(&buf[..n]),
            whole,
            "head alone parses differently"
        );
        assert_eq!(exact, fresh, "head alone parses another head");
    }
}

/// `RequestHead::parse`: no panic, split-invariant (see [`check_head`]).
pub fn check_request_head(data: &[u8]) {
    check_head::<RequestHead>(data);
}

/// `ResponseHead::parse`: no panic, split-invariant (see [`check_head`]).
pub fn check_response_head(data: &[u8]) {
    check_head::<ResponseHead>(data);
}

/// The outcome of feeding a chunked body to one decoder, as a caller sees it: the
/// consumed total, whether the message ended, the error (if any), the decoded payload.
#[derive(Debug, PartialEq, Eq)]
struct Fed {
    result: Result<ChunkProgress, ChunkError>,
    decoded: Option<Vec<u8>>,
}

/// Feed `pieces` in order, as a connection would: stop at the first error, and stop once
/// the message is done (the rest of the piece and later pieces are the next message).
fn feed(pieces: &[&[u8]], decode: bool) -> Fed {
    let mut dec = ChunkedDecoder::new();
    let mut out = Vec::new();
    let mut consumed = 0usize;
    let mut done = false;
    for piece in pieces {
        let r = if decode {
            dec.decode(piece, &mut out)
        } else {
            dec.scan(piece)
        };
        match r {
            Err(e) => {
                // A failed decoder stays failed.
                assert_eq!(dec.scan(b"0\r\n\r\n"), Err(e.clone()), "error not sticky");
                return Fed {
                    result: Err(e),
                    decoded: decode.then_some(out),
                };
            }
            Ok(p) => {
                assert!(p.consumed <= piece.len());
                assert!(p.done || p.consumed == piece.len(), "stopped early: {p:?}");
                assert_eq!(p.done, dec.is_done());
                consumed += p.consumed;
                if p.done {
                    done = true;
                    break;
                }
            }
        }
    }
    if done {
        // After the end, nothing more is taken.
        let after = dec.scan(b"more");
        assert_eq!(
            after,
            Ok(ChunkProgress {
                consumed: 0,
                done: true
            })
        );
    }
    if decode {
        assert!(out.len() <= consumed, "more payload than input");
    }
    Fed {
        result: Ok(ChunkProgress { consumed, done }),
        decoded: decode.then_some(out),
    }
}

/// `ChunkedDecoder`: the first two bytes pick two split points, the rest is the body.
/// Whole vs two pieces vs three pieces (and every single split and byte-at-a-time for
/// short bodies) give the same consumed total, done flag, error and decoded bytes, in
/// both `scan` and `decode` mode; `scan` and `decode` agree with each other.
pub fn check_chunked(data: &[u8]) {
    let (a, b, body) = match data {
        [a, b, body @ ..] => (*a as usize, *b as usize, body),
        _ => (0, 0, data),
    };
    let len = body.len();
    let s1 = a * len / 255;
    let s2 = (s1 + b * (len - s1) / 255).min(len);
    for decode in [false, true] {
        let whole = feed(&[body], decode);
        let two = feed(&[&body[..s1], &body[s1..]], decode);
        assert_eq!(two, whole, "split at {s1} (decode={decode})");
        let three = feed(&[&body[..s1], &body[s1..s2], &body[s2..]], decode);
        assert_eq!(three, whole, "split at {s1},{s2} (decode={decode})");
        if len <= 256 {
            for k in 0..=len {
                let two = feed(&[&body[..k], &body[k..]], decode);
                assert_eq!(two, whole, "split at {k} (decode={decode})");
            }
            let bytes: Vec<&[u8]> = body.chunks(1).collect();
            assert_eq!(
                feed(&bytes, decode),
                whole,
                "byte at a time (decode={decode})"
            );
        }
        if decode {
            assert_eq!(
                whole.result,
                feed(&[body], false).result,
                "scan and decode disagree"
            );
        }
    }
}
