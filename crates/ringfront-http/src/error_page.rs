//! nginx's built-in error pages (`ngx_http_special_response.c`, nginx >= 1.19), with
//! `ringfront` in the footer where nginx prints `nginx` (`server_tokens off`) and
//! `ringfront/VERSION` where it prints `nginx/1.22.1` (`server_tokens on`, the default).
//! Both forms are constants: choosing one costs nothing per request.

/// The product token without and with the version, as literals (for `concat!`).
macro_rules! name {
    () => {
        "ringfront"
    };
}
macro_rules! name_version {
    () => {
        concat!(name!(), "/", env!("CARGO_PKG_VERSION"))
    };
}

/// `Server` and the footer with `server_tokens off`.
pub const SERVER_NAME: &str = name!();
/// `Server` and the footer with `server_tokens on` (nginx's `NGINX_VER`).
pub const SERVER_VERSION: &str = name_version!();

/// The `Server` field line with the product token, with the version or without: one copy
/// into a head.
pub fn server_line(version: bool) -> &'static [u8] {
    if version {
        concat!("Server: ", name_version!(), "\r\n").as_bytes()
    } else {
        concat!("Server: ", name!(), "\r\n").as_bytes()
    }
}

/// The product token: with the version or without (`server_tokens`).
pub fn server_token(version: bool) -> &'static str {
    if version {
        SERVER_VERSION
    } else {
        SERVER_NAME
    }
}

/// The footer, without and with the version.
macro_rules! tail {
    () => {
        concat!(
            "<hr><center>",
            name!(),
            "</center>\r\n</body>\r\n</html>\r\n"
        )
    };
    (version) => {
        concat!(
            "<hr><center>",
            name_version!(),
            "</center>\r\n</body>\r\n</html>\r\n"
        )
    };
}

/// A page as `[without version, with version]`.
macro_rules! page {
    ($title:literal) => {
        page!($title, $title)
    };
    ($title:literal, $h1:literal) => {
        page!(@ concat!(
            "<html>\r\n<head><title>",
            $title,
            "</title></head>\r\n<body>\r\n<center><h1>",
            $h1,
            "</h1></center>\r\n"
        ))
    };
    ($title:literal, $h1:literal, $detail:literal) => {
        page!(@ concat!(
            "<html>\r\n<head><title>",
            $title,
            "</title></head>\r\n<body>\r\n<center><h1>",
            $h1,
            "</h1></center>\r\n<center>",
            $detail,
            "</center>\r\n"
        ))
    };
    (@ $head:expr) => {
        [concat!($head, tail!()), concat!($head, tail!(version))]
    };
}

/// nginx-style small HTML error body for a status; "" where nginx sends no body
/// (2xx, 304, 407, 499, unknown codes). 494 is nginx's "Request Header Or Cookie Too
/// Large", sent with status 400; 498 gets the 404 page as in nginx. `version`: the footer
/// names the version (`server_tokens on`).
pub fn error_body(status: u16, version: bool) -> &'static str {
    pages(status).map_or("", |p| p[usize::from(version)])
}

fn pages(status: u16) -> Option<[&'static str; 2]> {
    Some(match status {
        301 => page!("301 Moved Permanently"),
        302 => page!("302 Found"),
        303 => page!("303 See Other"),
        307 => page!("307 Temporary Redirect"),
        308 => page!("308 Permanent Redirect"),
        400 => page!("400 Bad Request"),
        401 => page!("401 Authorization Required"),
        402 => page!("402 Payment Required"),
        403 => page!("403 Forbidden"),
        404 | 498 => page!("404 Not Found"),
        405 => page!("405 Not Allowed"),
        406 => page!("406 Not Acceptable"),
        408 => page!("408 Request Time-out"),
        409 => page!("409 Conflict"),
        410 => page!("410 Gone"),
        411 => page!("411 Length Required"),
        412 => page!("412 Precondition Failed"),
        413 => page!("413 Request Entity Too Large"),
        414 => page!("414 Request-URI Too Large"),
        415 => page!("415 Unsupported Media Type"),
        416 => page!("416 Requested Range Not Satisfiable"),
        421 => page!("421 Misdirected Request"),
        429 => page!("429 Too Many Requests"),
        494 => page!(
            "400 Request Header Or Cookie Too Large",
            "400 Bad Request",
            "Request Header Or Cookie Too Large"
        ),
        495 => page!(
            "400 The SSL certificate error",
            "400 Bad Request",
            "The SSL certificate error"
        ),
        496 => page!(
            "400 No required SSL certificate was sent",
            "400 Bad Request",
            "No required SSL certificate was sent"
        ),
        497 => page!(
            "400 The plain HTTP request was sent to HTTPS port",
            "400 Bad Request",
            "The plain HTTP request was sent to HTTPS port"
        ),
        500 => page!("500 Internal Server Error"),
        501 => page!("501 Not Implemented"),
        502 => page!("502 Bad Gateway"),
        503 => page!("503 Service Temporarily Unavailable"),
        504 => page!("504 Gateway Time-out"),
        505 => page!("505 HTTP Version Not Supported"),
        507 => page!("507 Insufficient Storage"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{reason, wire_status};

    #[test]
    fn bad_gateway_matches_nginx_layout() {
        assert_eq!(
            error_body(502, false),
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
             <center><h1>502 Bad Gateway</h1></center>\r\n\
             <hr><center>ringfront</center>\r\n</body>\r\n</html>\r\n"
        );
    }

    #[test]
    fn server_tokens_on_names_the_version_in_the_footer() {
        let page = error_body(404, true);
        assert!(page.ends_with(&format!(
            "<hr><center>{SERVER_VERSION}</center>\r\n</body>\r\n</html>\r\n"
        )));
        assert_eq!(
            page.replace(SERVER_VERSION, SERVER_NAME),
            error_body(404, false)
        );
        assert_eq!(server_token(false), "ringfront");
        for version in [false, true] {
            let line = format!("Server: {}\r\n", server_token(version));
            assert_eq!(server_line(version), line.as_bytes());
        }
        assert!(server_token(true).starts_with("ringfront/0."));
    }

    #[test]
    fn header_too_large_page() {
        assert_eq!(
            error_body(494, false),
            "<html>\r\n<head><title>400 Request Header Or Cookie Too Large</title></head>\r\n\
             <body>\r\n<center><h1>400 Bad Request</h1></center>\r\n\
             <center>Request Header Or Cookie Too Large</center>\r\n\
             <hr><center>ringfront</center>\r\n</body>\r\n</html>\r\n"
        );
    }

    #[test]
    fn required_pages_exist_and_agree_with_reason() {
        for s in [
            400, 401, 403, 404, 405, 408, 413, 414, 429, 494, 500, 501, 502, 503, 504, 505,
        ] {
            let body = error_body(s, false);
            assert!(body.starts_with("<html>\r\n<head><title>"), "{s}");
            assert!(body.ends_with("</html>\r\n"), "{s}");
            let wire = wire_status(s);
            let h1 = format!("<h1>{wire} {}</h1>", reason(wire));
            // 401's page says "Authorization Required" while its status line says
            // "Unauthorized", exactly as nginx.
            if s != 401 {
                assert!(body.contains(&h1), "{s}: {body}");
            }
        }
    }

    #[test]
    fn no_page_for_success_and_unknown() {
        for s in [0, 100, 200, 204, 304, 407, 499, 506, 599, 1000] {
            assert_eq!(error_body(s, false), "", "{s}");
            assert_eq!(error_body(s, true), "", "{s}");
        }
    }
}
