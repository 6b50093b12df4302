use std::mem::MaybeUninit;

use super::*;
use crate::request::MAX_HEADERS;

const WRK: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
const BROWSER: &[u8] = b"GET /articles/2026/12/some-name?utm_source=feed&x=%20y HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
Accept-Language: en-US,en;q=0.9\r\n\
Cookie: session=3f9a1c0e7b2d4a6f; prefs=theme%3Ddark   \r\n\
Sec-Fetch-Mode: navigate\r\n\
X_Under: 1\r\n\
\r\n";
const POST: &[u8] = b"POST /api HTTP/1.0\r\nContent-Length: 4\r\nX:  padded  \r\n\r\nbody";
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n\
Date: Mon, 07 Dec 2026 23:29:03 GMT\r\nContent-Type: text/plain\r\n\
Content-Length: 19\r\nConnection: keep-alive\r\n\r\nhello from backend\n";
const RESPONSE_10: &[u8] = b"HTTP/1.0 404 Not  Found \r\nX-A:b\r\n\r\n";

type Fields = Vec<(Span, Span)>;

fn within(buf: &[u8], part: &[u8]) -> Span {
    Span::within(buf, part).expect("inside the buffer")
}

/// httparse's view of a request head: (method, target, minor), fields, length.
fn httparse_request(buf: &[u8]) -> Option<((Span, Span, u8), Fields, usize)> {
    let mut raw = [const { MaybeUninit::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let Ok(httparse::Status::Complete(n)) = req.parse_with_uninit_headers(buf, &mut raw) else {
        return None;
    };
    let line = (
        within(buf, req.method?.as_bytes()),
        within(buf, req.path?.as_bytes()),
        req.version?,
    );
    let fields = req.headers.iter().map(|h| field(buf, h)).collect();
    Some((line, fields, n))
}

/// httparse's view of a response head: (minor, code, reason), fields, length.
fn httparse_response(buf: &[u8]) -> Option<((u8, u16, Span), Fields, usize)> {
    let mut raw = [const { MaybeUninit::uninit() }; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    let Ok(httparse::Status::Complete(n)) =
        config.parse_response_with_uninit_headers(&mut res, buf, &mut raw)
    else {
        return None;
    };
    let reason = Span::within(buf, res.reason?.as_bytes())?;
    let line = (res.version?, res.code?, reason);
    let fields = res.headers.iter().map(|h| field(buf, h)).collect();
    Some((line, fields, n))
}

fn field(buf: &[u8], h: &httparse::Header<'_>) -> (Span, Span) {
    (within(buf, h.name.as_bytes()), within(buf, h.value))
}

fn spans(out: &[Header]) -> Fields {
    out.iter().map(|h| (h.name, h.value)).collect()
}

/// Scans `buf` both ways as a request and a response; whenever the plain scan answers, it
/// must answer what httparse does (and the names' kinds are the usual ones). Returns how
/// many of the two scans answered.
fn agree(buf: &[u8]) -> usize {
    let mut answered = 0;
    let mut out = Vec::new();
    if let Some((line, n)) = request(buf, &mut out) {
        let want = httparse_request(buf).unwrap_or_else(|| panic!("httparse refused {buf:?}"));
        assert_eq!(
            ((line.method, line.target, line.minor), spans(&out), n),
            want,
            "{buf:?}"
        );
        answered += 1;
    }
    let kinds = out.iter().all(|h| h.known == Known::of(h.name.get(buf)));
    assert!(kinds, "{buf:?}");
    out.clear();
    if let Some((line, n)) = response(buf, &mut out) {
        let want = httparse_response(buf).unwrap_or_else(|| panic!("httparse refused {buf:?}"));
        assert_eq!(
            ((line.minor, line.code, line.reason), spans(&out), n),
            want,
            "{buf:?}"
        );
        answered += 1;
    }
    answered
}

#[test]
fn plain_heads_are_scanned_as_httparse_parses_them() {
    for buf in [WRK, BROWSER, POST, RESPONSE, RESPONSE_10] {
        assert_eq!(agree(buf), 1, "{:?}", String::from_utf8_lossy(buf));
    }
    let mut out = Vec::new();
    let (line, n) = request(BROWSER, &mut out).unwrap();
    assert_eq!(n, BROWSER.len());
    assert_eq!(
        line.target.get(BROWSER),
        b"/articles/2026/12/some-name?utm_source=feed&x=%20y"
    );
    assert_eq!(
        out[4].value.get(BROWSER),
        b"session=3f9a1c0e7b2d4a6f; prefs=theme%3Ddark"
    );
    assert_eq!(out[0].known, Known::Host);
    out.clear();
    let (line, n) = response(RESPONSE_10, &mut out).unwrap();
    assert_eq!((line.minor, line.code, n), (0, 404, RESPONSE_10.len()));
    assert_eq!(line.reason.get(RESPONSE_10), b"Not  Found ");
}

#[test]
fn anything_unusual_is_left_to_httparse() {
    let unusual: [&[u8]; 22] = [
        b"GET / HTTP/1.1\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\n",
        b"GET / HTTP/1.1\r\nHost:\ta\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\tb\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost:\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost:   \r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: \xc3\xa9\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        b"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
        b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"get / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\r",
        b"HTTP/1.1 200\r\n\r\n",
        b"HTTP/1.1 200 \r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 O\x7fK\r\n\r\n",
    ];
    let mut out = Vec::new();
    for buf in unusual {
        let plain = request(buf, &mut out).is_some() || response(buf, &mut out).is_some();
        assert!(!plain, "{:?}", String::from_utf8_lossy(buf));
    }
}

#[test]
fn more_fields_than_the_bound_are_left_to_httparse() {
    let head = |n: usize| {
        let mut h = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..n {
            h.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        h.extend_from_slice(b"\r\n");
        h
    };
    let mut out = Vec::new();
    assert!(request(&head(MAX_HEADERS), &mut out).is_some());
    assert_eq!(out.len(), MAX_HEADERS);
    out.clear();
    assert!(request(&head(MAX_HEADERS + 1), &mut out).is_none());
}

#[test]
fn unusual_finds_the_first_byte_outside_printable_ascii() {
    for b in 0..=255u8 {
        for at in 0..8 {
            let mut w = *b"abcdefgh";
            w[at] = b;
            let want = !(0x20..=0x7e).contains(&b);
            assert_eq!(
                unusual(u64::from_le_bytes(w)) != 0,
                want,
                "byte {b:#x} at {at}"
            );
            let first_at = (unusual(u64::from_le_bytes(w)) != 0)
                .then(|| first(unusual(u64::from_le_bytes(w))));
            assert_eq!(first_at, want.then_some(at), "byte {b:#x} at {at}");
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..100_000 {
        let w = rng.next().to_le_bytes();
        let want = w.iter().position(|b| !(0x20..=0x7e).contains(b));
        let m = unusual(u64::from_le_bytes(w));
        assert_eq!((m != 0).then(|| first(m)), want, "{w:?}");
    }
}

/// Heads mutated at random (a byte replaced, inserted or removed, or the head cut short),
/// with bytes chosen where parsers differ: the scan, whenever it answers, agrees with
/// httparse, and it still answers for many of them.
#[test]
fn mutated_heads_agree_with_httparse() {
    const BYTES: &[u8] = b" \t\r\n:/_-;\x00\x01\x1f\x7f\x80\xc3\xffaZ0%\"";
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut answered = 0;
    let bases = [WRK, BROWSER, POST, RESPONSE, RESPONSE_10];
    for round in 0..60_000 {
        let mut buf = bases[round % bases.len()].to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(buf.len() + 1);
            let b = BYTES[rng.below(BYTES.len())];
            match rng.below(4) {
                0 if at < buf.len() => buf[at] = b,
                1 => buf.insert(at, b),
                2 if at < buf.len() => drop(buf.remove(at)),
                _ => buf.truncate(at),
            }
        }
        answered += agree(&buf);
    }
    assert!(answered > 10_000, "the scan answered only {answered} times");
}

/// xorshift64: the same cases every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
