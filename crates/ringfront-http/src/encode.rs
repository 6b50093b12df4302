//! The one head encoder: every head ringfront writes — the request to an upstream, the
//! relayed response, its own answers and error pages, the 100-continue, health probes —
//! goes through `HeadWriter`, so the wire format (CRLF, `name: value`, status digits) is
//! written in one place.

use crate::span::Header;
use crate::status::{reason, wire_status};

/// Appends one head to a buffer: a start line, header fields, and the blank line.
pub struct HeadWriter<'a> {
    out: &'a mut Vec<u8>,
}

fn status_digits(status: u16) -> [u8; 3] {
    [
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ]
}

impl<'a> HeadWriter<'a> {
    /// `HTTP/1.1 STATUS REASON` for a response ringfront makes, with nginx's reason phrase.
    /// nginx's internal 494..=497 go out as 400; a status outside 100..=999 as 500.
    pub fn response(out: &'a mut Vec<u8>, status: u16) -> Self {
        let status = match wire_status(status) {
            s @ 100..=999 => s,
            _ => 500,
        };
        Self::relayed(out, status, reason(status).as_bytes())
    }

    /// `HTTP/1.1 STATUS REASON` with the reason phrase the upstream sent.
    pub fn relayed(out: &'a mut Vec<u8>, status: u16, reason: &[u8]) -> Self {
        let status = if (100..=999).contains(&status) {
            status
        } else {
            500
        };
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(&status_digits(status));
        out.push(b' ');
        out.extend_from_slice(reason);
        out.extend_from_slice(b"\r\n");
        HeadWriter { out }
    }

    /// `METHOD TARGET HTTP/1.x`; `target` appends the request target.
    pub fn request(
        out: &'a mut Vec<u8>,
        method: &[u8],
        target: impl FnOnce(&mut Vec<u8>),
        http10: bool,
    ) -> Self {
        out.extend_from_slice(method);
        out.push(b' ');
        target(out);
        out.extend_from_slice(if http10 {
            b" HTTP/1.0\r\n"
        } else {
            b" HTTP/1.1\r\n"
        });
        HeadWriter { out }
    }

    /// The buffer so far, this head's fields included (`$sent_http_*` reads them).
    pub fn written(&self) -> &[u8] {
        self.out
    }

    pub fn header(&mut self, name: &[u8], value: &[u8]) -> &mut Self {
        self.out.extend_from_slice(name);
        self.out.extend_from_slice(b": ");
        self.out.extend_from_slice(value);
        self.out.extend_from_slice(b"\r\n");
        self
    }

    /// A whole field line of the writer's own, `name: value\r\n` written out (a constant):
    /// one copy where `header` makes four.
    pub fn line(&mut self, line: &[u8]) -> &mut Self {
        debug_assert!(line.ends_with(b"\r\n") && line.contains(&b':'));
        self.out.extend_from_slice(line);
        self
    }

    /// A received field `f` of `buf`, passed on as `name: value`: its bytes as received in
    /// one copy when they are exactly that (one space after the colon, as nearly every
    /// sender writes them), else name and value apart.
    pub fn field(&mut self, buf: &[u8], f: &Header) -> &mut Self {
        match f.as_written(buf) {
            Some(line) => {
                self.out.extend_from_slice(line);
                self.out.extend_from_slice(b"\r\n");
                self
            }
            None => self.header(f.name.get(buf), f.value.get(buf)),
        }
    }

    pub fn header_num(&mut self, name: &[u8], n: u64) -> &mut Self {
        self.out.extend_from_slice(name);
        self.out.extend_from_slice(b": ");
        push_decimal(self.out, n);
        self.out.extend_from_slice(b"\r\n");
        self
    }

    /// A header whose value `value` appends; left out entirely when the value is empty
    /// (nginx's `proxy_set_header X ""`).
    pub fn header_with(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        let mark = self.out.len();
        self.out.extend_from_slice(name);
        self.out.extend_from_slice(b": ");
        let start = self.out.len();
        value(self.out);
        if self.out.len() == start {
            self.out.truncate(mark);
        } else {
            self.out.extend_from_slice(b"\r\n");
        }
        self
    }

    /// The blank line that ends the head; returns the head's length in the buffer's terms
    /// (everything appended so far).
    pub fn finish(self) -> usize {
        self.out.extend_from_slice(b"\r\n");
        self.out.len()
    }
}

/// Appends `n` in decimal (no allocation, no formatting machinery).
pub fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &[u8]) -> &str {
        std::str::from_utf8(v).unwrap()
    }

    #[test]
    fn a_received_field_goes_out_as_name_and_value_whether_copied_whole_or_not() {
        let buf = b"GET / HTTP/1.1\r\nHost: a\r\nX-One: b c\r\nX-Two:d\r\nX-Three:   e \r\nX-Four:\r\nX-Five: \r\n\r\n";
        let mut head = crate::RequestHead::new();
        head.parse(buf).unwrap().unwrap();
        let copied: Vec<bool> = head
            .headers
            .iter()
            .map(|f| f.as_written(buf).is_some())
            .collect();
        assert_eq!(copied, [true, true, false, false, false, false]);
        let (mut whole, mut apart) = (Vec::new(), Vec::new());
        for f in &head.headers {
            HeadWriter { out: &mut whole }.field(buf, f);
            HeadWriter { out: &mut apart }.header(f.name.get(buf), f.value.get(buf));
        }
        assert_eq!(text(&whole), text(&apart));
        assert_eq!(
            text(&whole),
            "Host: a\r\nX-One: b c\r\nX-Two: d\r\nX-Three: e\r\nX-Four: \r\nX-Five: \r\n"
        );
    }

    #[test]
    fn responses() {
        let mut out = Vec::new();
        let mut h = HeadWriter::response(&mut out, 502);
        h.header(b"Server", b"ringfront")
            .header_num(b"Content-Length", 157)
            .line(b"Connection: close\r\n");
        h.finish();
        assert_eq!(
            text(&out),
            "HTTP/1.1 502 Bad Gateway\r\nServer: ringfront\r\nContent-Length: 157\r\nConnection: close\r\n\r\n"
        );
        out.clear();
        HeadWriter::response(&mut out, 494).finish();
        assert_eq!(text(&out), "HTTP/1.1 400 Bad Request\r\n\r\n");
        out.clear();
        HeadWriter::response(&mut out, 0).finish();
        assert_eq!(text(&out), "HTTP/1.1 500 Internal Server Error\r\n\r\n");
        out.clear();
        HeadWriter::relayed(&mut out, 299, b"Fine Thanks").finish();
        assert_eq!(text(&out), "HTTP/1.1 299 Fine Thanks\r\n\r\n");
    }

    #[test]
    fn requests_and_dropped_empty_values() {
        let mut out = Vec::new();
        let mut h = HeadWriter::request(&mut out, b"GET", |o| o.extend_from_slice(b"/a?b"), true);
        h.header(b"Host", b"up")
            .header_with(b"X-Empty", |_| {})
            .header_with(b"X-Set", |o| o.extend_from_slice(b"1"))
            .header_num(b"Content-Length", 0);
        let n = h.finish();
        assert_eq!(
            text(&out),
            "GET /a?b HTTP/1.0\r\nHost: up\r\nX-Set: 1\r\nContent-Length: 0\r\n\r\n"
        );
        assert_eq!(n, out.len());
    }
}
