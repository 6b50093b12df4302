//! One try as the logs see it: the `$upstream_addr`, `$upstream_status`,
//! `$upstream_response_time`, `$upstream_connect_time` and `$upstream_header_time` values.

use std::time::Duration;

use crate::topology::{PeerId, UpstreamId};

/// Who a try went to: a peer, or — when none could be selected — the group (nginx logs the
/// group's name as `$upstream_addr` then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryPeer {
    Peer(PeerId),
    Group(UpstreamId),
    /// A peer of a group made for one request (`proxy_pass` with variables), which the
    /// topology does not know: its address.
    Addr(std::net::SocketAddr),
    /// No try: an internal redirect between the tries of two requests (nginx's state
    /// without a peer), shown as ` : ` instead of `, `.
    Redirect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TryRecord {
    pub peer: TryPeer,
    pub status: Option<u16>,
    pub response_time: Option<Duration>,
    pub connect_time: Option<Duration>,
    pub header_time: Option<Duration>,
    /// `$upstream_response_length`: body bytes read from the peer.
    pub response_length: u64,
    /// `$upstream_bytes_received`, `$upstream_bytes_sent`: bytes read from and written to
    /// the peer's connection.
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

impl TryRecord {
    pub fn new(peer: TryPeer) -> Self {
        TryRecord {
            peer,
            status: None,
            response_time: None,
            connect_time: None,
            header_time: None,
            response_length: 0,
            bytes_received: 0,
            bytes_sent: 0,
        }
    }
}
