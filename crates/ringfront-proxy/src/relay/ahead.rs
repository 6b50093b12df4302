//! The body loop of a body nothing transforms or paces, reading ahead: while one piece goes
//! to the client the next is read from the upstream, into the other of two of the worker's
//! large buffers (body_bufs.rs). The accounting is the plain loop's: a piece counts as sent
//! when its write starts, and a read that ran beside a failed write is not counted (the
//! plain loop would not have made it).

use ringfront_upstream::exchange::{Cause, Failure, Phase};

use super::{consume_in_place, End, Filters, Mode, Relay};
use crate::io::{read_more, write_all, IoFail};
use crate::stream::{ClientStream, UpstreamStream};

/// Whether the body may be read ahead: not decoded, compressed, framed by us or paced.
pub(super) fn possible(mode: &Mode, filters: &Filters<'_>, end: &End) -> bool {
    !matches!(mode, Mode::Dechunk(_))
        && !filters.trailers
        && !filters.gz.as_ref().is_some_and(|g| g.compresses())
        && end.pacer.is_none()
        && end.upstream_pacer.is_none()
}

impl Relay<'_> {
    /// Streams the rest of the body reading ahead, with two large buffers lent for it.
    pub(super) async fn body_ahead(
        &self,
        mode: &mut Mode,
        upstream: &mut UpstreamStream,
        client: &mut ClientStream,
        end: &mut End,
    ) {
        let big = &self.cx.w.big_bufs;
        let mut bufs = [big.take(), big.take()];
        self.ahead_loop(mode, upstream, client, end, &mut bufs)
            .await;
        for b in bufs {
            big.give(b);
        }
    }

    async fn ahead_loop(
        &self,
        mode: &mut Mode,
        upstream: &mut UpstreamStream,
        client: &mut ClientStream,
        end: &mut End,
        bufs: &mut [Vec<u8>; 2],
    ) {
        let s = self.cx.settings();
        let [mut rbuf, mut wbuf] = std::mem::take(bufs);
        // `wbuf` holds a piece still to be written (from the second read on).
        let mut pending = false;
        loop {
            rbuf.clear();
            let want = crate::body_bufs::want(left(mode));
            let read = read_more(upstream, rbuf, want, s.proxy_read_timeout);
            let (r, b) = if pending {
                let (read, (wrote, w)) =
                    monoio::join!(read, write_all(client, wbuf, s.send_timeout));
                wbuf = w;
                if let Err(e) = wrote {
                    self.log_client_error(&e);
                    end.client_ok = false;
                    *bufs = [read.1, wbuf];
                    return;
                }
                read
            } else {
                read.await
            };
            rbuf = b;
            if !took(r, mode, end) {
                break;
            }
            match consume_in_place(mode, &mut rbuf, &mut end.extra) {
                Ok(done) => end.complete |= done,
                Err(bad) => {
                    end.failure = Some(bad);
                    break;
                }
            }
            end.body_sent += rbuf.len() as u64;
            std::mem::swap(&mut rbuf, &mut wbuf);
            pending = true;
            if end.complete {
                let (wrote, w) = write_all(client, wbuf, s.send_timeout).await;
                wbuf = w;
                if let Err(e) = wrote {
                    self.log_client_error(&e);
                    end.client_ok = false;
                }
                break;
            }
        }
        *bufs = [rbuf, wbuf];
    }
}

/// What is left of a `Content-Length` body.
fn left(mode: &Mode) -> Option<u64> {
    match mode {
        Mode::Length(left) => Some(*left),
        _ => None,
    }
}

/// Records what a read brought; false when the loop must stop: a failure, or the close
/// that ends a close-delimited body.
fn took(r: Result<usize, IoFail>, mode: &Mode, end: &mut End) -> bool {
    let failure = match r {
        Ok(0) if matches!(mode, Mode::UntilClose) => {
            end.complete = true;
            return false;
        }
        Ok(0) => Failure::new(Phase::ReadBody, Cause::Closed),
        Err(IoFail::Timeout) => Failure::new(Phase::ReadBody, Cause::TimedOut),
        Err(IoFail::Io(e)) => Failure::io(Phase::ReadBody, &e),
        Ok(n) => {
            end.read += n as u64;
            return true;
        }
    };
    end.failure = Some(failure);
    false
}
