//! Upstream response heads: httparse in place, then the framing rules (RFC 9112 6.3).
//! Any refusal is nginx's `invalid_header`: the proxy answers 502 or tries the next peer.

use httparse::Status;

use crate::fields::ConnectionTokens;
use crate::framing::{BodyFraming, ContentLength, LengthError, TransferCodings};
use crate::known::Known;
use crate::plain_head::{self, Found, StatusLine};
use crate::request::MAX_HEADERS;
use crate::span::{find, find_known, push_headers, Header, Span};

/// Why an upstream response head was refused (nginx: "upstream sent invalid header").
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ResponseError {
    /// Malformed status line (version, status code).
    #[error("upstream sent invalid status line: {0}")]
    StatusLine(&'static str),
    /// Malformed header field or line ending.
    #[error("upstream sent invalid header: {0}")]
    Header(&'static str),
    /// More than [`MAX_HEADERS`] header fields.
    #[error("upstream sent too many header fields")]
    TooManyHeaders,
    /// `Content-Length` that is not plain digits or is too large.
    #[error("upstream sent invalid Content-Length")]
    InvalidContentLength,
    /// Two `Content-Length` headers, even with the same value (nginx 1.23's
    /// `upstream sent duplicate header line`): a response is never relayed with one.
    #[error("upstream sent duplicate Content-Length headers")]
    ConflictingContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` (nginx refuses these too).
    #[error("upstream sent both Content-Length and Transfer-Encoding")]
    LengthAndTransferEncoding,
    /// `Transfer-Encoding` whose final coding is not (only once) `chunked`, or any
    /// `Transfer-Encoding` in an HTTP/1.0 response (RFC 9112 6.1: faulty framing).
    #[error("upstream sent unsupported Transfer-Encoding")]
    UnsupportedTransferEncoding,
}

/// Parsed response head; headers are offsets into the caller's buffer (zero-copy).
/// Reused across responses: [`ResponseHead::parse`] clears it first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHead {
    /// Status code, 100..=999.
    pub status: u16,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// Reason phrase (may be empty).
    pub reason: Span,
    /// Every header field in order.
    pub headers: Vec<Header>,
    /// Bytes of the head including the final empty line.
    pub head_len: usize,
    /// Value of the `Content-Length` header(s), if any.
    pub content_length: Option<u64>,
    /// Final transfer coding is `chunked`.
    pub chunked: bool,
    /// `Connection: close`, or HTTP/1.0 without `Connection: keep-alive`.
    pub connection_close: bool,
    /// An `Upgrade` header and the `upgrade` token in `Connection` (for 101 answers).
    pub upgrade: bool,
}

impl ResponseHead {
    /// An empty head, ready for [`ResponseHead::parse`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse the head at the start of `buf`. `Ok(None)`: incomplete, read more.
    /// `Ok(Some(head_len))`: parsed. `Err`: invalid header (nginx's `invalid_header`).
    pub fn parse(&mut self, buf: &[u8]) -> Result<Option<usize>, ResponseError> {
        self.clear();
        let found = plain_head::or_else(buf, &mut self.headers, plain_head::response, by_httparse)?;
        let Some((line, head_len)) = found else {
            return Ok(None);
        };
        if !(100..=999).contains(&line.code) {
            return Err(ResponseError::StatusLine("status code below 100"));
        }
        self.status = line.code;
        self.minor_version = line.minor;
        self.reason = line.reason;
        self.head_len = head_len;
        self.interpret_headers(buf)?;
        Ok(Some(head_len))
    }

    /// Value of the first header called `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
        find(&self.headers, buf, name)
    }

    /// Value of the first header of the kind `known` (a byte compare a field).
    pub fn known<'a>(&self, buf: &'a [u8], known: Known) -> Option<&'a [u8]> {
        find_known(&self.headers, buf, known)
    }

    /// Body framing per RFC 9112 6.3 given whether the request was HEAD:
    /// 1xx/204/304/HEAD -> None; chunked -> Chunked; Content-Length -> Length;
    /// else UntilClose.
    pub fn framing(&self, request_was_head: bool) -> BodyFraming {
        if request_was_head
            || (100..200).contains(&self.status)
            || self.status == 204
            || self.status == 304
        {
            BodyFraming::None
        } else if self.chunked {
            BodyFraming::Chunked
        } else if let Some(n) = self.content_length {
            BodyFraming::Length(n)
        } else {
            BodyFraming::UntilClose
        }
    }

    fn clear(&mut self) {
        let mut headers = std::mem::take(&mut self.headers);
        headers.clear();
        *self = ResponseHead {
            headers,
            ..ResponseHead::default()
        };
    }

    fn interpret_headers(&mut self, buf: &[u8]) -> Result<(), ResponseError> {
        let mut length = ContentLength::default();
        let mut codings = TransferCodings::default();
        let mut connection = ConnectionTokens::default();
        let mut upgrade_header = false;
        for h in &self.headers {
            let value = h.value.get(buf);
            match h.known {
                Known::ContentLength => {
                    if length.0.is_some() {
                        return Err(ResponseError::ConflictingContentLength);
                    }
                    length.add(value).map_err(|e| match e {
                        LengthError::Invalid => ResponseError::InvalidContentLength,
                        LengthError::Conflict => ResponseError::ConflictingContentLength,
                    })?;
                }
                Known::TransferEncoding => codings.add(value),
                Known::Connection => connection.add(value),
                Known::Upgrade => upgrade_header = true,
                _ => {}
            }
        }
        if codings.present {
            if length.0.is_some() {
                return Err(ResponseError::LengthAndTransferEncoding);
            }
            if self.minor_version == 0 || !codings.is_chunked() {
                return Err(ResponseError::UnsupportedTransferEncoding);
            }
        }
        self.content_length = length.0;
        self.chunked = codings.present;
        self.connection_close =
            connection.close || (self.minor_version == 0 && !connection.keep_alive);
        self.upgrade = upgrade_header && connection.upgrade;
        Ok(())
    }
}

/// httparse's parse of a response head that is not plain (plain_head.rs): its status line,
/// the fields in `out`, and the head's length. `None`: incomplete.
fn by_httparse(buf: &[u8], out: &mut Vec<Header>) -> Result<Found<StatusLine>, ResponseError> {
    // Uninitialised, as the request parser's (request.rs).
    let mut raw = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    let head_len = match config.parse_response_with_uninit_headers(&mut res, buf, &mut raw) {
        Ok(Status::Complete(n)) => n,
        Ok(Status::Partial) => return Ok(None),
        Err(e) => return Err(parse_error(e)),
    };
    let (Some(minor), Some(code)) = (res.version, res.code) else {
        return Err(ResponseError::StatusLine("missing version or status"));
    };
    const TOO_LARGE: ResponseError = ResponseError::Header("response head too large");
    let reason = res.reason.unwrap_or_default().as_bytes();
    let reason = Span::within(buf, reason).ok_or(TOO_LARGE)?;
    push_headers(buf, res.headers, out).ok_or(TOO_LARGE)?;
    Ok(Some((
        StatusLine {
            minor,
            code,
            reason,
        },
        head_len,
    )))
}

fn parse_error(e: httparse::Error) -> ResponseError {
    match e {
        httparse::Error::TooManyHeaders => ResponseError::TooManyHeaders,
        httparse::Error::Version => ResponseError::StatusLine("invalid HTTP version"),
        httparse::Error::Status | httparse::Error::Token => {
            ResponseError::StatusLine("invalid status code")
        }
        httparse::Error::HeaderName => ResponseError::Header("invalid header name"),
        httparse::Error::HeaderValue => ResponseError::Header("invalid header value"),
        httparse::Error::NewLine => ResponseError::Header("invalid line ending"),
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;

impl Drop for ResponseHead {
    /// Its header list is kept for the thread's next head (spare_headers.rs).
    fn drop(&mut self) {
        crate::spare_headers::give(std::mem::take(&mut self.headers));
    }
}
