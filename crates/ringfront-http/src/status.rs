//! nginx's reason phrases (`Request Time-out`, `Moved Temporarily`, ...) for the status lines
//! ringfront writes itself (through `HeadWriter`), so output matches nginx byte for byte.

/// Reason phrase for a status, e.g. 502 -> "Bad Gateway"; unknown -> "".
///
/// nginx's own phrases where nginx has one (it still sends `408 Request Time-out`,
/// `413 Request Entity Too Large`, `503 Service Temporarily Unavailable`), RFC 9110's
/// otherwise. nginx's internal 494..=497 map to their page titles; see
/// [`wire_status`] for what goes on the wire.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Moved Temporarily",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Time-out",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Large",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        494 => "Request Header Or Cookie Too Large",
        495 => "The SSL certificate error",
        496 => "No required SSL certificate was sent",
        497 => "The plain HTTP request was sent to HTTPS port",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Temporarily Unavailable",
        504 => "Gateway Time-out",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// Status that goes on the wire and in the access log: nginx's internal codes
/// 494..=497 are answered (and logged) as 400; everything else is unchanged.
pub fn wire_status(status: u16) -> u16 {
    match status {
        494..=497 => 400,
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(status: u16) -> String {
        let mut out = b"prefix:".to_vec();
        crate::HeadWriter::response(&mut out, status);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn status_lines() {
        assert_eq!(line(200), "prefix:HTTP/1.1 200 OK\r\n");
        assert_eq!(line(502), "prefix:HTTP/1.1 502 Bad Gateway\r\n");
        assert_eq!(line(504), "prefix:HTTP/1.1 504 Gateway Time-out\r\n");
        assert_eq!(line(100), "prefix:HTTP/1.1 100 Continue\r\n");
        assert_eq!(line(999), "prefix:HTTP/1.1 999 \r\n");
        assert_eq!(line(494), "prefix:HTTP/1.1 400 Bad Request\r\n");
        assert_eq!(line(0), "prefix:HTTP/1.1 500 Internal Server Error\r\n");
        assert_eq!(
            line(u16::MAX),
            "prefix:HTTP/1.1 500 Internal Server Error\r\n"
        );
    }

    #[test]
    fn reasons() {
        assert_eq!(reason(502), "Bad Gateway");
        assert_eq!(reason(404), "Not Found");
        assert_eq!(reason(599), "");
        assert_eq!(reason(0), "");
        for s in 100..=599 {
            assert!(!reason(s).contains('\r') && !reason(s).contains('\n'));
        }
    }

    #[test]
    fn wire_status_maps_internal_codes() {
        assert_eq!(wire_status(494), 400);
        assert_eq!(wire_status(497), 400);
        assert_eq!(wire_status(498), 498);
        assert_eq!(wire_status(502), 502);
    }
}
