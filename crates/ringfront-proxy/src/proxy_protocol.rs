//! `listen ... proxy_protocol`: the PROXY protocol header that starts a connection, read
//! before anything else (before the TLS handshake on an `ssl` listen) as nginx 1.22 reads
//! it: from whatever the first read brings (up to 1 KiB on a plain listen, its
//! `client_header_buffer_size`; 108 bytes, `NGX_PROXY_PROTOCOL_MAX_HEADER + 1`, on an `ssl`
//! one), within `client_header_timeout` of the accept. A header it cannot read closes the
//! connection with nginx's error line; it never becomes a request.
//!
//! The bytes are peeked (`MSG_PEEK`) and only the header's are then taken off the socket,
//! as nginx does before a handshake, so what follows reaches the request reader or the TLS
//! layer untouched.

use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use ringfront_config::LogLevel;
use ringfront_http::{ProxyError, ProxyHeader};

use crate::session::Conn;
use crate::stream::Stream;

/// nginx's `client_header_buffer_size` default: the first read of a plain connection.
const PLAIN_PEEK: usize = 1024;
/// `NGX_PROXY_PROTOCOL_MAX_HEADER + 1`: what nginx peeks before a TLS handshake.
const TLS_PEEK: usize = 108;

/// Reads the header of `conn` (accepted on a `proxy_protocol` listen); the connection back
/// with what the header said, or `None` when it was closed.
pub async fn read(mut conn: Conn, tls: bool) -> Option<Conn> {
    let w = conn.open.0.clone();
    let snap = w.snapshot();
    let local = conn.local();
    let default = snap
        .servers_for(local)
        .first()
        .and_then(|&i| snap.servers.get(i))?;
    let limit = default.fallback.settings.client_header_timeout;
    let fd = match &conn.stream {
        Stream::Plain(t) => t.as_raw_fd(),
        Stream::Unix(u) => u.as_raw_fd(),
        Stream::Tls(_) => return None,
    };
    let elapsed = crate::clock::now_ms().saturating_sub(conn.opened_ms);
    let limit = limit.saturating_sub(Duration::from_millis(elapsed));
    let size = if tls { TLS_PEEK } else { PLAIN_PEEK };
    let client = match conn.stream {
        Stream::Unix(_) => "unix:".to_string(),
        _ => crate::vars::client_text(conn.peer),
    };
    let server = snap
        .listens
        .iter()
        .find(|l| l.addr == local)
        .map_or_else(|| local.to_string(), |l| l.name());
    let log = |level, msg: std::fmt::Arguments<'_>| {
        w.log(
            &snap,
            level,
            conn.id,
            format_args!("{msg} while reading PROXY protocol, client: {client}, server: {server}"),
        );
    };
    let peeked = match crate::deadline::timeout(limit, peek(&conn.stream, fd, size)).await {
        Err(_) => {
            log(
                LogLevel::Info,
                format_args!("client timed out (110: Connection timed out)"),
            );
            return None;
        }
        Ok(Err(_)) => return None,
        Ok(Ok(bytes)) => bytes,
    };
    if peeked.is_empty() && !tls {
        log(LogLevel::Info, format_args!("client closed connection"));
        return None;
    }
    match ringfront_http::parse_proxy_protocol(&peeked) {
        Ok((len, header)) => {
            take(fd, len)?;
            conn.proxy_protocol = header.map(Box::new);
            Some(conn)
        }
        Err(e) => {
            if let Some(msg) = message(e, &peeked) {
                log(LogLevel::Error, format_args!("{msg}"));
            }
            // nginx read these bytes on a plain listen (its close is a FIN, not a reset);
            // before TLS it had only peeked, as here.
            if !tls {
                let _ = take(fd, peeked.len());
            }
            None
        }
    }
}

/// nginx's line for a refused header (none for a short v2 address block).
fn message(e: ProxyError, bytes: &[u8]) -> Option<String> {
    Some(match e {
        ProxyError::Broken => format!("broken header: \"{}\"", String::from_utf8_lossy(bytes)),
        ProxyError::Version(v) => format!("unknown PROXY protocol version: {v}"),
        ProxyError::TooLarge => "header is too large".to_string(),
        ProxyError::Short => return None,
    })
}

#[allow(unsafe_code)]
/// Waits for bytes and peeks at up to `size` of them (none: the client closed).
async fn peek(
    stream: &crate::stream::ClientStream,
    fd: RawFd,
    size: usize,
) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; size];
    loop {
        stream.socket_readable().await?;
        // SAFETY: `fd` is the open socket `stream` owns (borrowed for this call); `buf` is a
        // live, writable allocation of `buf.len()` bytes.
        let n = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        match usize::try_from(n) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(_) => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::Interrupted
                {
                    return Err(e);
                }
            }
        }
    }
}

#[allow(unsafe_code)]
/// Takes the header's `len` bytes (already in the socket's queue: they were peeked).
fn take(fd: RawFd, len: usize) -> Option<()> {
    let mut buf = vec![0u8; len];
    // SAFETY: `fd` is the connection's open socket; `buf` is live and `len` bytes long.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), len, libc::MSG_DONTWAIT) };
    (usize::try_from(n).ok() == Some(len)).then_some(())
}

/// `$proxy_protocol_addr` and friends: empty without a header (or after UNKNOWN / LOCAL).
/// Ports print only when not 0, as nginx's; `empty` stands for "not found" (no header).
pub(crate) fn push_var(out: &mut Vec<u8>, pp: Option<&ProxyHeader>, var: PpVar, empty: &[u8]) {
    let Some(h) = pp else {
        out.extend_from_slice(empty);
        return;
    };
    let port = |out: &mut Vec<u8>, p: u16| {
        if p != 0 {
            ringfront_http::push_decimal(out, u64::from(p));
        }
    };
    match var {
        PpVar::Addr => out.extend_from_slice(h.src_addr.as_bytes()),
        PpVar::Port => port(out, h.src_port),
        PpVar::ServerAddr => out.extend_from_slice(h.dst_addr.as_bytes()),
        PpVar::ServerPort => port(out, h.dst_port),
    }
}

pub(crate) use ringfront_config::ProxyProtocolVar as PpVar;

/// `$proxy_protocol_tlv_*`: the TLV's value; `empty` when there is none.
pub(crate) fn push_tlv(
    out: &mut Vec<u8>,
    pp: Option<&ProxyHeader>,
    t: ringfront_config::ProxyProtocolTlv,
    empty: &[u8],
) {
    use ringfront_config::TlvKind;
    let Some(h) = pp else {
        out.extend_from_slice(empty);
        return;
    };
    let kind = match t.kind {
        TlvKind::Unknown => None,
        TlvKind::Type(k) => u8::try_from(k).ok(),
        TlvKind::Verify => {
            match h.tlv(0x20).and_then(|ssl| ssl.get(1..5)) {
                Some(v) => {
                    let n = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
                    ringfront_http::push_decimal(out, u64::from(n));
                }
                None => out.extend_from_slice(empty),
            }
            return;
        }
    };
    let value = kind.and_then(|k| match t.in_ssl {
        false => h.tlv(k),
        true => h
            .tlv(0x20)
            .and_then(|ssl| ringfront_http::find_tlv(ssl.get(5..)?, k)),
    });
    out.extend_from_slice(value.unwrap_or(empty));
}
