//! The floor for `loadtest/run.sh`: the least a proxy of this topology can do per request.
//!
//! One monoio io_uring thread with ringfront's ring flags; one upstream connection per client
//! connection; per request: read a head, write it upstream, read the response head, find its
//! `Content-Length`, relay that many body bytes back. No routing, no header rewriting, no
//! timers, no clock, no logs. GET requests without bodies only (what wrk sends).
//!
//! `ringfront-floor-relay LISTEN_ADDR UPSTREAM_ADDR` (both `IP:PORT`); prints `ready` on stderr.

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use std::net::SocketAddr;

const BUF: usize = 64 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(listen), Some(upstream)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: ringfront-floor-relay LISTEN_ADDR UPSTREAM_ADDR");
        std::process::exit(2);
    };
    let (listen, upstream): (SocketAddr, SocketAddr) = match (listen.parse(), upstream.parse()) {
        (Ok(l), Ok(u)) => (l, u),
        _ => {
            eprintln!("addresses are IP:PORT");
            std::process::exit(2);
        }
    };
    let mut urb = io_uring::IoUring::builder();
    urb.setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun();
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(1024)
        .uring_builder(urb)
        .build()
        .expect("io_uring runtime");
    rt.block_on(serve(listen, upstream));
}

async fn serve(listen: SocketAddr, upstream: SocketAddr) {
    let listener = TcpListener::bind(listen).expect("bind");
    eprintln!("ready");
    loop {
        if let Ok((client, _)) = listener.accept().await {
            monoio::spawn(async move {
                if let Ok(up) = TcpStream::connect(upstream).await {
                    let _ = relay(client, up).await;
                }
            });
        }
    }
}

/// Requests of one client connection, in turn, over its one upstream connection.
async fn relay(mut client: TcpStream, mut up: TcpStream) -> std::io::Result<()> {
    let _ = client.set_nodelay(true);
    let _ = up.set_nodelay(true);
    let mut buf = Vec::with_capacity(BUF);
    loop {
        buf = read_head(&mut client, buf).await?;
        let (r, b) = up.write_all(buf).await;
        r?;
        buf = read_head(&mut up, b).await?;
        let head = head_len(&buf).unwrap_or(buf.len());
        let total = head + content_length(&buf[..head]);
        let mut sent = 0;
        loop {
            let n = buf.len();
            let (r, b) = client.write_all(buf).await;
            r?;
            sent += n;
            if sent >= total {
                buf = b;
                break;
            }
            buf = read_some(&mut up, b).await?;
        }
    }
}

/// Reads (into an emptied `buf`) until it holds a whole head; EOF is an error.
async fn read_head(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    buf.clear();
    while head_len(&buf).is_none() {
        buf = read_more(s, buf).await?;
    }
    Ok(buf)
}

/// Reads one piece into an emptied `buf`.
async fn read_some(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    buf.clear();
    read_more(s, buf).await
}

async fn read_more(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    if buf.len() == buf.capacity() {
        buf.reserve(BUF);
    }
    let start = buf.len();
    let (r, b) = s.read(buf.slice_mut(start..)).await;
    buf = b.into_inner();
    match r? {
        0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
        _ => Ok(buf),
    }
}

fn head_len(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &[u8]) -> usize {
    head.split(|&c| c == b'\n')
        .find_map(|line| {
            let (name, value) = line.split_at(line.iter().position(|&c| c == b':')?);
            name.eq_ignore_ascii_case(b"content-length").then(|| {
                std::str::from_utf8(&value[1..])
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
            })?
        })
        .unwrap_or(0)
}
