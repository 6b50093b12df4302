//! A large response body moved from the upstream socket to the client's through a pipe with
//! splice(2), never copied into user space (HAProxy's `splice-response`): each piece the
//! upstream has sent goes into the pipe and out to the client before the next is taken, as
//! the read/write loop does. The calls are non-blocking and made by the worker itself; it
//! waits on the ring for readiness only when one would block (io_uring's own splice runs
//! each call on a kernel worker thread, which costs more than it saves: decision 0021).
//! Plain TCP and unix-domain sockets only: TLS needs the bytes.
//!
//! A worker keeps a few emptied pipes for the next body; a pipe that still holds bytes (the
//! client failed) is closed instead.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use ringfront_upstream::exchange::{Cause, Failure, Phase};

use crate::io::IoFail;
use crate::stream::{ClientStream, UpstreamStream};

/// The least body left after the head's read that goes through a pipe: below it, one read
/// and one write cost less than the splices and the look for bytes beyond the end.
pub const MIN_BODY: u64 = 32 * 1024;
/// The size asked for each pipe: fewer calls per large body than the default 64 KiB, and
/// less CPU per 1 MiB body than 1 MiB pipes (decision 0021). A pipe keeps the default when
/// the system refuses it.
const PIPE_SIZE: libc::c_int = 256 * 1024;
/// How many emptied pipes a worker keeps.
const SPARES: usize = 16;

/// A non-blocking pipe: its read end and its write end.
pub struct Pipe {
    rd: OwnedFd,
    wr: OwnedFd,
}

impl Pipe {
    #[allow(unsafe_code)]
    fn new() -> Option<Pipe> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the two-element array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: both descriptors were just made by pipe2 and nothing else owns them.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on a descriptor owned here; no memory is passed. A failure (the
        // per-user pipe limit) leaves the default size.
        unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
        Some(Pipe { rd, wr })
    }
}

/// A worker's emptied pipes.
#[derive(Default)]
pub struct Pipes(RefCell<Vec<Pipe>>);

impl Pipes {
    /// A spare pipe, or a new one; `None` when none can be made (descriptors run out).
    pub fn take(&self) -> Option<Pipe> {
        let spare = self.0.borrow_mut().pop();
        spare.or_else(Pipe::new)
    }

    /// Keeps an emptied pipe for another body unless there are enough.
    pub fn give(&self, pipe: Pipe) {
        let mut spares = self.0.borrow_mut();
        if spares.len() < SPARES {
            spares.push(pipe);
        }
    }
}

/// Why a spliced body stopped before its end.
pub enum Stop {
    Upstream(Failure),
    Client(IoFail),
}

/// The descriptor of a stream that splice can use: plain TCP or unix-domain, not TLS.
pub fn fd_of<C, D>(s: &crate::stream::Stream<C>) -> Option<RawFd>
where
    C: std::ops::DerefMut<Target = ringfront_tls::rustls::ConnectionCommon<D>>,
    D: ringfront_tls::rustls::SideData,
{
    match s {
        crate::stream::Stream::Tls(_) => None,
        _ => Some(s.raw_fd()),
    }
}

/// Moves `left` body bytes from `up` to `client` through `pipe`, adding what it takes from
/// the upstream to `read` and what it hands to the client to `sent` (as the write loop
/// counts: a piece counts as sent when its write starts). Each wait for the upstream is
/// bounded by `read_limit`, each wait for the client by `send_limit`. On an error the pipe
/// may hold bytes: the caller drops it.
pub async fn body(
    up: &UpstreamStream,
    client: &ClientStream,
    pipe: &Pipe,
    mut left: u64,
    [read_limit, send_limit]: [Duration; 2],
    [read, sent]: [&mut u64; 2],
) -> Result<(), Stop> {
    let (u, c) = match (fd_of(up), fd_of(client)) {
        (Some(u), Some(c)) => (u, c),
        _ => return Err(Stop::Client(IoFail::Io(io::ErrorKind::Unsupported.into()))),
    };
    // splice(2) waits on a socket unless the socket itself is non-blocking (its
    // SPLICE_F_NONBLOCK is the pipe's). On io_uring monoio's sockets are blocking; the
    // ring's own operations do not depend on the flag, so it stays.
    for fd in [u, c] {
        non_blocking(fd).map_err(|e| Stop::Client(IoFail::Io(e)))?;
    }
    let (pr, pw) = (pipe.rd.as_raw_fd(), pipe.wr.as_raw_fd());
    while left > 0 {
        // At most a pipe's size: fits a usize.
        let want = left.min(PIPE_SIZE as u64) as usize;
        let n = fill(up, u, pw, want, read_limit)
            .await
            .map_err(Stop::Upstream)?;
        left -= n as u64;
        *read += n as u64;
        *sent += n as u64;
        drain(pr, c, n, client, send_limit)
            .await
            .map_err(Stop::Client)?;
    }
    Ok(())
}

/// Moves what the upstream has sent, up to `want` bytes, into the (empty) pipe, waiting up
/// to `limit` for it to send some.
async fn fill(
    up: &UpstreamStream,
    u: RawFd,
    pw: RawFd,
    want: usize,
    limit: Duration,
) -> Result<usize, Failure> {
    loop {
        match splice_now(u, pw, want) {
            Ok(Some(0)) => return Err(Failure::new(Phase::ReadBody, Cause::Closed)),
            Ok(Some(n)) => return Ok(n),
            Ok(None) => match crate::deadline::timeout(limit, up.socket_readable()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(Failure::io(Phase::ReadBody, &e)),
                Err(_) => return Err(Failure::new(Phase::ReadBody, Cause::TimedOut)),
            },
            Err(e) => return Err(Failure::io(Phase::ReadBody, &e)),
        }
    }
}

/// Moves `n` bytes from the pipe to the client, waiting for room when its socket is full.
async fn drain(
    pr: RawFd,
    c: RawFd,
    mut n: usize,
    client: &ClientStream,
    limit: Duration,
) -> Result<(), IoFail> {
    while n > 0 {
        match splice_now(pr, c, n) {
            Ok(Some(0)) => return Err(IoFail::Io(io::ErrorKind::WriteZero.into())),
            Ok(Some(m)) => n -= m,
            Ok(None) => match crate::deadline::timeout(limit, client.socket_writable()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(IoFail::Io(e)),
                Err(_) => return Err(IoFail::Timeout),
            },
            Err(e) => return Err(IoFail::Io(e)),
        }
    }
    Ok(())
}

/// Makes the socket non-blocking (`FIONBIO`: one call, the other flags untouched).
#[allow(unsafe_code)]
fn non_blocking(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: FIONBIO reads one int from the pointer, which outlives the call.
    match unsafe { libc::ioctl(fd, libc::FIONBIO, &raw const on) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// One non-blocking splice of up to `len` bytes; `Ok(None)`: it would block.
#[allow(unsafe_code)]
fn splice_now(from: RawFd, to: RawFd, len: usize) -> io::Result<Option<usize>> {
    let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
    let null = std::ptr::null_mut();
    // SAFETY: a system call on two open descriptors the caller holds; no offsets (null),
    // so no memory of ours is read or written.
    let n = unsafe { libc::splice(from, null, to, null, len, flags) };
    if let Ok(n) = usize::try_from(n) {
        return Ok(Some(n));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// Bytes the upstream already sent beyond the body's end, read and dropped (then its
/// connection is not reused). The read loop takes them with the read that ends the body and
/// counts them in `$upstream_response_length`, as nginx does; a spliced body takes no more
/// than its length, so this reads once more, without waiting, up to the loop's read size.
#[allow(unsafe_code)]
pub fn read_beyond(up: &UpstreamStream) -> usize {
    // Never read: not zeroed (16 KiB of stores per body otherwise).
    let mut scratch = std::mem::MaybeUninit::<[u8; crate::body_bufs::READ]>::uninit();
    let len = crate::body_bufs::READ;
    // SAFETY: recv writes at most `len` bytes into `scratch` (that large, outliving the
    // call); the bytes are never read.
    let n = unsafe {
        libc::recv(
            up.raw_fd(),
            scratch.as_mut_ptr().cast(),
            len,
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::thread::JoinHandle;

    use super::*;
    use crate::testutil::on_both;

    /// A connected pair: ours (monoio, as `S`) and the peer's (blocking std). Ours is left
    /// blocking, as monoio's io_uring sockets are: `body` must not wait in a call.
    fn pair<S: From<monoio::net::TcpStream>>() -> (S, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (ours, _) = l.accept().unwrap();
        (
            S::from(monoio::net::TcpStream::from_std(ours).unwrap()),
            peer,
        )
    }

    /// Bytes of period 251, so a piece out of place shows.
    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    /// A client that reads `n` bytes in another thread.
    fn reader(mut client: std::net::TcpStream, n: usize) -> JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut got = vec![0u8; n];
            client.read_exact(&mut got).unwrap();
            got
        })
    }

    const LIMITS: [Duration; 2] = [Duration::from_secs(10), Duration::from_secs(10)];

    /// Moves a body of `n` bytes that `backend` writes (then `tail`) from `up` to a client,
    /// and checks that it arrived exactly and was counted.
    async fn moves_exactly<W: Write + Send + 'static>(
        up: &UpstreamStream,
        mut backend: W,
        n: usize,
        tail: &'static [u8],
    ) -> JoinHandle<std::io::Result<W>> {
        let (client, peer) = pair::<ClientStream>();
        let body = pattern(n);
        let sent_body = body.clone();
        let writer = std::thread::spawn(move || {
            backend.write_all(&sent_body)?;
            backend.write_all(tail).map(|()| backend)
        });
        let got = reader(peer, n);
        let pipe = Pipe::new().unwrap();
        let (mut read, mut sent) = (0, 0);
        let counts = [&mut read, &mut sent];
        let r = super::body(up, &client, &pipe, n as u64, LIMITS, counts).await;
        assert!(r.is_ok());
        assert_eq!((read, sent), (n as u64, n as u64));
        assert!(
            got.join().unwrap() == body,
            "the client got the body exactly"
        );
        writer
    }

    #[test]
    fn a_body_moves_exactly_and_what_follows_it_stays_in_the_socket() {
        on_both(|| async {
            let (up, backend) = pair::<UpstreamStream>();
            let writer = moves_exactly(&up, backend, 700_000, b"NEXT").await;
            let _backend = writer.join().unwrap();
            // The bytes behind the body were not taken: they are read here.
            up.socket_readable().await.unwrap();
            assert_eq!(read_beyond(&up), 4);
            assert_eq!(read_beyond(&up), 0, "nothing more, and no wait");
        });
    }

    #[test]
    fn a_unix_domain_upstream_splices_too() {
        on_both(|| async {
            let (ours, backend) = std::os::unix::net::UnixStream::pair().unwrap();
            let up = UpstreamStream::Unix(monoio::net::UnixStream::from_std(ours).unwrap());
            moves_exactly(&up, backend, 300_000, b"").await;
        });
    }

    #[test]
    fn an_upstream_that_closes_early_is_a_read_failure_after_what_it_sent() {
        on_both(|| async {
            let (up, mut backend) = pair::<UpstreamStream>();
            let (client, peer) = pair::<ClientStream>();
            backend.write_all(&pattern(50_000)).unwrap();
            drop(backend);
            let got = reader(peer, 50_000);
            let pipe = Pipe::new().unwrap();
            let (mut read, mut sent) = (0, 0);
            let r = super::body(&up, &client, &pipe, 80_000, LIMITS, [&mut read, &mut sent]).await;
            let Err(Stop::Upstream(f)) = r else {
                panic!("not an upstream failure")
            };
            assert_eq!(f, Failure::new(Phase::ReadBody, Cause::Closed));
            assert_eq!((read, sent), (50_000, 50_000));
            assert_eq!(got.join().unwrap(), pattern(50_000));
        });
    }

    #[test]
    fn a_silent_upstream_times_out_and_a_gone_client_is_a_client_failure() {
        on_both(|| async {
            let (up, mut backend) = pair::<UpstreamStream>();
            let (client, peer) = pair::<ClientStream>();
            let pipe = Pipe::new().unwrap();
            let short = [Duration::from_millis(50), Duration::from_secs(10)];
            let (mut read, mut sent) = (0, 0);
            let r = super::body(&up, &client, &pipe, 80_000, short, [&mut read, &mut sent]).await;
            let Err(Stop::Upstream(f)) = r else {
                panic!("not an upstream failure")
            };
            assert_eq!(f, Failure::new(Phase::ReadBody, Cause::TimedOut));
            assert_eq!((read, sent), (0, 0));
            // The client closes its connection unread: the body's writes fail (its
            // kernel resets the connection at the first bytes).
            drop(peer);
            // Left to end by itself: its write fails once `up` is closed (on io_uring, by
            // the ring after this future), or times out.
            backend
                .set_write_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            std::thread::spawn(move || backend.write_all(&pattern(4 << 20)));
            let left = 4 << 20;
            let r = super::body(&up, &client, &pipe, left, LIMITS, [&mut read, &mut sent]).await;
            assert!(matches!(r, Err(Stop::Client(IoFail::Io(_)))));
            assert!(
                read > 0 && read < left,
                "stopped at the failed write: {read}"
            );
        });
    }

    #[test]
    fn a_client_that_stops_reading_times_out_at_the_send_limit() {
        on_both(|| async {
            let (up, mut backend) = pair::<UpstreamStream>();
            let (client, _peer) = pair::<ClientStream>();
            backend
                .set_write_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            // Far more than the socket buffers and the pipe hold; the writer ends once
            // `up` is closed, or at its own timeout.
            std::thread::spawn(move || backend.write_all(&pattern(64 << 20)));
            let pipe = Pipe::new().unwrap();
            let limits = [Duration::from_secs(10), Duration::from_millis(100)];
            let (mut read, mut sent) = (0, 0);
            let r = super::body(
                &up,
                &client,
                &pipe,
                64 << 20,
                limits,
                [&mut read, &mut sent],
            )
            .await;
            assert!(matches!(r, Err(Stop::Client(IoFail::Timeout))));
            assert!(read > 0 && read < 64 << 20, "{read}");
        });
    }

    #[test]
    fn spare_pipes_are_kept_up_to_a_limit() {
        let pipes = Pipes::default();
        let taken: Vec<Pipe> = (0..SPARES + 3).filter_map(|_| pipes.take()).collect();
        assert_eq!(taken.len(), SPARES + 3);
        taken.into_iter().for_each(|p| pipes.give(p));
        assert_eq!(pipes.0.borrow().len(), SPARES);
    }
}
