//! HTTP/1.x codec on httparse for ringfront: zero-copy request and response heads,
//! strict body framing (Content-Length, chunked), hop-by-hop rules, status lines and
//! nginx's error pages. Pure: no I/O, no clock, no randomness; never panics on input.

mod ascii;
mod chunked;
mod encode;
mod error_page;
mod fields;
mod framing;
mod header_names;
mod host;
mod known;
mod plain_head;
mod proxy_protocol;
mod request;
mod response;
mod span;
mod spare_headers;
pub use spare_headers::trim as trim_spare_headers;
mod status;
pub mod uri;

pub use ascii::eq_ignore_case;
pub use chunked::{ChunkError, ChunkProgress, ChunkedDecoder, MAX_SIZE_LINE, MAX_TRAILER_SECTION};
pub use encode::{push_decimal, HeadWriter};
pub use error_page::{error_body, server_line, server_token, SERVER_NAME, SERVER_VERSION};
pub use fields::{connection_lists, is_hop_by_hop, list_elements, trim_ows, ConnectionList};
pub use framing::{parse_content_length, BodyFraming, MAX_BODY_LENGTH};
pub use header_names::HeaderNames;
pub use host::{host_name, is_valid_host, origin_path, target_form, TargetForm};
pub use known::Known;
pub use proxy_protocol::{find_tlv, parse as parse_proxy_protocol, ProxyError, ProxyHeader};
pub use request::{RequestError, RequestHead, MAX_HEADERS};
pub use response::{ResponseError, ResponseHead};
pub use span::{Header, Span};
pub use status::{reason, wire_status};
