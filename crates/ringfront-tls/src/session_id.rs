//! `$ssl_session_id`: rustls does not expose TLS session ids, so ringfront gives each full
//! handshake a random 32-byte id and stores it in the session's resumption data (inside
//! its tickets and cached sessions); a resumed connection reads it back. Like OpenSSL's
//! id it is 32 bytes, shown as 64 hex digits, and the same for every resumption of one
//! session; as in nginx it is empty on a full handshake whose session goes out in a
//! ticket. It is not the TLS 1.2 ServerHello's session id.

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rustls::ServerConnection;

const LEN: usize = 32;

/// Call once the ClientHello is processed and before the handshake ends: the id carried
/// by the resumed session, or a new one, set to travel in the tickets issued now.
pub(crate) fn assign(mut conn: ServerConnection) -> (ServerConnection, Option<[u8; LEN]>) {
    let id = assign_to(&mut conn);
    (conn, id)
}

fn assign_to(conn: &mut ServerConnection) -> Option<[u8; LEN]> {
    let id = match conn.received_resumption_data() {
        Some(d) if d.len() == LEN => {
            let mut id = [0u8; LEN];
            id.copy_from_slice(d);
            id
        }
        _ => {
            let mut id = [0u8; LEN];
            SystemRandom::new().fill(&mut id).ok()?;
            id
        }
    };
    conn.set_resumption_data(&id);
    Some(id)
}

/// nginx's form (`ngx_hex_dump`): lower-case hex.
pub(crate) fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_lower_case_hex() {
        assert_eq!(super::hex(&[0x0a, 0xff, 0x10]), "0aff10");
    }
}
