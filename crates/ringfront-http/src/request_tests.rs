//! Unit tests for request head parsing: valid heads, every framing rule, partial input.

use super::*;

fn parse(raw: &[u8]) -> Result<Option<(RequestHead, usize)>, RequestError> {
    let mut head = RequestHead::new();
    Ok(head.parse(raw)?.map(|n| (head, n)))
}

fn ok(raw: &[u8]) -> RequestHead {
    match parse(raw) {
        Ok(Some((head, n))) => {
            assert_eq!(n, head.head_len);
            head
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
    }
}

fn err(raw: &[u8]) -> RequestError {
    match parse(raw) {
        Err(e) => e,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
    }
}

#[test]
fn simple_get() {
    let raw = b"GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\n\r\nBODY";
    let head = ok(raw);
    assert_eq!(head.method(raw), b"GET");
    assert_eq!(head.target(raw), b"/a?b=c");
    assert_eq!(head.minor_version, 1);
    assert_eq!(head.head_len, raw.len() - 4);
    assert_eq!(head.headers.len(), 2);
    assert_eq!(head.host.map(|h| h.get(raw)), Some(&b"example.com"[..]));
    assert_eq!(head.header(raw, "x-a"), Some(&b"1"[..]));
    assert_eq!(head.header(raw, "HOST"), Some(&b"example.com"[..]));
    assert_eq!(head.header(raw, "nope"), None);
    assert_eq!(head.framing, BodyFraming::None);
    assert!(head.keep_alive);
    assert!(!head.expect_continue && !head.upgrade);
    assert!(!head.is_head(raw));
}

#[test]
fn header_values_are_trimmed() {
    let raw = b"GET / HTTP/1.1\r\nHost:   a.b  \r\nX:\t v \t\r\n\r\n";
    let head = ok(raw);
    assert_eq!(head.host.map(|h| h.get(raw)), Some(&b"a.b"[..]));
    assert_eq!(head.header(raw, "x"), Some(&b"v"[..]));
}

#[test]
fn partial_at_every_split_point() {
    let raw = b"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n";
    for i in 0..raw.len() {
        assert_eq!(parse(&raw[..i]), Ok(None), "split at {i}");
    }
    assert_eq!(ok(raw).framing, BodyFraming::Length(5));
}

#[test]
fn reuse_clears_previous_request() {
    let mut head = RequestHead::new();
    let a = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
    assert!(head.parse(a).unwrap().is_some());
    assert!(head.expect_continue);
    let b = b"GET / HTTP/1.0\r\n\r\n";
    assert_eq!(head.parse(b), Ok(Some(b.len())));
    assert_eq!(head.headers.len(), 0);
    assert_eq!(head.framing, BodyFraming::None);
    assert_eq!(head.host, None);
    assert!(!head.expect_continue && !head.keep_alive);
}

#[test]
fn head_method_and_leading_empty_lines() {
    let raw = b"\r\n\r\nHEAD / HTTP/1.1\r\nHost: h\r\n\r\n";
    let head = ok(raw);
    assert!(head.is_head(raw));
    assert_eq!(head.head_len, raw.len());
    for bad in [&b"head"[..], b"GET1", b"g"] {
        let mut raw = bad.to_vec();
        raw.extend_from_slice(b" / HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            err(&raw),
            RequestError::BadRequest("invalid method"),
            "{bad:?}"
        );
    }
    assert_eq!(err(b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n").status(), 400);
    assert_eq!(
        ok(b"M-SEARCH_X / HTTP/1.1\r\nHost: h\r\n\r\n").minor_version,
        1
    );
}

#[test]
fn content_length_framing() {
    assert_eq!(
        ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n").framing,
        BodyFraming::Length(0)
    );
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nHost: h\r\ncontent-length: 12\r\nContent-Length: 12\r\n\r\n"),
        RequestError::BadRequest("duplicate Content-Length header")
    );
}

#[test]
fn absolute_form_authority_is_the_host() {
    let raw = b"GET HTTP://Abs.Example:8080/p?q HTTP/1.1\r\nHost: other\r\n\r\n";
    let head = ok(raw);
    assert_eq!(
        head.host.map(|h| h.get(raw)),
        Some(&b"Abs.Example:8080"[..])
    );
    let raw = b"GET http://abs?q HTTP/1.1\r\nHost: other\r\n\r\n";
    assert_eq!(ok(raw).host.map(|h| h.get(raw)), Some(&b"abs"[..]));
    // As nginx 1.22 (checked against it): 400 for each.
    for bad in [
        &b"http://u@h/"[..],
        b"http:///p",
        b"http://a..b/",
        b"http://./",
        b"http://[v6/",
        b"http://host:1:2/",
        b"http://a:8x/h",
        b"*",
        b"foo",
    ] {
        let mut raw = b"GET ".to_vec();
        raw.extend_from_slice(bad);
        raw.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            err(&raw),
            RequestError::BadRequest("invalid request target"),
            "{bad:?}"
        );
    }
    // Host values nginx's validate_host refuses: the head is read up to that line, then
    // nginx's 400 (through its error_page); the fields after it are not read.
    for bad in [&b"."[..], b".:80"] {
        let mut raw = b"GET / HTTP/1.1\r\nA: 1\r\nHost: ".to_vec();
        raw.extend_from_slice(bad);
        let line_end = raw.len() + 2;
        raw.extend_from_slice(b"\r\nContent-Length: x\r\nB: 2\r\n\r\n");
        let head = ok(&raw);
        assert_eq!(head.invalid_host, Some(line_end), "{bad:?}");
        assert_eq!(head.host, None);
        assert_eq!(head.headers.len(), 2);
        assert_eq!(head.header(&raw, "b"), None);
        assert_eq!(head.framing, BodyFraming::None);
        assert!(!head.keep_alive);
    }
    assert_eq!(
        ok(b"GET / HTTP/1.1\r\nHost: a.b\r\n\r\n").invalid_host,
        None
    );
    // An absolute target's host stays the request's host.
    let raw = b"GET http://a.b/ HTTP/1.1\r\nHost: .\r\n\r\n";
    let head = ok(raw);
    assert!(head.invalid_host.is_some());
    assert_eq!(head.host.map(|h| h.get(raw)), Some(&b"a.b"[..]));
    // TRACE and CONNECT: 405 once the head is read; CONNECT's authority-form target is a
    // 400 first, as nginx's request-line parser refuses it.
    assert_eq!(
        err(b"TRACE / HTTP/1.1\r\nHost: h\r\n\r\n"),
        RequestError::MethodNotAllowed
    );
    assert_eq!(RequestError::MethodNotAllowed.status(), 405);
    assert_eq!(
        err(b"CONNECT / HTTP/1.1\r\nHost: h\r\n\r\n"),
        RequestError::MethodNotAllowed
    );
    assert_eq!(
        err(b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"),
        RequestError::BadRequest("invalid request target")
    );
    // Still HTTP/1.1's rule: no Host header, 400.
    assert_eq!(
        err(b"GET http://abs/ HTTP/1.1\r\n\r\n"),
        RequestError::BadRequest("missing Host header")
    );
}

#[test]
fn content_length_rejections() {
    for cl in [
        &b"+5"[..],
        b"-1",
        b"0x5",
        b"5 5",
        b"5, 5",
        b"5,6",
        b"",
        b"abc",
        b"18446744073709551616",
        b"9223372036854775808",
    ] {
        let mut raw = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: ".to_vec();
        raw.extend_from_slice(cl);
        raw.extend_from_slice(b"\r\n\r\n");
        assert_eq!(err(&raw).status(), 400, "{:?}", String::from_utf8_lossy(cl));
    }
    let conflict = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
    assert_eq!(
        err(conflict),
        RequestError::BadRequest("duplicate Content-Length header")
    );
}

#[test]
fn chunked_framing() {
    let head = ok(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:  Chunked \r\n\r\n");
    assert_eq!(head.framing, BodyFraming::Chunked);
}

#[test]
fn transfer_encoding_rejections() {
    for te in [
        &b"chunked, identity"[..],
        b"xchunked",
        b"gzip, chunked",
        b"identity",
        b"chunked;q=1",
        b"",
        b"\tchunked",
        b"chunked\t",
        b" \t chunked",
    ] {
        let mut raw = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ".to_vec();
        raw.extend_from_slice(te);
        raw.extend_from_slice(b"\r\n\r\n");
        let e = err(&raw);
        assert!(
            matches!(e, RequestError::NotImplemented(_)),
            "{te:?}: {e:?}"
        );
        assert_eq!(e.status(), 501);
    }
    let both =
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(err(both).status(), 400);
    let both_rev =
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
    assert_eq!(err(both_rev).status(), 400);
    let two = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(
        err(two),
        RequestError::BadRequest("duplicate Transfer-Encoding header")
    );
    let http10 = b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(
        err(http10),
        RequestError::BadRequest("Transfer-Encoding in HTTP/1.0 request")
    );
}

#[test]
fn host_rules() {
    assert_eq!(
        err(b"GET / HTTP/1.1\r\n\r\n"),
        RequestError::BadRequest("missing Host header")
    );
    assert_eq!(
        err(b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"),
        RequestError::BadRequest("duplicate Host header")
    );
    for bad in [&b""[..], b"a/b", b"a\\b", b"a..b", b"a b"] {
        let mut raw = b"GET / HTTP/1.1\r\nHost: ".to_vec();
        raw.extend_from_slice(bad);
        raw.extend_from_slice(b"\r\n\r\n");
        assert!(ok(&raw).invalid_host.is_some(), "{bad:?}");
    }
    assert_eq!(ok(b"GET / HTTP/1.0\r\n\r\n").host, None);
    let raw = b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n";
    assert_eq!(ok(raw).host.map(|h| h.get(raw)), Some(&b"[::1]:8080"[..]));
}

#[test]
fn keep_alive_rules() {
    assert!(ok(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n").keep_alive);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n").keep_alive);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, close\r\n\r\n").keep_alive);
    assert!(!ok(b"GET / HTTP/1.0\r\n\r\n").keep_alive);
    assert!(ok(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
    assert!(
        !ok(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n").keep_alive
    );
}

#[test]
fn expect_and_upgrade() {
    assert!(ok(b"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n\r\n").expect_continue);
    assert!(!ok(b"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n").expect_continue);
    assert!(!ok(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").expect_continue);
    let ws = b"GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\r\n";
    let head = ok(ws);
    assert!(head.upgrade && head.keep_alive);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n").upgrade);
    assert!(!ok(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n\r\n").upgrade);
}

#[test]
fn versions() {
    assert_eq!(ok(b"GET / HTTP/1.0\r\n\r\n").minor_version, 0);
    assert_eq!(
        err(b"GET / HTTP/2.0\r\nHost: h\r\n\r\n"),
        RequestError::VersionNotSupported
    );
    assert_eq!(
        err(b"GET / HTTP/3.0\r\n"),
        RequestError::VersionNotSupported
    );
    assert_eq!(err(b"GET / HTTP/2"), RequestError::VersionNotSupported);
    assert_eq!(
        err(b"GET / HTTP/1.2\r\n\r\n"),
        RequestError::VersionNotSupported
    );
    assert_eq!(
        err(b"GET / HTTP/0.9\r\n\r\n"),
        RequestError::VersionNotSupported
    );
    assert_eq!(err(b"GET / HTTP/2.0\r\n").status(), 505);
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    assert_eq!(
        err(preface),
        RequestError::BadRequest("HTTP/2 connection preface")
    );
    assert_eq!(err(&preface[..12]).status(), 400);
    assert_eq!(err(b"GET / http/1.1\r\n\r\n").status(), 400);
    assert_eq!(err(b"GET / FOO/1.1\r\n\r\n").status(), 400);
    assert_eq!(err(b"GET /\r\n\r\n").status(), 400);
    assert_eq!(err(b"GET /  HTTP/1.1\r\nHost: h\r\n\r\n").status(), 400);
}

/// Found by the `request_head` fuzz target: a version error must not depend on the bytes
/// after the first one httparse refuses, or a 505 read in one piece is a 400 in two.
#[test]
fn version_errors_do_not_depend_on_read_size() {
    let cases: [(&[u8], u16); 8] = [
        (
            b"GET http://example.com/abs HTTP/0.1M\nHost: example.com\r\n\x10\0",
            505,
        ),
        (b"GET / HTTP/2x\r\nHost: h\r\n\r\n", 505),
        (b"GET / HTTP/12.5\r\n\r\n", 505),
        (b"GET / HTTP/1.2\r\n\r\n", 505),
        (b"GET / HTTP/1x1\r\n\r\n", 400),
        (b"GET / HTTP/1.x\r\n\r\n", 400),
        (b"GET /  HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        (b"GET / HTTX/2.0\r\n\r\n", 400),
    ];
    for (raw, status) in cases {
        let whole = err(raw);
        assert_eq!(whole.status(), status, "{:?}", String::from_utf8_lossy(raw));
        for k in 0..raw.len() {
            match parse(&raw[..k]) {
                Ok(None) => {}
                Err(e) => assert_eq!(e, whole, "{:?} cut at {k}", String::from_utf8_lossy(raw)),
                other => panic!("{other:?}"),
            }
        }
    }
}

#[test]
fn malformed_heads() {
    for raw in [
        &b"GET / HTTP/1.1\r\nHost : h\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
        b"GET / HTTP/1.1\r\nHo\x00st: h\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\x00\r\n\r\n",
        b"GET / HTTP/1.1\r\n: empty\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n",
        b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n",
        b" GET / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    ] {
        assert_eq!(err(raw).status(), 400, "{:?}", String::from_utf8_lossy(raw));
    }
}

#[test]
fn header_limit() {
    let mut raw = b"GET / HTTP/1.1\r\nHost: h\r\n".to_vec();
    for i in 0..MAX_HEADERS - 1 {
        raw.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    let mut full = raw.clone();
    full.extend_from_slice(b"\r\n");
    assert_eq!(ok(&full).headers.len(), MAX_HEADERS);
    raw.extend_from_slice(b"X-Last: v\r\n\r\n");
    assert_eq!(err(&raw), RequestError::TooManyHeaders);
}

/// `max_headers N`: N header lines pass, one more is a 400, invalid lines counted too.
#[test]
fn max_headers_counts_every_line() {
    let head = |n: usize| {
        let mut raw = b"GET / HTTP/1.0\r\nHost: h\r\n".to_vec();
        for i in 1..n {
            raw.extend_from_slice(format!("X.Blah: {i}\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        raw
    };
    let mut h = RequestHead::new();
    h.names.max_lines = 5;
    assert!(matches!(h.parse(&head(5)), Ok(Some(_))));
    assert_eq!(h.headers.len(), 1, "the invalid names dropped");
    assert_eq!(h.parse(&head(6)), Err(RequestError::TooManyHeaders));
    h.names.max_lines = 0;
    assert_eq!(h.parse(&head(1)), Err(RequestError::TooManyHeaders));
}

#[test]
fn error_statuses() {
    assert_eq!(RequestError::TooManyHeaders.status(), 400);
    assert_eq!(RequestError::BadRequest("x").status(), 400);
    assert_eq!(RequestError::VersionNotSupported.status(), 505);
    assert_eq!(RequestError::NotImplemented("x").status(), 501);
    assert_eq!(RequestError::BadRequest("x").to_string(), "bad request: x");
}

#[test]
fn garbage_never_panics() {
    let mut head = RequestHead::new();
    let mut seed: u32 = 0x1234_5678;
    let alphabet = b"GET /HTP1.0\r\n: ,chunkedContent-LgthTrasfr\x00\xff\tHost";
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

#[test]
fn fields_nginx_takes_once() {
    for name in [
        "If-Modified-Since",
        "If-Unmodified-Since",
        "If-Match",
        "If-None-Match",
        "Content-Range",
        "If-Range",
        "Expect",
        "Authorization",
    ] {
        let raw = format!(
            "GET / HTTP/1.1\r\nHost: a\r\n{name}: x\r\n{}: x\r\n\r\n",
            name.to_lowercase()
        );
        assert_eq!(
            err(raw.as_bytes()),
            RequestError::BadRequest("client sent duplicate header line"),
            "{name}"
        );
        let once = format!("GET / HTTP/1.1\r\nHost: a\r\n{name}: x\r\nX-Other: y\r\n\r\n");
        ok(once.as_bytes());
    }
    // Others repeat freely.
    ok(b"GET / HTTP/1.1\r\nHost: a\r\nAccept: a\r\nAccept: b\r\nUser-Agent: a\r\nUser-Agent: b\r\n\r\n");
}
