//! The body through a pipe, never into user space: `--splice` with non-blocking splice(2)
//! calls from the relay's thread, waiting on the ring for readiness only when one would
//! block (what ringfront does, crates/ringfront-proxy/src/splice.rs); `--uring-splice` with
//! io_uring's own splice operation (which the kernel runs on its io-wq worker threads). In
//! both the upstream's head is read 4 KiB at a time, as ringfront reads it, so that the body
//! behind it stays in the socket for the pipe.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use monoio::buf::IoBufMut;
use monoio::io::AsyncReadRent;
use monoio::net::TcpStream;

/// The most one read of the upstream's head takes (ringfront's head reads: 4 KiB).
const HEAD_READ: usize = 4096;

/// How a body moves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Read into the buffer, written from it.
    Copy,
    Splice,
    UringSplice,
}

/// A connection's body mover and its pipe (`Copy` also when no pipe could be made).
pub enum Body {
    Copy,
    Splice(OwnedFd, OwnedFd),
    UringSplice(monoio::net::Pipe, monoio::net::Pipe),
}

impl Body {
    pub fn new(kind: Kind) -> Body {
        match kind {
            Kind::Copy => Body::Copy,
            Kind::Splice => sync_pipe().map_or(Body::Copy, |(r, w)| Body::Splice(r, w)),
            Kind::UringSplice => {
                monoio::net::unix::new_pipe().map_or(Body::Copy, |(r, w)| Body::UringSplice(r, w))
            }
        }
    }

    pub fn spliced(&self) -> bool {
        !matches!(self, Body::Copy)
    }

    /// Moves `left` body bytes from `up` to `client` through the pipe.
    pub async fn splice(
        &mut self,
        up: &mut TcpStream,
        client: &mut TcpStream,
        left: usize,
    ) -> std::io::Result<()> {
        match self {
            Body::Copy => Err(std::io::ErrorKind::Unsupported.into()),
            Body::Splice(r, w) => by_calls(up, client, (r, w), left).await,
            Body::UringSplice(r, w) => by_ring(up, client, (r, w), left).await,
        }
    }
}

/// A non-blocking pipe of 256 KiB (ringfront's size); (read end, write end).
#[allow(unsafe_code)]
fn sync_pipe() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the two-element array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: both descriptors were just made by pipe2 and nothing else owns them.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor owned here; no memory is passed.
    unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETPIPE_SZ, 256 * 1024) };
    Some((rd, wr))
}

/// One non-blocking splice(2) of up to `len` bytes; `Ok(None)`: it would block.
#[allow(unsafe_code)]
fn splice_now(from: i32, to: i32, len: usize) -> std::io::Result<Option<usize>> {
    let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
    let null = std::ptr::null_mut();
    // SAFETY: a system call on open descriptors; null offsets, no memory of ours.
    let n = unsafe { libc::splice(from, null, to, null, len, flags) };
    if let Ok(n) = usize::try_from(n) {
        return Ok(Some(n));
    }
    let e = std::io::Error::last_os_error();
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

async fn by_calls(
    up: &mut TcpStream,
    client: &mut TcpStream,
    (pr, pw): (&OwnedFd, &OwnedFd),
    mut left: usize,
) -> std::io::Result<()> {
    let (u, c) = (up.as_raw_fd(), client.as_raw_fd());
    while left > 0 {
        let Some(n) = splice_now(u, pw.as_raw_fd(), left.min(256 * 1024))? else {
            up.readable(false).await?;
            continue;
        };
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        left -= n;
        let mut in_pipe = n;
        while in_pipe > 0 {
            match splice_now(pr.as_raw_fd(), c, in_pipe)? {
                Some(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Some(m) => in_pipe -= m,
                None => client.writable(false).await?,
            }
        }
    }
    Ok(())
}

async fn by_ring(
    up: &mut TcpStream,
    client: &mut TcpStream,
    (pr, pw): (&mut monoio::net::Pipe, &mut monoio::net::Pipe),
    mut left: usize,
) -> std::io::Result<()> {
    use monoio::io::splice::{SpliceDestination, SpliceSource};
    while left > 0 {
        // monoio's pipe keeps the default size (it shows no descriptor to resize).
        let n = up.splice_to_pipe(pw, left.min(1 << 16) as u32).await? as usize;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let mut moved = 0;
        while moved < n {
            moved += client.splice_from_pipe(pr, (n - moved) as u32).await? as usize;
        }
        left -= n;
    }
    Ok(())
}

/// Reads (into an emptied `buf`) until it holds a whole head, at most 4 KiB per read, so
/// that the body behind the head is left in the socket.
pub async fn read_head_small(s: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    buf.clear();
    while crate::head_len(&buf).is_none() {
        if buf.capacity() - buf.len() < HEAD_READ {
            buf.reserve(HEAD_READ);
        }
        let start = buf.len();
        let (r, b) = s.read(buf.slice_mut(start..start + HEAD_READ)).await;
        buf = b.into_inner();
        if r? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_pipe_is_non_blocking_and_empty() {
        let (r, _w) = sync_pipe().expect("a pipe");
        let mut b = [0u8; 1];
        // SAFETY: read of at most one byte into a one-byte array.
        #[allow(unsafe_code)]
        let n = unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
        assert_eq!(n, -1);
        assert_eq!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::WouldBlock
        );
    }
}
