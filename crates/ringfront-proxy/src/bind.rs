//! `proxy_bind`: upstream connections made from a chosen local address (nginx's
//! `ngx_http_upstream_set_local` and `ngx_event_connect_peer`): the socket is bound before
//! it connects. A bind without a port leaves the port to the kernel at connect time
//! (`IP_BIND_ADDRESS_NO_PORT`, as nginx does on Linux), so one local address is not limited
//! to one connection per port pair.

use std::net::SocketAddr;

use monoio::net::TcpStream;
use ringfront_config::{BindTo, LogLevel};
use socket2::{Domain, Socket, Type};

use crate::req::Cx;

/// The local address this request's upstream connections are made from, if any; a value
/// with variables that is not an address is logged (`invalid local address "..."`) and
/// binds nothing, as in nginx.
pub fn local(cx: &Cx<'_>) -> Option<SocketAddr> {
    match &cx.settings().proxy_bind.as_ref()?.to {
        BindTo::Addr(a) => Some(*a),
        BindTo::Vars(t) => {
            let mut text = Vec::new();
            crate::vars::render(&mut text, t, &cx.req.vars("", None, Some(cx.snap)), false);
            if text.is_empty() {
                return None;
            }
            let parsed = std::str::from_utf8(&text)
                .ok()
                .and_then(ringfront_config::parse_addr_port);
            if parsed.is_none() {
                let text = String::from_utf8_lossy(&text);
                cx.log(
                    LogLevel::Error,
                    format_args!("invalid local address \"{text}\""),
                    None,
                );
            }
            parsed
        }
    }
}

/// True when this request's `proxy_bind` says `transparent`.
pub fn transparent(cx: &Cx<'_>) -> bool {
    cx.settings()
        .proxy_bind
        .as_ref()
        .is_some_and(|b| b.transparent)
}

/// Connects to `addr` from `local` (with `IP_TRANSPARENT` first when `transparent`, as
/// nginx's `ngx_event_connect_set_transparent`): a non-blocking connect on a bound socket,
/// then the wait for it to become writable and its error, if any.
pub async fn connect_from(
    addr: SocketAddr,
    local: SocketAddr,
    transparent: bool,
) -> std::io::Result<TcpStream> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    if transparent {
        set_transparent(&sock, local)?;
    }
    sock.bind(&local.into())?;
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    // A second handle on the socket, to read the connect's outcome once it is writable.
    let probe = sock.try_clone()?;
    let stream = TcpStream::from_std(std::net::TcpStream::from(sock))?;
    stream.writable(false).await?;
    match probe.take_error()? {
        Some(e) => Err(e),
        None => Ok(stream),
    }
}

/// `IP_TRANSPARENT` / `IPV6_TRANSPARENT` on `sock`; a refusal (no `CAP_NET_ADMIN`) is
/// the connect's error, as nginx's `setsockopt(IP_TRANSPARENT) failed`.
fn set_transparent(sock: &Socket, local: SocketAddr) -> std::io::Result<()> {
    let named = |e: std::io::Error, what: &str| {
        std::io::Error::new(e.kind(), format!("setsockopt({what}) failed ({e})"))
    };
    match local {
        SocketAddr::V4(_) => sock
            .set_ip_transparent(true)
            .map_err(|e| named(e, "IP_TRANSPARENT")),
        SocketAddr::V6(_) => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(sock);
            let on: libc::c_int = 1;
            // SAFETY: `fd` is this open socket's descriptor; the option value is a c_int
            // that lives through the call, and its size is passed with it.
            #[allow(unsafe_code)]
            let rc = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_IPV6,
                    libc::IPV6_TRANSPARENT,
                    (&on as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            match rc {
                0 => Ok(()),
                _ => Err(named(std::io::Error::last_os_error(), "IPV6_TRANSPARENT")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::on_both;

    /// The connection comes from the bound address, under both drivers; a refused connect
    /// is an error.
    #[test]
    fn connects_from_the_bound_address() {
        on_both(|| async {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let local: SocketAddr = "127.0.0.2:0".parse().unwrap();
            let stream = connect_from(addr, local, false).await.unwrap();
            let (_, peer) = listener.accept().unwrap();
            assert_eq!(peer.ip(), local.ip());
            assert_eq!(stream.local_addr().unwrap().ip(), local.ip());
            drop(listener);
            let refused = connect_from(addr, local, false).await;
            assert!(refused.is_err(), "nothing listens any more");
        });
    }
}
