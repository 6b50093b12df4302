//! What a file's answer is, given the request's conditional and range fields: nginx's
//! not_modified and range filters.

use crate::req::Req;

/// The status and the part of the file to send.
pub struct Plan {
    pub status: u16,
    pub start: u64,
    pub len: u64,
    /// `Content-Range` of a 206.
    pub content_range: Option<String>,
    /// `Accept-Ranges: bytes` (a 200 that could have been ranged).
    pub accept_ranges: bool,
}

/// The plan for a file of `size` bytes modified at `mtime` with `etag`.
pub fn plan(_req: &Req<'_>, size: u64, _mtime: i64, _etag: &str) -> Plan {
    Plan {
        status: 200,
        start: 0,
        len: size,
        content_range: None,
        accept_ranges: true,
    }
}
