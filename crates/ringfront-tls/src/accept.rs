//! The server side of a handshake: the first bytes tell TLS from plain HTTP (nginx answers
//! the latter with `400 The plain HTTP request was sent to HTTPS port`), the ClientHello's
//! SNI chooses the server (and so its certificate, protocols, ciphers and client
//! verification), then the handshake runs to its end. The caller bounds it in time
//! (`client_header_timeout`, as nginx does).

use std::io;
use std::sync::Arc;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use rustls::server::{Acceptor, ServerConnection};

use crate::info::Info;
use crate::records::Incoming;
use crate::server::{ServerHandshake, ServerTls};
use crate::stream::TlsStream;

/// TLS record type of a handshake message, and the first byte of an SSLv2-style hello.
const HANDSHAKE: u8 = 0x16;
const SSLV2_HELLO: u8 = 0x80;

/// Bytes asked of the socket per read until the ClientHello is in: a hello is rarely over
/// 2 KiB, and a half-open handshake should hold little.
const HELLO_CHUNK: usize = 4096;

/// A fatal `unrecognized_name` alert (`ssl_reject_handshake`), as a TLS 1.2 record.
const UNRECOGNIZED_NAME: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112];

pub enum Accepted {
    Tls(Box<TlsStream<ServerConnection>>, Box<Info>),
    /// Not TLS: the bytes read so far, to be read as an HTTP request and refused.
    Plain(TcpStream, Vec<u8>),
}

/// Why a handshake did not complete, in the words nginx logs at `info`.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("client closed connection while SSL handshaking")]
    Closed,
    #[error("SSL_do_handshake() failed (SSL: {0}) while SSL handshaking")]
    Tls(String),
    #[error("SSL handshake rejected (ssl_reject_handshake) while SSL handshaking")]
    Rejected,
    #[error("recv() failed ({0}) while SSL handshaking")]
    Io(io::Error),
}

fn io_error(e: io::Error) -> HandshakeError {
    match e.kind() {
        io::ErrorKind::InvalidData => HandshakeError::Tls(e.to_string()),
        io::ErrorKind::UnexpectedEof => HandshakeError::Closed,
        _ => HandshakeError::Io(e),
    }
}

async fn read_some(io: &mut TcpStream, inc: &mut Incoming) -> Result<(), HandshakeError> {
    let b = inc.take_for_read(HELLO_CHUNK);
    let cap = b.capacity();
    let (r, s) = io.read(b.slice_mut(0..cap)).await;
    inc.buf = s.into_inner();
    match r {
        Ok(0) => Err(HandshakeError::Closed),
        Ok(_) => Ok(()),
        Err(e) => Err(HandshakeError::Io(e)),
    }
}

/// Reads the ClientHello; `None` when the bytes are not TLS.
async fn client_hello(
    io: &mut TcpStream,
    inc: &mut Incoming,
) -> Result<Option<rustls::server::Accepted>, HandshakeError> {
    read_some(io, inc).await?;
    if !matches!(inc.buf.first(), Some(&HANDSHAKE | &SSLV2_HELLO)) {
        return Ok(None);
    }
    let mut acceptor = Acceptor::default();
    loop {
        while inc.pending() {
            let mut src = &inc.buf[inc.pos..];
            let before = src.len();
            match acceptor.read_tls(&mut src) {
                Ok(0) => break,
                Ok(_) => inc.pos += before - src.len(),
                Err(e) => return Err(HandshakeError::Tls(e.to_string())),
            }
            match acceptor.accept() {
                Ok(Some(a)) => return Ok(Some(a)),
                Ok(None) => {}
                Err((e, mut alert)) => {
                    let mut out = Vec::new();
                    let _ = alert.write_all(&mut out);
                    let _ = io.write_all(out).await;
                    return Err(HandshakeError::Tls(e.to_string()));
                }
            }
        }
        read_some(io, inc).await?;
    }
}

/// Accepts one connection on a TLS address. `choose` maps the SNI name (lower-cased, `None`
/// without SNI) to the server's handshake settings.
pub async fn accept(
    mut io: TcpStream,
    choose: impl FnOnce(Option<&str>) -> Option<ServerHandshake>,
) -> Result<Accepted, HandshakeError> {
    // No buffer is held until the client sends something: a connection that stays silent
    // (or thousands of them) costs only its socket until client_header_timeout.
    io.readable(false).await.map_err(HandshakeError::Io)?;
    let mut inc = Incoming::default();
    let Some(hello) = client_hello(&mut io, &mut inc).await? else {
        let bytes = std::mem::take(&mut inc.buf);
        return Ok(Accepted::Plain(io, bytes));
    };
    let sni = hello
        .client_hello()
        .server_name()
        .map(|s| s.to_ascii_lowercase());
    let offered = crate::offered::of(&hello.client_hello());
    let tls: Arc<ServerTls> = match choose(sni.as_deref()) {
        Some(ServerHandshake::Serve(t)) => t,
        Some(ServerHandshake::Reject) | None => {
            let _ = io.write_all(UNRECOGNIZED_NAME.to_vec()).await;
            return Err(HandshakeError::Rejected);
        }
    };
    let conn = match hello.into_connection(tls.config.clone()) {
        Ok(c) => c,
        Err((e, mut alert)) => {
            let mut out = Vec::new();
            let _ = alert.write_all(&mut out);
            let _ = io.write_all(out).await;
            return Err(HandshakeError::Tls(e.to_string()));
        }
    };
    // By value: a borrowed `conn` would keep its own slot in this future across the
    // handshake's await, beside the stream's copy (about 2 KiB more per connection).
    let (conn, id) = crate::session_id::assign(conn);
    let mut stream = TlsStream::new(io, conn, inc);
    stream.handshake().await.map_err(io_error)?;
    let mut info = Info::of(stream.conn(), &tls, offered);
    // `ssl_ocsp` is asked by `check_ocsp`, once this future is done: an await here would
    // hold the stream and the info in every connection's accept future, half-open
    // handshakes' too (tls_hostile's memory bound), OCSP configured or not.
    if tls.ocsp.is_some() && tls.verdict.is_some() && info.verified() {
        info.ocsp = Some(tls.clone());
    }
    // OpenSSL names a session that will travel in a ticket only once it resumes.
    let shown = info.reused || !tls.config.ticketer.enabled();
    info.session_id = id
        .filter(|_| shown)
        .map_or_else(String::new, |id| crate::session_id::hex(&id))
        .into();
    Ok(Accepted::Tls(Box::new(stream), Box::new(info)))
}

/// `ssl_ocsp`: asks the responder about the client's verified certificate path, when the
/// handshake left that to do (`Info::ocsp_pending`), within `limit`; a certificate that is
/// not `good`, or no answer in time, fails `$ssl_client_verify` as nginx's check does.
pub async fn check_ocsp(
    stream: &TlsStream<ServerConnection>,
    info: &mut Info,
    limit: std::time::Duration,
) {
    let Some(tls) = info.ocsp.take() else {
        return;
    };
    let (Some(check), Some(verdict)) = (&tls.ocsp, &tls.verdict) else {
        return;
    };
    let chain = stream
        .conn()
        .peer_certificates()
        .unwrap_or_default()
        .to_vec();
    let asked = monoio::time::timeout(limit, check.validate(&verdict.path(&chain))).await;
    let why = asked.unwrap_or(Some(crate::client_ocsp::FAILED));
    if let Some(why) = why {
        info.fail_client_verify(why, verdict.mode);
    }
}
