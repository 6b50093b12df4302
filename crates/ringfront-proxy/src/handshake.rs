//! `listen ... ssl`: the TLS handshake that starts a client connection, bounded by the
//! default server's `client_header_timeout` as nginx bounds it. SNI picks the server (its
//! certificate and TLS settings) the way `Host` picks it for requests. Plain HTTP sent to
//! the TLS port is read as a request and answered nginx's 400 (status 497 inside, so
//! `error_page 497` can redirect it).

use ringfront_config::LogLevel;
use ringfront_tls::{Accepted, HandshakeError};

use crate::session::Conn;
use crate::stream::Stream;

pub async fn run(mut conn: Conn) -> Option<Conn> {
    let w = conn.open.0.clone();
    let snap = w.snapshot();
    let (local, client) = (conn.local, conn.peer);
    let candidates = snap.servers_for(local);
    let default = candidates.first().and_then(|&i| snap.servers.get(i))?;
    let limit = default.fallback.settings.client_header_timeout;
    let tcp = match conn.stream {
        Stream::Plain(t) => t,
        Stream::Tls(_) | Stream::Unix(_) => return None,
    };
    let choose = |sni: Option<&str>| {
        let host = sni.unwrap_or("").as_bytes();
        crate::route::server(&snap, candidates, host)
            .and_then(|s| s.tls.clone())
            .or_else(|| default.tls.clone())
    };
    let log = |e: &dyn std::fmt::Display| {
        w.log(
            &snap,
            LogLevel::Info,
            conn.id,
            format_args!("{e}, client: {}, server: {local}", client.ip()),
        );
    };
    match crate::deadline::timeout(limit, ringfront_tls::accept(tcp, choose)).await {
        Ok(Ok(Accepted::Tls(stream, info))) => {
            conn.refuse = info.refusal;
            conn.stream = Stream::Tls(stream);
            conn.tls = Some(info);
            Some(conn)
        }
        Ok(Ok(Accepted::Plain(tcp, bytes))) => {
            conn.stream = Stream::Plain(tcp);
            conn.buf = bytes;
            conn.refuse = Some(497);
            Some(conn)
        }
        Ok(Err(HandshakeError::Closed)) => None,
        Ok(Err(e)) => {
            log(&e);
            None
        }
        Err(_) => {
            log(&"client timed out (110: Connection timed out) while SSL handshaking");
            None
        }
    }
}

/// `ssl_ocsp`, after the handshake: the client's certificate asked about, within the
/// default server's `client_header_timeout`. Its own step (the caller boxes it) so that no
/// connection's handshake future holds its state.
pub async fn ocsp(conn: &mut Conn) {
    let limit = {
        let snap = conn.open.0.snapshot();
        let candidates = snap.servers_for(conn.local());
        match candidates.first().and_then(|&i| snap.servers.get(i)) {
            Some(d) => d.fallback.settings.client_header_timeout,
            None => return,
        }
    };
    let (Stream::Tls(stream), Some(info)) = (&conn.stream, conn.tls.as_mut()) else {
        return;
    };
    ringfront_tls::check_ocsp(stream, info, limit).await;
    conn.refuse = info.refusal;
}
