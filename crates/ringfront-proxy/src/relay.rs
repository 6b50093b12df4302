//! Relaying the chosen upstream response to the client: the head rewritten (hop-by-hop
//! fields dropped, our Connection added), the body streamed with its framing checked as it
//! passes so the upstream connection is pooled only when the response ended exactly where
//! its framing said; `101 Switching Protocols` becomes a two-way tunnel.

use monoio::io::{AsyncReadRent, AsyncWriteRent, Splitable};
use monoio::net::TcpStream;
use ringfront_config::{LocationSettings, LogLevel};
use ringfront_http::{connection_lists, is_hop_by_hop, BodyFraming, ChunkedDecoder};
use ringfront_upstream::{PeerId, UpstreamId};

use crate::io::{read_more, write_all, IoFail};
use crate::session::{Reply, Req};
use crate::snapshot::Snapshot;
use crate::upstream::Got;
use crate::worker::Worker;

pub struct Relay<'a> {
    pub w: &'a Worker,
    pub snap: &'a Snapshot,
    pub group: UpstreamId,
    pub peer: PeerId,
    pub peer_name: &'a str,
    pub uri: &'a str,
    pub req: &'a Req<'a>,
    pub settings: &'a LocationSettings,
    pub head_only: bool,
}

enum Mode {
    Done,
    Length(u64),
    Chunked(ChunkedDecoder),
    Dechunk(ChunkedDecoder),
    UntilClose,
}

impl Relay<'_> {
    fn log_body_error(&self, what: &str) {
        let url = format!("http://{}{}", self.peer_name, self.uri);
        self.w.log(
            self.snap,
            LogLevel::Error,
            self.req.conn_id,
            format_args!(
                "{what} while reading upstream{}",
                self.req.log_context(Some(&url))
            ),
        );
    }

    /// nginx's lines for a client that stopped reading or went away mid-response (`info`,
    /// as nginx logs client-side errors).
    fn log_client_error(&self, e: &IoFail) {
        let what = match e {
            IoFail::Timeout => "client timed out (110: Connection timed out)".to_string(),
            IoFail::Io(e) => format!("writev() failed {}", crate::io::errno_text(e)),
        };
        let url = format!("http://{}{}", self.peer_name, self.uri);
        self.w.log(
            self.snap,
            LogLevel::Info,
            self.req.conn_id,
            format_args!(
                "{what} while sending to client{}",
                self.req.log_context(Some(&url))
            ),
        );
    }

    pub async fn run(
        self,
        got: Got,
        mut rbuf: Vec<u8>,
        mut client: TcpStream,
        mut out: Vec<u8>,
    ) -> (Reply, Option<TcpStream>) {
        let Got {
            stream: mut upstream,
            head,
            requests,
            ..
        } = got;
        let req = self.req;
        let s = self.settings;
        let status = head.status;
        let upgrade = status == 101 && req.head.upgrade;
        let framing = if upgrade {
            BodyFraming::None
        } else {
            head.framing(self.head_only)
        };
        let client_v10 = req.head.minor_version == 0;
        let mut mode = match framing {
            BodyFraming::None => Mode::Done,
            BodyFraming::Length(n) => Mode::Length(n),
            BodyFraming::Chunked if client_v10 => Mode::Dechunk(ChunkedDecoder::new()),
            BodyFraming::Chunked => Mode::Chunked(ChunkedDecoder::new()),
            BodyFraming::UntilClose => Mode::UntilClose,
        };
        let keep =
            req.keep_alive && !matches!(mode, Mode::UntilClose | Mode::Dechunk(_)) && !upgrade;

        out.clear();
        out.extend_from_slice(b"HTTP/1.1 ");
        // The parser guarantees a three-digit status.
        let digits = [
            b'0' + (status / 100 % 10) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ];
        out.extend_from_slice(&digits);
        out.push(b' ');
        out.extend_from_slice(head.reason.get(&rbuf));
        out.extend_from_slice(b"\r\n");
        let conn_hdr = head.header(&rbuf, "connection").unwrap_or(b"");
        for h in &head.headers {
            let name = h.name.get(&rbuf);
            let keep_upgrade = upgrade
                && (name.eq_ignore_ascii_case(b"upgrade")
                    || name.eq_ignore_ascii_case(b"connection"));
            if !keep_upgrade && (is_hop_by_hop(name) || connection_lists(conn_hdr, name)) {
                continue;
            }
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(h.value.get(&rbuf));
            out.extend_from_slice(b"\r\n");
        }
        if matches!(mode, Mode::Chunked(_)) {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        }
        if !upgrade {
            out.extend_from_slice(if keep {
                b"Connection: keep-alive\r\n"
            } else {
                b"Connection: close\r\n"
            });
        }
        out.extend_from_slice(b"\r\n");
        let head_bytes = out.len();

        // Body bytes that came with the head.
        let initial = rbuf.get(head.head_len..).unwrap_or(&[]);
        let mut extra = false;
        // Broken chunked framing: the client gets what came before, then the connection
        // closes (never a response presented as complete); not a failure of the peer.
        let mut broken = false;
        let mut complete = match consume(&mut mode, initial, &mut out, &mut extra) {
            Ok(done) => done,
            Err(BadChunk) => {
                broken = true;
                false
            }
        };
        let mut body_sent = (out.len() - head_bytes) as u64;
        let mut bytes_sent = out.len() as u64;
        let (r, o) = write_all(&mut client, out, s.send_timeout).await;
        out = o;
        if let Err(e) = r {
            self.log_client_error(&e);
            return (reply(status, body_sent, bytes_sent, false), None);
        }
        if upgrade {
            tunnel(client, upstream, s.proxy_read_timeout, s.send_timeout).await;
            return (reply(status, body_sent, bytes_sent, false), None);
        }
        let mut client_ok = true;
        while !complete && !broken {
            rbuf.clear();
            let (r, b) = read_more(&mut upstream, rbuf, 16 * 1024, s.proxy_read_timeout).await;
            rbuf = b;
            match r {
                Ok(0) if matches!(mode, Mode::UntilClose) => {
                    complete = true;
                    break;
                }
                Ok(0) => {
                    self.log_body_error("upstream prematurely closed connection");
                    break;
                }
                Err(IoFail::Timeout) => {
                    self.log_body_error("upstream timed out (110: Connection timed out)");
                    break;
                }
                Err(IoFail::Io(e)) => {
                    self.log_body_error(&format!("recv() failed {}", crate::io::errno_text(&e)));
                    break;
                }
                Ok(_) => {}
            }
            let progress = if let Mode::Dechunk(_) = mode {
                out.clear();
                consume(&mut mode, &rbuf, &mut out, &mut extra)
            } else {
                consume_in_place(&mut mode, &mut rbuf, &mut extra)
            };
            match progress {
                Ok(done) => complete = done,
                Err(BadChunk) => {
                    broken = true;
                    break;
                }
            }
            let chunk = if let Mode::Dechunk(_) = mode {
                std::mem::take(&mut out)
            } else {
                std::mem::take(&mut rbuf)
            };
            body_sent += chunk.len() as u64;
            bytes_sent += chunk.len() as u64;
            let (r, b) = write_all(&mut client, chunk, s.send_timeout).await;
            if let Mode::Dechunk(_) = mode {
                out = b;
            } else {
                rbuf = b;
            }
            if let Err(e) = r {
                self.log_client_error(&e);
                client_ok = false;
                break;
            }
        }
        if broken {
            self.log_body_error("upstream sent invalid chunked response");
            client_ok = false;
        }
        let g = self.snap.groups.get(self.group);
        let reusable_upstream = complete
            && !extra
            && !head.connection_close
            && !matches!(framing, BodyFraming::UntilClose)
            && s.proxy_http_version != "1.0"
            && g.is_some_and(|g| g.keepalive > 0 && requests + 1 < g.keepalive_requests);
        if reusable_upstream {
            if let Some(g) = g {
                let state = self.w.peer_state(self.snap);
                state.pool.borrow_mut().put(
                    self.group,
                    self.peer,
                    g.keepalive,
                    g.keepalive_timeout,
                    upstream,
                    requests + 1,
                );
            }
        }
        let ok = complete && client_ok;
        let r = reply(status, body_sent, bytes_sent, keep && ok);
        (r, ok.then_some(client))
    }
}

fn reply(status: u16, body: u64, bytes: u64, reusable: bool) -> Reply {
    Reply {
        status,
        body_bytes_sent: body,
        bytes_sent: bytes,
        reusable,
        tries: Vec::new(),
    }
}

/// The upstream's chunked framing broke mid-body.
struct BadChunk;

/// Feeds body bytes through the framing: appends what belongs to the client to `out`, flags
/// bytes beyond the end as `extra`, and says whether the body is complete.
fn consume(
    mode: &mut Mode,
    data: &[u8],
    out: &mut Vec<u8>,
    extra: &mut bool,
) -> Result<bool, BadChunk> {
    Ok(match mode {
        Mode::Done => {
            *extra |= !data.is_empty();
            true
        }
        Mode::Length(left) => {
            let take = (data.len() as u64).min(*left) as usize;
            out.extend_from_slice(&data[..take]);
            *left -= take as u64;
            *extra |= take < data.len();
            *left == 0
        }
        Mode::Chunked(dec) => {
            let p = dec.scan(data).map_err(|_| BadChunk)?;
            out.extend_from_slice(&data[..p.consumed]);
            *extra |= p.consumed < data.len();
            p.done
        }
        Mode::Dechunk(dec) => {
            let p = dec.decode(data, out).map_err(|_| BadChunk)?;
            *extra |= p.consumed < data.len();
            p.done
        }
        Mode::UntilClose => {
            out.extend_from_slice(data);
            false
        }
    })
}

/// Like `consume` for the pass-through modes, but trims `buf` in place instead of copying.
fn consume_in_place(
    mode: &mut Mode,
    buf: &mut Vec<u8>,
    extra: &mut bool,
) -> Result<bool, BadChunk> {
    Ok(match mode {
        Mode::Length(left) => {
            let take = (buf.len() as u64).min(*left) as usize;
            *extra |= take < buf.len();
            buf.truncate(take);
            *left -= take as u64;
            *left == 0
        }
        Mode::Chunked(dec) => {
            let p = dec.scan(buf).map_err(|_| BadChunk)?;
            *extra |= p.consumed < buf.len();
            buf.truncate(p.consumed);
            p.done
        }
        Mode::UntilClose => false,
        Mode::Done | Mode::Dechunk(_) => true,
    })
}

async fn pump<R: AsyncReadRent, W: AsyncWriteRent>(
    r: &mut R,
    w: &mut W,
    idle: std::time::Duration,
    send: std::time::Duration,
) {
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        buf.clear();
        let (res, b) = read_more(r, buf, 16 * 1024, idle).await;
        buf = b;
        match res {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        let (res, b) = write_all(w, buf, send).await;
        buf = b;
        if res.is_err() {
            break;
        }
    }
    let _ = w.shutdown().await;
}

/// Copies bytes both ways until both sides are done (proxy_read_timeout is the idle limit).
async fn tunnel(
    client: TcpStream,
    upstream: TcpStream,
    idle: std::time::Duration,
    send: std::time::Duration,
) {
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    monoio::join!(
        pump(&mut cr, &mut uw, idle, send),
        pump(&mut ur, &mut cw, idle, send)
    );
}
