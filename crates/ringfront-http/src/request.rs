//! Request heads: httparse in place over the caller's buffer, then the framing and
//! connection rules a proxy must enforce so that no request is read two ways.

use crate::ascii::eq_ignore_case;
use httparse::Status;

use crate::fields::{trim_ows, ConnectionTokens};
use crate::framing::{is_exactly_chunked, BodyFraming, ContentLength, LengthError};
use crate::host::{is_valid_host, target_form, TargetForm};
use crate::known::Known;
use crate::plain_head::{self, Found, RequestLine};
use crate::span::{find, find_known, push_headers, Header, Span};

/// Header fields accepted in one request head; one more is [`RequestError::TooManyHeaders`].
pub const MAX_HEADERS: usize = 100;

/// Why a request head was refused; the proxy answers with [`RequestError::status`] and
/// closes the connection (nginx does the same for every one of these).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// 400: malformed head or ambiguous framing; the text names the rule.
    #[error("bad request: {0}")]
    BadRequest(&'static str),
    /// 505: an HTTP version other than 1.0 and 1.1.
    #[error("HTTP version not supported")]
    VersionNotSupported,
    /// 501: a `Transfer-Encoding` other than exactly `chunked`.
    #[error("not implemented: {0}")]
    NotImplemented(&'static str),
    /// 400 (as nginx's `max_headers`): more header lines than `names.max_lines` allows, or
    /// than [`MAX_HEADERS`].
    #[error("too many header fields")]
    TooManyHeaders,
    /// 405 (as nginx): `TRACE` and `CONNECT`.
    #[error("method not allowed")]
    MethodNotAllowed,
}

impl RequestError {
    /// Status code to answer with.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::BadRequest(_) | RequestError::TooManyHeaders => 400,
            RequestError::VersionNotSupported => 505,
            RequestError::NotImplemented(_) => 501,
            RequestError::MethodNotAllowed => 405,
        }
    }
}

/// Parsed request head; headers are offsets into the caller's read buffer (zero-copy).
/// Reused across requests: [`RequestHead::parse`] clears it first and keeps the header
/// `Vec`'s capacity. Fields are meaningful only after `parse` returned `Ok(Some(_))`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// Request method (case-sensitive token).
    pub method: Span,
    /// Request target as sent.
    pub target: Span,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// Every header field in order.
    pub headers: Vec<Header>,
    /// Bytes of the head including the final empty line.
    pub head_len: usize,
    /// `None`, `Length` or `Chunked`; never `UntilClose` for a request.
    pub framing: BodyFraming,
    /// The host: the authority of an absolute-form target (RFC 9112 3.2.2), else the value
    /// of the single `Host` header, if any.
    pub host: Option<Span>,
    /// HTTP/1.1: unless `Connection: close`; HTTP/1.0: only with `Connection: keep-alive`.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request (RFC 9110 10.1.1: ignored for 1.0).
    pub expect_continue: bool,
    /// An `Upgrade` header and the `upgrade` token in `Connection`.
    pub upgrade: bool,
    /// A `Host` value `ngx_http_validate_host` refuses: where its line ends. nginx stops
    /// reading the fields there and answers 400 from the listen's default server (the one
    /// an absolute target names), through its `error_page`; `headers` end with that line,
    /// `host` is `None` (an absolute target's), there is no body and no keepalive.
    pub invalid_host: Option<usize>,
    /// Which header lines are dropped (`underscores_in_headers`, `ignore_invalid_headers`),
    /// set by the caller; kept across [`RequestHead::parse`].
    pub names: crate::HeaderNames,
    /// The lines dropped by `names`, in order (nginx logs each at `info`).
    pub ignored: Vec<Header>,
}

impl RequestHead {
    /// An empty head, ready for [`RequestHead::parse`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse the head at the start of `buf`. `Ok(None)`: incomplete, read more and call
    /// again with the whole buffer. `Ok(Some(head_len))`: parsed, the body (if any)
    /// starts at `head_len`. `Err`: reject the request.
    pub fn parse(&mut self, buf: &[u8]) -> Result<Option<usize>, RequestError> {
        self.parse_with(buf, true)
    }

    /// [`RequestHead::parse`] of the lines of a head that never came whole (made whole by
    /// the caller), for the log of its refusal: an HTTP/1.1 one without `Host` is no error
    /// (the `Host` line may not have come yet).
    pub fn parse_unfinished(&mut self, buf: &[u8]) -> Result<Option<usize>, RequestError> {
        self.parse_with(buf, false)
    }

    /// Whether `buf` starts with a whole head that is well formed (request line and field
    /// lines), whatever its fields mean.
    pub fn well_formed(buf: &[u8]) -> bool {
        let mut raw = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut []);
        matches!(
            req.parse_with_uninit_headers(buf, &mut raw),
            Ok(Status::Complete(_))
        )
    }

    fn parse_with(&mut self, buf: &[u8], need_host: bool) -> Result<Option<usize>, RequestError> {
        self.clear();
        let found = plain_head::or_else(buf, &mut self.headers, plain_head::request, by_httparse)?;
        let Some((line, head_len)) = found else {
            return Ok(None);
        };
        self.method = line.method;
        self.target = line.target;
        self.minor_version = line.minor;
        let names = self.names;
        if self.headers.len() > names.max_lines {
            return Err(RequestError::TooManyHeaders);
        }
        // Nearly every head has no invalid name: looked for first, so `retain` (which moves
        // every entry) runs only when one is there.
        if names.ignore_invalid && self.headers.iter().any(|h| names.drops(h.name.get(buf))) {
            let ignored = &mut self.ignored;
            self.headers.retain(|h| {
                let drop = names.drops(h.name.get(buf));
                if drop {
                    ignored.push(*h);
                }
                !drop
            });
        }
        self.head_len = head_len;
        self.interpret_headers(buf, need_host)?;
        Ok(Some(head_len))
    }

    /// The method bytes.
    pub fn method<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.method.get(buf)
    }

    /// The request-target bytes.
    pub fn target<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.target.get(buf)
    }

    /// Value of the first header called `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
        find(&self.headers, buf, name)
    }

    /// Value of the first header of the kind `known` (a byte compare a field).
    pub fn known<'a>(&self, buf: &'a [u8], known: Known) -> Option<&'a [u8]> {
        find_known(&self.headers, buf, known)
    }

    /// Is the method `HEAD`? (Methods are case-sensitive, RFC 9110 9.1.)
    pub fn is_head(&self, buf: &[u8]) -> bool {
        self.method(buf) == b"HEAD"
    }

    fn clear(&mut self) {
        let names = self.names;
        let mut headers = std::mem::take(&mut self.headers);
        headers.clear();
        *self = RequestHead::default();
        self.names = names;
        self.headers = headers;
    }

    fn interpret_headers(&mut self, buf: &[u8], need_host: bool) -> Result<(), RequestError> {
        use RequestError::{BadRequest, NotImplemented};
        // nginx's request-line parser refuses `*`, authority-form and bad authorities.
        let form = target_form(self.target.get(buf)).ok_or(BadRequest("invalid request target"))?;
        let mut length = ContentLength::default();
        let mut transfer_encoding: Option<&[u8]> = None;
        let mut connection = ConnectionTokens::default();
        let mut upgrade_header = false;
        let mut expect_continue = false;
        let mut unique_seen = 0u16;
        let mut invalid_host = None;
        for (i, h) in self.headers.iter().enumerate() {
            let name = h.name.get(buf);
            let value = h.value.get(buf);
            let bit = unique_bit(name);
            if bit != 0 {
                if unique_seen & bit != 0 {
                    return Err(BadRequest("client sent duplicate header line"));
                }
                unique_seen |= bit;
            }
            match h.known {
                Known::ContentLength => {
                    // RFC 9110 8.6 lets a recipient reject repeated Content-Length; nginx 1.22
                    // refuses any repeat ("client sent duplicate header line"), identical or
                    // not.
                    if length.0.is_some() {
                        return Err(BadRequest("duplicate Content-Length header"));
                    }
                    length.add(value).map_err(|e| match e {
                        LengthError::Invalid => BadRequest("invalid Content-Length"),
                        LengthError::Conflict => BadRequest("conflicting Content-Length headers"),
                    })?;
                }
                Known::TransferEncoding => {
                    if transfer_encoding.is_some() {
                        return Err(BadRequest("duplicate Transfer-Encoding header"));
                    }
                    // httparse drops the whitespace around a value, tabs included; nginx
                    // keeps a tab as part of the value and answers 501 to `\tchunked`.
                    if has_tab_around(buf, h) {
                        return Err(NotImplemented("tab around Transfer-Encoding value"));
                    }
                    transfer_encoding = Some(value);
                }
                Known::Host => {
                    if self.host.is_some() {
                        return Err(BadRequest("duplicate Host header"));
                    }
                    if !is_valid_host(value) {
                        invalid_host = Some(i);
                        break;
                    }
                    self.host = Some(h.value);
                }
                Known::Connection => connection.add(value),
                Known::Expect => {
                    expect_continue |= eq_ignore_case(trim_ows(value), b"100-continue");
                }
                Known::Upgrade => upgrade_header = true,
                _ => {}
            }
        }
        if let Some(i) = invalid_host {
            let end = self.headers[i].value.end as usize;
            let rest = buf.get(end..).unwrap_or_default();
            let line_end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |n| n + 1);
            self.headers.truncate(i + 1);
            self.invalid_host = Some(end + line_end);
            // An absolute target's host was read (and chose the server) before the fields.
            if let TargetForm::Absolute { authority, .. } = form {
                self.host = Span::within(buf, authority);
            }
            return Ok(());
        }
        let http11 = self.minor_version >= 1;
        if http11 && self.host.is_none() && need_host {
            return Err(BadRequest("missing Host header"));
        }
        // RFC 9112 3.2.2: with an absolute-form target the Host header is ignored and the
        // target's authority is the host (nginx does the same for `$host` and routing).
        if let TargetForm::Absolute { authority, .. } = form {
            self.host = Span::within(buf, authority);
        }
        self.framing = match (transfer_encoding, length.0) {
            // RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means faulty framing.
            (Some(_), _) if !http11 => {
                return Err(BadRequest("Transfer-Encoding in HTTP/1.0 request"))
            }
            (Some(te), _) if !is_exactly_chunked(te) => {
                return Err(NotImplemented("unknown Transfer-Encoding"))
            }
            (Some(_), Some(_)) => {
                return Err(BadRequest("both Content-Length and Transfer-Encoding"))
            }
            (Some(_), None) => BodyFraming::Chunked,
            (None, Some(n)) => BodyFraming::Length(n),
            (None, None) => BodyFraming::None,
        };
        self.keep_alive = if http11 {
            !connection.close
        } else {
            connection.keep_alive && !connection.close
        };
        self.expect_continue = http11 && expect_continue;
        self.upgrade = upgrade_header && connection.upgrade;
        // nginx refuses these after reading the head ("client sent TRACE method").
        if matches!(self.method.get(buf), b"TRACE" | b"CONNECT") {
            return Err(RequestError::MethodNotAllowed);
        }
        Ok(())
    }
}

/// Is there a tab between the header's colon and its value, or after the value on its line?
fn has_tab_around(buf: &[u8], h: &Header) -> bool {
    let (name_end, start, end) = (
        h.name.end as usize,
        h.value.start as usize,
        h.value.end as usize,
    );
    let before = buf.get(name_end..start).unwrap_or_default();
    let after = buf.get(end..).unwrap_or_default();
    let line_rest = after
        .iter()
        .position(|b| *b == b'\r' || *b == b'\n')
        .map_or(after, |i| after.get(..i).unwrap_or_default());
    before.contains(&b'\t') || line_rest.contains(&b'\t')
}

/// httparse's parse of a request head that is not plain (plain_head.rs): its request line,
/// the fields in `out`, and the head's length. `None`: incomplete.
fn by_httparse(buf: &[u8], out: &mut Vec<Header>) -> Result<Found<RequestLine>, RequestError> {
    // Left uninitialised: httparse writes only the fields it finds (a 3 KiB array
    // filled on every parse was a tenth of a small request's instructions).
    let mut raw = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, &mut raw) {
        Ok(Status::Complete(n)) => n,
        Ok(Status::Partial) => return Ok(None),
        Err(e) => return Err(parse_error(buf, e)),
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(RequestError::BadRequest("malformed request line"));
    };
    const TOO_LARGE: RequestError = RequestError::BadRequest("request head too large");
    // nginx 1.22 (`ngx_http_parse_request_line`) accepts only `A-Z`, `_` and `-` in a
    // method; a token it refuses must not reach a backend through us.
    if !method
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
    {
        return Err(RequestError::BadRequest("invalid method"));
    }
    let line = RequestLine {
        method: Span::within(buf, method.as_bytes()).ok_or(TOO_LARGE)?,
        target: Span::within(buf, target.as_bytes()).ok_or(TOO_LARGE)?,
        minor,
    };
    push_headers(buf, req.headers, out).ok_or(TOO_LARGE)?;
    Ok(Some((line, head_len)))
}

fn parse_error(buf: &[u8], e: httparse::Error) -> RequestError {
    use RequestError::BadRequest;
    match e {
        httparse::Error::TooManyHeaders => RequestError::TooManyHeaders,
        httparse::Error::Version => version_error(buf),
        httparse::Error::HeaderName => BadRequest("invalid header name"),
        httparse::Error::HeaderValue => BadRequest("invalid header value"),
        httparse::Error::NewLine => BadRequest("invalid line ending"),
        httparse::Error::Token | httparse::Error::Status => BadRequest("malformed request line"),
    }
}

/// httparse only knows `HTTP/1.0` and `HTTP/1.1`. Tell an HTTP/2 preface (400) and a
/// well-formed other version (505, like nginx for major > 1) from garbage (400).
///
/// httparse reads `method SP target SP version` (single spaces) and fails at the first
/// version byte that cannot continue `HTTP/1.0` or `HTTP/1.1`; later bytes may not have
/// arrived yet. The answer is decided by the version bytes up to that first deviating
/// byte alone, so it never depends on how the reads were cut (`HTTP/2` then `x` and
/// `HTTP/2x` at once both give 505): a digit where the `1` of the major, the `.` or
/// the minor should be is another version (505), any other byte is garbage (400).
fn version_error(buf: &[u8]) -> RequestError {
    let start = buf
        .iter()
        .position(|b| *b != b'\r' && *b != b'\n')
        .unwrap_or(buf.len());
    let rest = buf.get(start..).unwrap_or_default();
    let line_end = rest
        .iter()
        .position(|b| *b == b'\r' || *b == b'\n')
        .unwrap_or(rest.len());
    let line = rest.get(..line_end).unwrap_or_default();
    if line.starts_with(b"PRI * HTTP/2") {
        return RequestError::BadRequest("HTTP/2 connection preface");
    }
    let version = line.splitn(3, |b| *b == b' ').nth(2).unwrap_or_default();
    const KNOWN: &[u8] = b"HTTP/1.";
    let deviation = version
        .iter()
        .zip(KNOWN)
        .position(|(got, want)| got != want)
        .or((version.len() > KNOWN.len()).then_some(KNOWN.len()));
    match deviation.map(|at| (at, version.get(at).copied().unwrap_or_default())) {
        // `HTTP/1.0` or `HTTP/1.1` (or a prefix): the error was elsewhere on the line.
        None | Some((7, b'0' | b'1')) => RequestError::BadRequest("malformed request line"),
        // `HTTP/0`, `HTTP/2`..`HTTP/9`, `HTTP/1N` (major >= 10), `HTTP/1.2`..`HTTP/1.9`.
        Some((5..=7, digit)) if digit.is_ascii_digit() => RequestError::VersionNotSupported,
        Some(_) => RequestError::BadRequest("invalid HTTP version"),
    }
}

/// The fields nginx 1.22 takes once (`ngx_http_process_unique_header_line`, besides `Host`,
/// `Content-Length` and `Transfer-Encoding`, checked with their values): a repeat is a 400.
/// One bit each; 0 for any other name (sorted out by length first, as this runs per field).
fn unique_bit(name: &[u8]) -> u16 {
    const UNIQUE: [&[u8]; 8] = [
        b"if-modified-since",
        b"if-unmodified-since",
        b"if-match",
        b"if-none-match",
        b"content-range",
        b"if-range",
        b"expect",
        b"authorization",
    ];
    if !matches!(name.len(), 6 | 8 | 13 | 17 | 19) {
        return 0;
    }
    UNIQUE
        .iter()
        .position(|u| eq_ignore_case(name, u))
        .map_or(0, |i| 1 << i)
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;

impl Drop for RequestHead {
    /// Its header list is kept for the thread's next head (spare_headers.rs).
    fn drop(&mut self) {
        crate::spare_headers::give(std::mem::take(&mut self.headers));
    }
}
