//! Small HTTP/1.1 clients for tests: one-shot [`get`] over a fresh connection, and [`Client`]
//! holding one persistent connection for keepalive, pipelining and raw-bytes tests.

use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::wire::{find_header, invalid, BufStream, Head};

/// Default read/write timeout of test clients, so a broken proxy fails a test instead of
/// hanging it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Trailer fields of a chunked body.
    pub trailers: Vec<(String, String)>,
}

impl Response {
    /// First value of a header, name case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// Every value of a header, in order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as (lossy) UTF-8.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET path` over a fresh connection with `Connection: close`; panics on I/O errors.
pub fn get(addr: impl ToSocketAddrs, path: &str) -> Response {
    try_get(addr, path).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// `GET path` over a fresh connection with `Connection: close`.
pub fn try_get(addr: impl ToSocketAddrs, path: &str) -> io::Result<Response> {
    let mut c = Client::try_connect(addr)?;
    c.try_request("GET", path, &[("Connection", "close")], b"")
}

/// One client connection, reused across requests.
pub struct Client {
    conn: BufStream,
    host: String,
}

impl Client {
    /// Connects; panics on failure.
    pub fn connect(addr: impl ToSocketAddrs) -> Client {
        Client::try_connect(addr).unwrap_or_else(|e| panic!("connect: {e}"))
    }

    pub fn try_connect(addr: impl ToSocketAddrs) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        let host = stream.peer_addr()?.to_string();
        stream.set_read_timeout(Some(DEFAULT_TIMEOUT))?;
        stream.set_write_timeout(Some(DEFAULT_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Client {
            conn: BufStream::new(stream),
            host,
        })
    }

    /// Changes the read timeout (`None` blocks forever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) {
        self.conn
            .stream
            .set_read_timeout(timeout)
            .expect("set_read_timeout");
    }

    /// The underlying stream, e.g. to half-close it.
    pub fn stream(&self) -> &TcpStream {
        &self.conn.stream
    }

    /// Writes bytes as they are; panics on failure.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.try_send_raw(bytes)
            .unwrap_or_else(|e| panic!("send: {e}"));
    }

    pub fn try_send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.conn.write_all(bytes)
    }

    /// Reads the next final response (1xx other than 101 are skipped); panics on failure.
    pub fn read_response(&mut self) -> Response {
        self.try_read_response()
            .unwrap_or_else(|e| panic!("read response: {e}"))
    }

    pub fn try_read_response(&mut self) -> io::Result<Response> {
        self.read_response_inner(false)
    }

    /// Reads the response to a HEAD request (no body whatever the headers say).
    pub fn read_head_response(&mut self) -> Response {
        self.read_response_inner(true)
            .unwrap_or_else(|e| panic!("read response: {e}"))
    }

    fn read_response_inner(&mut self, head_request: bool) -> io::Result<Response> {
        loop {
            let raw = self.conn.read_head()?.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed before a response",
                )
            })?;
            let head = Head::parse(&raw)?;
            let mut parts = head.first_line.splitn(3, ' ');
            let version = parts.next().unwrap_or("").to_string();
            if !version.starts_with("HTTP/") {
                return Err(invalid(&format!("bad status line {:?}", head.first_line)));
            }
            let status: u16 = parts
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| invalid(&format!("bad status line {:?}", head.first_line)))?;
            let reason = parts.next().unwrap_or("").to_string();
            if (100..200).contains(&status) && status != 101 {
                continue;
            }
            let mut resp = Response {
                version,
                status,
                reason,
                headers: head.headers.clone(),
                body: Vec::new(),
                trailers: Vec::new(),
            };
            if head_request || status == 101 || status == 204 || status == 304 {
                return Ok(resp);
            }
            if head.is_chunked() {
                let (body, trailers) = self.conn.read_chunked()?;
                resp.body = body;
                resp.trailers = trailers;
            } else if let Some(n) = head.content_length()? {
                resp.body = self.conn.read_exact_body(n)?;
            } else {
                resp.body = self.conn.read_to_close()?;
            }
            return Ok(resp);
        }
    }

    /// Sends one request and reads its response; panics on failure. Adds `Host` unless
    /// given, and `Content-Length` when there is a body and no framing header was given.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        self.try_request(method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    pub fn try_request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Response> {
        let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let mut out = format!("{method} {path} HTTP/1.1\r\n");
        if !has("host") {
            out.push_str(&format!("Host: {}\r\n", self.host));
        }
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        if !has("content-length")
            && !has("transfer-encoding")
            && (!body.is_empty() || method == "POST" || method == "PUT")
        {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(body);
        self.try_send_raw(&bytes)?;
        self.read_response_inner(method == "HEAD")
    }

    /// Everything the server sends until it closes (buffered bytes first): the rest of a
    /// close-delimited exchange, or an upgraded connection's byte stream.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        self.conn
            .read_to_close()
            .unwrap_or_else(|e| panic!("read to close: {e}"))
    }

    /// Whether the server has closed the connection: waits up to `timeout` for EOF (or a
    /// reset). Data arriving instead stays buffered for the next `read_response`.
    pub fn peer_closed(&mut self, timeout: Duration) -> bool {
        let old = self.conn.stream.read_timeout().ok().flatten();
        let _ = self
            .conn
            .stream
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))));
        let closed = self.conn.peer_closed();
        let _ = self.conn.stream.set_read_timeout(old);
        closed
    }
}
