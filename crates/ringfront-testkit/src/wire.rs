//! HTTP/1.x framing shared by the test backend and the test client: a buffered stream that
//! reads one head at a time (keeping pipelined bytes), bodies by length, chunked (RFC 9112
//! §7.1) or until close, and a forgiving head parser. Test code, so clarity over speed.

use std::io::{self, Read, Write};
use std::net::TcpStream;

/// Header (or trailer) fields in order, as (name, value).
pub(crate) type Fields = Vec<(String, String)>;

/// A head split into its first line and its header fields, in order.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub first_line: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// Parses the bytes of a head (terminator included or not). Lines may end in CRLF or LF.
    pub fn parse(raw: &[u8]) -> io::Result<Head> {
        let text = String::from_utf8_lossy(raw);
        let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
        let first_line = lines
            .by_ref()
            .find(|l| !l.is_empty())
            .ok_or_else(|| invalid("empty head"))?
            .to_string();
        let mut headers = Vec::new();
        for line in lines {
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| invalid(&format!("header line without colon: {line:?}")))?;
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        Ok(Head {
            first_line,
            headers,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// True when a comma-separated header (Connection, Transfer-Encoding) has `token`.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// Chunked when `chunked` is the final transfer coding (RFC 9112 §6.3).
    pub fn is_chunked(&self) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
            .flat_map(|(_, v)| v.split(','))
            .last()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("chunked"))
    }

    pub fn content_length(&self) -> io::Result<Option<usize>> {
        match self.header("content-length") {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| invalid(&format!("bad Content-Length {v:?}"))),
        }
    }
}

pub(crate) fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

pub(crate) fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// A TCP stream with a read buffer; bytes past the current message stay buffered for the next.
pub(crate) struct BufStream {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl BufStream {
    pub fn new(stream: TcpStream) -> BufStream {
        BufStream {
            stream,
            buf: Vec::new(),
        }
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of stream).
    fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = loop {
            match self.stream.read(&mut chunk) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        self.buf.drain(..n).collect()
    }

    /// Bytes received but not consumed yet.
    pub fn take_buffered(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Reads one head, terminator included. `Ok(None)` when the peer closed before sending
    /// anything (an idle keepalive connection closing); leading empty lines are skipped.
    pub fn read_head(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            let skip = self
                .buf
                .iter()
                .take_while(|b| **b == b'\r' || **b == b'\n')
                .count();
            self.buf.drain(..skip);
            if let Some(end) = head_end(&self.buf) {
                return Ok(Some(self.take(end)));
            }
            if self.fill()? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed inside a head",
                    ))
                };
            }
        }
    }

    /// Reads exactly `n` body bytes. On a premature close the error carries no data; callers
    /// that want partial bodies use [`BufStream::read_exact_lossy`].
    pub fn read_exact_body(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "connection closed after {} of {n} body bytes",
                        self.buf.len()
                    ),
                ));
            }
        }
        Ok(self.take(n))
    }

    /// Reads up to `n` bytes, returning what arrived before an error or close.
    pub fn read_exact_lossy(&mut self, n: usize) -> (Vec<u8>, Option<io::Error>) {
        while self.buf.len() < n {
            match self.fill() {
                Ok(0) => {
                    let got = self.take_buffered();
                    return (got, Some(io::ErrorKind::UnexpectedEof.into()));
                }
                Ok(_) => {}
                Err(e) => return (self.take_buffered(), Some(e)),
            }
        }
        (self.take(n), None)
    }

    fn read_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line = self.take(pos + 1);
                let text = String::from_utf8_lossy(&line);
                return Ok(text.trim_end_matches(['\r', '\n']).to_string());
            }
            if self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed inside chunked framing",
                ));
            }
        }
    }

    /// Reads a chunked body; returns the decoded data and the trailer fields.
    pub fn read_chunked(&mut self) -> io::Result<(Vec<u8>, Fields)> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line()?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| invalid(&format!("bad chunk size line {line:?}")))?;
            if size == 0 {
                break;
            }
            body.extend(self.read_exact_body(size)?);
            if !self.read_line()?.is_empty() {
                return Err(invalid("chunk data not followed by CRLF"));
            }
        }
        let mut trailers = Vec::new();
        loop {
            let line = self.read_line()?;
            if line.is_empty() {
                return Ok((body, trailers));
            }
            if let Some((n, v)) = line.split_once(':') {
                trailers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
    }

    /// Reads until the peer closes (a close-delimited response body).
    pub fn read_to_close(&mut self) -> io::Result<Vec<u8>> {
        while self.fill()? > 0 {}
        Ok(self.take_buffered())
    }

    /// True when the peer has closed (or reset) the connection; reads that return data
    /// keep it buffered. Blocks up to the stream's read timeout when nothing has arrived.
    pub fn peer_closed(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        match self.fill() {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ),
        }
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }
}

/// Index just past the blank line ending a head (CRLFCRLF, or a bare LFLF).
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i] == b'\n' {
            if buf.get(i + 1) == Some(&b'\n') {
                return Some(i + 2);
            }
            if buf.get(i + 1) == Some(&b'\r') && buf.get(i + 2) == Some(&b'\n') {
                return Some(i + 3);
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_end_finds_crlf_and_lf_terminators() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nrest"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
    }

    #[test]
    fn head_parse_and_tokens() {
        let h = Head::parse(
            b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        )
        .unwrap();
        assert_eq!(h.first_line, "GET /x HTTP/1.1");
        assert_eq!(h.header("HOST"), Some("a"));
        assert!(h.has_token("connection", "upgrade"));
        assert!(h.is_chunked());
    }
}
