//! Relaying the chosen upstream response to the client: the head rewritten (hop-by-hop
//! fields and nginx's default `proxy_hide_header` list dropped; our `Server`, `Date`,
//! Connection and the location's `add_header`s added), the body streamed with its framing checked as it
//! passes, so that the exchange can tell whether the response ended exactly where its
//! framing said (only then may the upstream connection be pooled); `101 Switching
//! Protocols` becomes a two-way tunnel. Whether to pool is the exchange machine's decision.

use crate::stream::{ClientStream, UpstreamStream};
use monoio::io::{AsyncReadRent, AsyncWriteRent};
use ringfront_config::{IgnoreHeaders, LogLevel};
use ringfront_http::{
    BodyFraming, ChunkedDecoder, ConnectionList, HeadWriter, Known, ResponseHead,
};
use ringfront_upstream::exchange::{Cause, Event, Failure, Phase};

use crate::io::{read_more, write_all, IoFail};
use crate::paced::{read_paced, write_paced};
use crate::req::{Cx, Reply};
use crate::response_headers::Decor;

/// The response to relay and where it comes from.
pub struct Relay<'a> {
    pub cx: &'a Cx<'a>,
    /// The peer's name and the URI sent, for log lines (`http[s]://PEER/URI`): its bytes,
    /// made text only when a line is written.
    pub peer: &'a str,
    pub uri: &'a [u8],
    pub head: &'a ResponseHead,
    /// The tries so far (this one last), for `$upstream_*` in `add_header`.
    pub tries: &'a [ringfront_upstream::exchange::TryRecord],
    /// `sticky cookie`: the `Set-Cookie` value naming the peer.
    pub set_cookie: Option<&'a [u8]>,
}

/// What relaying produced.
pub struct Relayed {
    /// For the exchange machine: `Relayed { complete, clean }`, or a body failure.
    pub event: Event,
    pub reply: Reply,
    /// The client connection, unless it must close (or went into a tunnel).
    pub client: Option<ClientStream>,
    /// The upstream connection, unless it went into a tunnel.
    pub upstream: Option<UpstreamStream>,
    pub bufs: [Vec<u8>; 2],
    /// Body bytes read from the upstream (`$upstream_response_length`).
    pub body_read: u64,
}

enum Mode {
    Done,
    Length(u64),
    Chunked(ChunkedDecoder),
    Dechunk(ChunkedDecoder),
    UntilClose,
}

/// What the body passes through on its way out: the gzip filter, or our chunks ending
/// with the `add_trailer` fields, if any (never both).
struct Filters<'g> {
    gz: &'g mut Option<Box<crate::gzip_relay::RelayGzip>>,
    own_chunks: bool,
    /// The upstream's head and the one sent, for the trailers' variables.
    heads: &'g [Vec<u8>; 2],
}

/// How the body ended.
#[derive(Default)]
struct End {
    complete: bool,
    /// Bytes beyond the end of the body arrived.
    extra: bool,
    client_ok: bool,
    failure: Option<Failure>,
    body_sent: u64,
    /// Body bytes read from the upstream.
    read: u64,
    /// `limit_rate` on the writes to the client, `proxy_limit_rate` on the upstream reads.
    pacer: Option<crate::rate_limit::Pacer>,
    upstream_pacer: Option<crate::rate_limit::Pacer>,
}

impl Relay<'_> {
    /// `$proxy_host` of the group the location proxies to.
    fn proxy_host(&self) -> &str {
        let cx = self.cx;
        cx.loc
            .upstream
            .and_then(|u| cx.snap.groups.get(u))
            .map_or("", |g| g.proxy_host.as_str())
    }

    fn url(&self) -> String {
        self.cx
            .upstream_url(self.peer, &String::from_utf8_lossy(self.uri))
    }

    fn log_upstream(&self, f: &Failure) {
        self.cx
            .log(LogLevel::Error, format_args!("{f}"), Some(&self.url()));
    }

    /// nginx's lines for a client that stopped reading or went away mid-response (`info`,
    /// as nginx logs client-side errors).
    fn log_client_error(&self, e: &IoFail) {
        let what = match e {
            IoFail::Timeout => "client timed out (110: Connection timed out)".to_string(),
            IoFail::Io(e) => format!("writev() failed {}", crate::io::errno_text(e)),
        };
        self.cx.log(
            LogLevel::Info,
            format_args!("{what} while sending to client"),
            Some(&self.url()),
        );
    }

    pub async fn run(
        self,
        rbuf: Vec<u8>,
        upstream: UpstreamStream,
        mut client: ClientStream,
        mut out: Vec<u8>,
    ) -> Relayed {
        let req = self.cx.req;
        let s = self.cx.settings();
        let status = self.head.status;
        let upgrade = status == 101 && req.head.upgrade;
        let framing = if upgrade {
            BodyFraming::None
        } else {
            self.head.framing(req.head_only)
        };
        let mut mode = match framing {
            BodyFraming::None => Mode::Done,
            BodyFraming::Length(n) => Mode::Length(n),
            // An HTTP/1.0 client, or `chunked_transfer_encoding off`: unframed, then close.
            BodyFraming::Chunked if req.head.minor_version == 0 || !s.chunked_transfer_encoding => {
                Mode::Dechunk(ChunkedDecoder::new())
            }
            BodyFraming::Chunked => Mode::Chunked(ChunkedDecoder::new()),
            BodyFraming::UntilClose => Mode::UntilClose,
        };
        let mut gz = s
            .gzip
            .as_ref()
            .and_then(|g| crate::gzip_relay::start(g, self.cx, self.head, &rbuf));
        let compresses = gz.as_ref().is_some_and(|g| g.compresses());
        // A body that ends with the upstream's close goes to an HTTP/1.1 client as chunks of
        // ours, so its connection stays open (nginx's chunked filter; HTTP/1.0 upstream
        // requests, the default, get such bodies from many servers).
        let close_chunked = matches!(mode, Mode::UntilClose)
            && s.chunked_transfer_encoding
            && !compresses
            && crate::trailers::possible(req.head.minor_version, req.head_only);
        let keep = req.keep_alive
            && !upgrade
            && match gz.as_ref().filter(|g| g.compresses()) {
                Some(g) => g.keeps_alive(),
                None => close_chunked || !matches!(mode, Mode::UntilClose | Mode::Dechunk(_)),
            };
        if let (Mode::Chunked(dec), true) = (&mode, compresses) {
            // Compressed: the upstream's chunks are decoded before zlib.
            mode = Mode::Dechunk(dec.clone());
        }
        out.clear();
        let upstream_head = rbuf.get(..self.head.head_len).unwrap_or_default();
        let mut decor = Decor::new(s, Some(req))
            .with_snap(self.cx.snap)
            .with_upstream(self.cx, self.tries, upstream_head)
            .with_proxy_host(self.proxy_host());
        // `add_trailer`: an HTTP/1.1 body goes chunked, ours, to end with the trailers
        // (nginx's chunked filter with `expect_trailers`; the upstream's length dropped).
        // Not on a compressed body (the gzip filter frames it).
        let trailers = !s.add_trailers.is_empty()
            && !matches!(mode, Mode::Done)
            && !compresses
            && crate::trailers::possible(req.head.minor_version, req.head_only)
            && decor.trailers_apply(status);
        // Chunks of ours: for the trailers, or for a body that ends with the close.
        let own_chunks = trailers || close_chunked;
        if trailers {
            if let Mode::Chunked(dec) = mode {
                mode = Mode::Dechunk(dec);
            }
        }
        // `expires modified` counts from the upstream's `Last-Modified`, as nginx.
        if let Some(t) = self
            .head
            .header(&rbuf, "last-modified")
            .and_then(crate::http_time::parse)
        {
            decor = decor.with_mtime(t);
        }
        let chunk_out = matches!(mode, Mode::Chunked(_)) || own_chunks;
        let head_bytes = encode_head(
            self.head,
            &rbuf,
            upgrade,
            keep,
            chunk_out,
            &decor,
            gz.as_deref(),
            self.set_cookie,
            &mut out,
        );
        let head_bytes = crate::error_redirect::relayed_head(&mut out, self.cx, head_bytes) as u64;
        // Body bytes that came with the head.
        let initial = rbuf.get(self.head.head_len..).unwrap_or(&[]);
        let accel_rate = self
            .head
            .header(&rbuf, "x-accel-limit-rate")
            .filter(|_| !s.proxy_headers.ignores(IgnoreHeaders::XA_LIMIT_RATE));
        let mut end = End {
            read: initial.len() as u64,
            pacer: crate::paced::relayed_pacer(self.cx, accel_rate),
            upstream_pacer: crate::paced::upstream_pacer(self.cx),
            ..End::default()
        };
        if let Some(p) = end.upstream_pacer.as_mut() {
            // The head and the body bytes with it were read already.
            p.wrote(rbuf.len() as u64, crate::clock::now_ms());
        }
        let heads = self.kept_heads(&rbuf, &out, head_bytes, trailers);
        if upgrade {
            // What the upstream sent right behind its 101 is the tunnel's first bytes.
            out.extend_from_slice(initial);
        }
        match consume(&mut mode, initial, &mut out, &mut end.extra) {
            Ok(done) => end.complete = done,
            Err(bad) => end.failure = Some(bad),
        }
        if let Some(g) = gz.as_mut() {
            g.seal(&mut out, head_bytes as usize, end.complete);
        }
        if own_chunks {
            let last = end.complete.then(|| self.last_chunk(&heads, end.read));
            crate::trailers::frame(&mut out, head_bytes as usize, last.as_deref());
        }
        end.body_sent = out.len() as u64 - head_bytes;
        let pacer = end.pacer.as_mut().filter(|_| !upgrade);
        let (r, o) = write_paced(&mut client, out, s.send_timeout, pacer).await;
        out = o;
        if let Err(e) = r {
            self.log_client_error(&e);
            return self.done(end, head_bytes, None, Some(upstream), [rbuf, out], heads);
        }
        end.client_ok = true;
        if upgrade {
            let early = req.pipelined.to_vec();
            // The upgraded connection's bytes to the client count as body, as nginx's.
            end.body_sent += tunnel(
                client,
                upstream,
                early,
                s.proxy_read_timeout,
                s.send_timeout,
            )
            .await;
            end.complete = true;
            return self.done(end, head_bytes, None, None, [rbuf, out], heads);
        }
        let mut upstream = upstream;
        let mut bufs = [rbuf, out];
        if !end.complete && end.failure.is_none() {
            let mut filters = Filters {
                gz: &mut gz,
                own_chunks,
                heads: &heads,
            };
            // Boxed, behind a pointer the compiler does not see through: a body that needs
            // more reads is a large one, and its loop stays out of the code (and the
            // future's state) that every response runs (measured: 170 instructions per
            // small response).
            let body: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>> =
                Box::pin(self.body(
                    &mut mode,
                    &mut filters,
                    &mut upstream,
                    &mut client,
                    &mut bufs,
                    &mut end,
                ));
            body.await;
        }
        if let Some(f) = &end.failure {
            self.log_upstream(f);
        }
        let ok = end.complete && end.client_ok && end.failure.is_none();
        let client = ok.then_some(client);
        let reply_keep = keep;
        let mut r = self.done(end, head_bytes, client, Some(upstream), bufs, heads);
        r.reply.reusable = reply_keep && r.client.is_some();
        r
    }

    /// The last chunk and the `add_trailer` fields, evaluated at the body's end as nginx:
    /// `$upstream_response_length` and `$upstream_bytes_received` count the `read` body
    /// bytes (nginx finalizes the upstream's state before the last buffer goes out).
    fn last_chunk(&self, [got, sent]: &[Vec<u8>; 2], read: u64) -> Vec<u8> {
        let mut tries = self.tries.to_vec();
        if let Some(t) = tries.last_mut() {
            t.response_length = read;
            t.bytes_received = self.head.head_len as u64 + read;
        }
        let mut out = Vec::new();
        Decor::new(self.cx.settings(), Some(self.cx.req))
            .with_snap(self.cx.snap)
            .with_upstream(self.cx, &tries, got)
            .with_proxy_host(self.proxy_host())
            .last_chunk(self.head.status, sent, &mut out);
        out
    }

    /// The last chunk of a body that ended with the upstream's close.
    async fn send_last_chunk(
        &self,
        client: &mut ClientStream,
        heads: &[Vec<u8>; 2],
        end: &mut End,
    ) {
        let last = self.last_chunk(heads, end.read);
        end.body_sent += last.len() as u64;
        let (r, _) = write_all(client, last, self.cx.settings().send_timeout).await;
        if let Err(e) = r {
            self.log_client_error(&e);
            end.client_ok = false;
        }
    }

    /// Streams the rest of the body; the reads go into one of the worker's large buffers
    /// (body_bufs.rs) unless what is left fits the request buffer, and it goes back when the
    /// body ends.
    async fn body(
        &self,
        mode: &mut Mode,
        filters: &mut Filters<'_>,
        upstream: &mut UpstreamStream,
        client: &mut ClientStream,
        bufs: &mut [Vec<u8>; 2],
        end: &mut End,
    ) {
        if let Some(pipe) = self.pipe_for(mode, filters, upstream, client, end) {
            self.spliced(pipe, upstream, client, end).await;
            return;
        }
        let mut parked = None;
        self.body_loop(mode, filters, upstream, client, bufs, end, &mut parked)
            .await;
        if let Some(small) = parked {
            let big = std::mem::replace(&mut bufs[0], small);
            self.cx.w.big_bufs.give(big);
        }
    }

    /// The pipe for a large `Content-Length` body between plain sockets that no filter,
    /// trailer or rate limit reads (splice.rs); `None`: the loop moves the body.
    fn pipe_for(
        &self,
        mode: &Mode,
        filters: &Filters<'_>,
        upstream: &UpstreamStream,
        client: &ClientStream,
        end: &End,
    ) -> Option<(crate::splice::Pipe, u64)> {
        use crate::splice::fd_of;
        let Mode::Length(left) = *mode else {
            return None;
        };
        let untouched = filters.gz.is_none()
            && !filters.own_chunks
            && end.pacer.is_none()
            && end.upstream_pacer.is_none();
        let plain = fd_of(upstream).is_some() && fd_of(client).is_some();
        if left < crate::splice::MIN_BODY || !untouched || !plain {
            return None;
        }
        Some((self.cx.w.pipes.take()?, left))
    }

    /// Moves the rest of the body through `pipe`, with the loop's counts, timeouts and
    /// endings.
    async fn spliced(
        &self,
        (pipe, left): (crate::splice::Pipe, u64),
        upstream: &UpstreamStream,
        client: &ClientStream,
        end: &mut End,
    ) {
        use crate::splice::Stop;
        let s = self.cx.settings();
        let limits = [s.proxy_read_timeout, s.send_timeout];
        let counts = [&mut end.read, &mut end.body_sent];
        match crate::splice::body(upstream, client, &pipe, left, limits, counts).await {
            Ok(()) => {
                self.cx.w.pipes.give(pipe);
                end.complete = true;
                let beyond = crate::splice::read_beyond(upstream);
                end.read += beyond as u64;
                end.extra = beyond > 0;
            }
            Err(Stop::Upstream(f)) => {
                // Each piece left the pipe before the next read: it is empty.
                self.cx.w.pipes.give(pipe);
                end.failure = Some(f);
            }
            Err(Stop::Client(e)) => {
                self.log_client_error(&e);
                end.client_ok = false;
            }
        }
    }

    /// The body loop: a read from the upstream, then the write of what it brought; with
    /// `own_chunks`, each piece framed as a chunk of ours. `parked` keeps the request buffer
    /// while a large one reads.
    #[allow(clippy::too_many_arguments)] // `body`'s, and the parked buffer
    async fn body_loop(
        &self,
        mode: &mut Mode,
        filters: &mut Filters<'_>,
        upstream: &mut UpstreamStream,
        client: &mut ClientStream,
        bufs: &mut [Vec<u8>; 2],
        end: &mut End,
        parked: &mut Option<Vec<u8>>,
    ) {
        let s = self.cx.settings();
        let (gz, own_chunks, heads) = (&mut *filters.gz, filters.own_chunks, filters.heads);
        loop {
            let mut rbuf = std::mem::take(&mut bufs[0]);
            rbuf.clear();
            let want = crate::body_bufs::want(match mode {
                Mode::Length(left) => Some(*left),
                _ => None,
            });
            if parked.is_none() && crate::body_bufs::needs_big(&rbuf, rbuf.capacity(), want) {
                *parked = Some(rbuf);
                rbuf = self.cx.w.big_bufs.take();
            }
            let pacer = end.upstream_pacer.as_mut();
            let (r, b) = read_paced(upstream, rbuf, want, s.proxy_read_timeout, pacer).await;
            bufs[0] = b;
            match r {
                Ok(0) if matches!(mode, Mode::UntilClose) => {
                    end.complete = true;
                    if own_chunks {
                        self.send_last_chunk(client, heads, end).await;
                        return;
                    }
                    if gz.is_none() {
                        return;
                    }
                    // The end of the gzip stream still goes out (below).
                }
                Ok(0) => end.failure = Some(Failure::new(Phase::ReadBody, Cause::Closed)),
                Err(IoFail::Timeout) => {
                    end.failure = Some(Failure::new(Phase::ReadBody, Cause::TimedOut))
                }
                Err(IoFail::Io(e)) => end.failure = Some(Failure::io(Phase::ReadBody, &e)),
                Ok(n) => end.read += n as u64,
            }
            if end.failure.is_some() {
                return;
            }
            let dechunk = matches!(mode, Mode::Dechunk(_));
            let progress = if dechunk {
                bufs[1].clear();
                let [r, o] = bufs;
                consume(mode, r, o, &mut end.extra)
            } else {
                consume_in_place(mode, &mut bufs[0], &mut end.extra)
            };
            match progress {
                Ok(done) => end.complete |= done,
                Err(bad) => {
                    end.failure = Some(bad);
                    return;
                }
            }
            let mut i = usize::from(dechunk);
            if let Some(g) = gz.as_mut() {
                i = g.pass(bufs, i, end.complete);
            }
            let mut chunk = std::mem::take(&mut bufs[i]);
            if own_chunks {
                let last = end.complete.then(|| self.last_chunk(heads, end.read));
                crate::trailers::frame(&mut chunk, 0, last.as_deref());
            }
            end.body_sent += chunk.len() as u64;
            let (r, b) = write_paced(client, chunk, s.send_timeout, end.pacer.as_mut()).await;
            bufs[i] = b;
            if let Err(e) = r {
                self.log_client_error(&e);
                end.client_ok = false;
                return;
            }
            if end.complete {
                return;
            }
        }
    }

    /// The upstream's head and the one sent, for `$upstream_http_*` and `$sent_http_*` in
    /// logs and trailers: copied only when a template reads them or trailers go out.
    fn kept_heads(&self, rbuf: &[u8], out: &[u8], head_bytes: u64, trailers: bool) -> [Vec<u8>; 2] {
        if !self.cx.snap.uses.response_heads && !trailers {
            return [Vec::new(), Vec::new()];
        }
        let sent = out.get(..head_bytes as usize).unwrap_or_default();
        let got = rbuf.get(..self.head.head_len).unwrap_or_default();
        [got.to_vec(), sent.to_vec()]
    }

    fn done(
        &self,
        end: End,
        head_bytes: u64,
        client: Option<ClientStream>,
        upstream: Option<UpstreamStream>,
        bufs: [Vec<u8>; 2],
        [upstream_head, sent_head]: [Vec<u8>; 2],
    ) -> Relayed {
        let event = match end.failure {
            Some(f) => Event::Failed(f),
            None => Event::Relayed {
                complete: end.complete,
                clean: !end.extra,
            },
        };
        let mut reply = Reply::new(
            self.head.status,
            end.body_sent,
            head_bytes + end.body_sent,
            false,
        );
        reply.upstream_head = upstream_head;
        reply.sent_head = sent_head;
        Relayed {
            event,
            reply,
            client,
            upstream,
            bufs,
            body_read: end.read,
        }
    }
}

/// The head the client gets: the upstream's status; our `Server` and `Date`; the upstream's
/// fields minus hop-by-hop ones (an upgrade keeps `Upgrade`/`Connection`), nginx's hidden
/// ones and any an `add_header ETag|Last-Modified` replaces; our framing (`chunked`: ours,
/// without the upstream's `Content-Length`) and `Connection`; the location's `add_header`s;
/// then the gzip filter's changes (gzip_relay.rs). Returns its length.
#[allow(clippy::too_many_arguments)] // the head's inputs, each of its own kind
fn encode_head(
    head: &ResponseHead,
    rbuf: &[u8],
    upgrade: bool,
    keep: bool,
    chunked: bool,
    decor: &Decor<'_>,
    gz: Option<&crate::gzip_relay::RelayGzip>,
    sticky: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> usize {
    let status = head.status;
    let mut h = HeadWriter::relayed(out, status, head.reason.get(rbuf));
    // Only looked up where `proxy_pass_header` may have passed them.
    let sends = |n: &str| decor.upstream_sends(n) && head.header(rbuf, n).is_some();
    decor.first_unless(&mut h, sends("server"), sends("date"));
    // What an `X-Accel-Redirect`ing response left comes first; nginx's sticky module adds
    // its cookie when the peer is chosen, before the upstream's fields are copied.
    carried_fields(&mut h, head, rbuf, decor);
    if let Some(c) = sticky {
        h.header(b"Set-Cookie", c);
    }
    let conn = ConnectionList::new(head.known(rbuf, Known::Connection).unwrap_or(b""));
    for (i, f) in head.headers.iter().enumerate() {
        let (name, known) = (f.name.get(rbuf), f.known);
        if known == Known::ContentType && superseded_type(head, i) {
            continue;
        }
        let keep_upgrade = upgrade && matches!(known, Known::Upgrade | Known::Connection);
        if !keep_upgrade && conn.hop_by_hop(known, name) {
            continue;
        }
        if decor.hides_field(known, name)
            || decor.replaces(known, name, status)
            || (chunked && known == Known::ContentLength)
        {
            continue;
        }
        let value = f.value.get(rbuf);
        if gz.is_some_and(|g| g.field(&mut h, name, value)) {
            continue;
        }
        match crate::proxy_redirect::edited(decor, known, value) {
            Some(v) => h.header(name, &v),
            None => h.field(rbuf, f),
        };
    }
    if chunked || gz.is_some_and(|g| g.chunked()) {
        h.header(b"Transfer-Encoding", b"chunked");
    }
    if !upgrade {
        decor.connection(&mut h, keep);
    }
    decor.last(&mut h, status);
    if let Some(g) = gz {
        g.last(&mut h);
    }
    h.finish()
}

/// After an `X-Accel-Redirect`, what the redirecting response left (in nginx's list before
/// this upstream's fields): its `Content-Type` unless this one has one, the kept fields.
fn carried_fields(h: &mut HeadWriter<'_>, head: &ResponseHead, rbuf: &[u8], decor: &Decor<'_>) {
    let Some(c) = decor
        .req()
        .and_then(|r| r.rw)
        .and_then(|rw| rw.accel.as_deref())
    else {
        return;
    };
    if let Some(t) = c.content_type.as_deref() {
        if head.header(rbuf, "content-type").is_none() {
            h.header(b"Content-Type", t);
        }
    }
    for (n, v) in &c.fields {
        h.header(n, v);
    }
}

/// nginx keeps one `Content-Type` for a response (the upstream's last one wins,
/// `ngx_http_upstream_copy_content_type`): an earlier one is not relayed.
fn superseded_type(head: &ResponseHead, i: usize) -> bool {
    head.headers
        .get(i + 1..)
        .unwrap_or_default()
        .iter()
        .any(|f| f.known == Known::ContentType)
}

fn bad_chunk() -> Failure {
    Failure::new(Phase::ReadBody, Cause::InvalidChunked)
}

/// Feeds body bytes through the framing: appends what belongs to the client to `out`, flags
/// bytes beyond the end as `extra`, and says whether the body is complete.
fn consume(
    mode: &mut Mode,
    data: &[u8],
    out: &mut Vec<u8>,
    extra: &mut bool,
) -> Result<bool, Failure> {
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
            let p = dec.scan(data).map_err(|_| bad_chunk())?;
            out.extend_from_slice(&data[..p.consumed]);
            *extra |= p.consumed < data.len();
            p.done
        }
        Mode::Dechunk(dec) => {
            let p = dec.decode(data, out).map_err(|_| bad_chunk())?;
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
fn consume_in_place(mode: &mut Mode, buf: &mut Vec<u8>, extra: &mut bool) -> Result<bool, Failure> {
    Ok(match mode {
        Mode::Length(left) => {
            let take = (buf.len() as u64).min(*left) as usize;
            *extra |= take < buf.len();
            buf.truncate(take);
            *left -= take as u64;
            *left == 0
        }
        Mode::Chunked(dec) => {
            let p = dec.scan(buf).map_err(|_| bad_chunk())?;
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
) -> u64 {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut copied = 0;
    loop {
        buf.clear();
        let (res, b) = read_more(r, buf, 16 * 1024, idle).await;
        buf = b;
        match res {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        let n = buf.len() as u64;
        let (res, b) = write_all(w, buf, send).await;
        buf = b;
        if res.is_err() {
            break;
        }
        copied += n;
    }
    let _ = w.shutdown().await;
    copied
}

/// Copies bytes both ways until both sides are done (proxy_read_timeout is the idle limit),
/// starting with the bytes the client sent right behind its upgrade request (nginx sends
/// its preread bytes upstream too); the bytes that went to the client.
async fn tunnel(
    client: ClientStream,
    mut upstream: UpstreamStream,
    early: Vec<u8>,
    idle: std::time::Duration,
    send: std::time::Duration,
) -> u64 {
    if write_all(&mut upstream, early, send).await.0.is_err() {
        return 0;
    }
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let (_, to_client) = monoio::join!(
        pump(&mut cr, &mut uw, idle, send),
        pump(&mut ur, &mut cw, idle, send)
    );
    to_client
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_modes_consume() {
        let mut extra = false;
        let mut out = Vec::new();
        let mut m = Mode::Length(3);
        assert!(consume(&mut m, b"abcd", &mut out, &mut extra).unwrap());
        assert_eq!(out, b"abc");
        assert!(extra);
        let mut extra = false;
        let mut m = Mode::Chunked(ChunkedDecoder::new());
        let mut buf = b"2\r\nhi\r\n0\r\n\r\n".to_vec();
        assert!(consume_in_place(&mut m, &mut buf, &mut extra).unwrap());
        assert!(!extra);
        let mut m = Mode::Dechunk(ChunkedDecoder::new());
        out.clear();
        assert!(consume(&mut m, b"2\r\nhi\r\n0\r\n\r\n", &mut out, &mut extra).unwrap());
        assert_eq!(out, b"hi");
        let mut m = Mode::Chunked(ChunkedDecoder::new());
        let e = consume(&mut m, b"zz\r\n", &mut out, &mut extra).unwrap_err();
        assert_eq!(
            e.to_string(),
            "upstream sent invalid chunked response while reading upstream"
        );
        let mut m = Mode::Done;
        assert!(consume(&mut m, b"x", &mut out, &mut extra).unwrap());
        assert!(extra);
    }

    fn encode(raw: &[u8], decor: &Decor<'_>, mode: &Mode) -> String {
        let mut head = ResponseHead::new();
        head.parse(raw).unwrap();
        let mut out = Vec::new();
        let chunked = matches!(mode, Mode::Chunked(_));
        let n = encode_head(
            &head, raw, false, true, chunked, decor, None, None, &mut out,
        );
        assert_eq!(n, out.len());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_location_hide_list_and_the_upstream_server_passed() {
        let settings = ringfront_config::LocationSettings {
            proxy_headers: ringfront_config::ProxyHeaders {
                hide: Some(vec!["date".into(), "x-secret".into()]),
                ..Default::default()
            },
            ..Default::default()
        };
        let decor = Decor::new(&settings, None).at(0);
        let raw = b"HTTP/1.1 200 OK\r\nX-Secret: s\r\nServer: up\r\nX-Pad: p\r\nX-SECRET: t\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(
            encode(raw, &decor, &Mode::Length(0)),
            "HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nServer: up\r\n\
             X-Pad: p\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn relayed_heads_drop_hop_by_hop_fields() {
        let raw = b"HTTP/1.1 200 Fine\r\nConnection: close, X-Gone\r\nKeep-Alive: 5\r\nX-Gone: 1\r\nX-Kept: 2\r\nTransfer-Encoding: chunked\r\n\r\n";
        let settings = ringfront_config::LocationSettings::default();
        let decor = Decor::new(&settings, None).at(784_111_777);
        assert_eq!(
            encode(raw, &decor, &Mode::Chunked(ChunkedDecoder::new())),
            format!(
                "HTTP/1.1 200 Fine\r\nServer: {}\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
                 X-Kept: 2\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n",
                ringfront_http::SERVER_VERSION
            )
        );
    }

    #[test]
    fn upstream_server_date_and_accel_fields_are_hidden_and_add_headers_follow() {
        use ringfront_config::{parse_template, AddHeader, ServerTokens};
        let add = |name: &str, value: &str, always| AddHeader {
            name: name.into(),
            value: parse_template(value).unwrap(),
            always,
            replaces: name == "ETag",
        };
        let settings = ringfront_config::LocationSettings {
            server_tokens: ServerTokens::Off,
            add_headers: vec![
                add("X-Status", "s$status", true),
                add("ETag", "mine", false),
                add("X-Empty", "", true),
                add("X-Safe", "only-2xx-3xx", false),
            ],
            ..Default::default()
        };
        let (buf, head) = crate::testutil::request_head(b"GET /p HTTP/1.1\r\nHost: h\r\n\r\n");
        let req = crate::testutil::req(&buf, &head);
        let decor = Decor::new(&settings, Some(&req)).at(0);
        let raw = b"HTTP/1.1 200 OK\r\nServer: up\r\nDate: x\r\nX-Pad: y\r\nX-Accel-Buffering: no\r\nETag: \"up\"\r\nX-Up: 1\r\nContent-Length: 0\r\n\r\n";
        let want =
            "HTTP/1.1 200 OK\r\nServer: ringfront\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\
                    X-Up: 1\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\
                    X-Status: s200\r\nETag: mine\r\nX-Safe: only-2xx-3xx\r\n\r\n";
        assert_eq!(encode(raw, &decor, &Mode::Length(0)), want);
        // A 404: only `always`, and the upstream's ETag stays.
        let raw = b"HTTP/1.1 404 Not Found\r\nETag: \"up\"\r\nContent-Length: 0\r\n\r\n";
        let want = "HTTP/1.1 404 Not Found\r\nServer: ringfront\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\
                    ETag: \"up\"\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\
                    X-Status: s404\r\n\r\n";
        assert_eq!(encode(raw, &decor, &Mode::Length(0)), want);
    }
}
