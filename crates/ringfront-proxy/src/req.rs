//! One request as the answering code sees it — its bytes, parsed head, addresses and the
//! connection it came on — and what answering it produced (`Reply`). Shared by the session,
//! the upstream driver, the relay and the logs, so none of them imports another for types.

use std::net::SocketAddr;
use std::time::Instant;

use ringfront_http::RequestHead;
use ringfront_upstream::exchange::TryRecord;

use crate::vars::Vars;

/// What answering one request produced, for the log and the keepalive decision.
pub struct Reply {
    pub status: u16,
    pub body_bytes_sent: u64,
    pub bytes_sent: u64,
    /// The client connection may serve another request.
    pub reusable: bool,
    pub tries: Vec<TryRecord>,
    /// The relayed upstream response's head and the head sent to the client, kept (raw)
    /// for `$upstream_http_*` and `$sent_http_*` in logs only when a template reads them.
    pub upstream_head: Vec<u8>,
    pub sent_head: Vec<u8>,
    /// Nothing was sent: an `error_page` redirect is to answer instead (error_redirect.rs).
    pub redirect: Option<Box<crate::error_redirect::Redirect>>,
}

impl Reply {
    pub fn new(status: u16, body_bytes_sent: u64, bytes_sent: u64, reusable: bool) -> Self {
        Reply {
            status,
            body_bytes_sent,
            bytes_sent,
            reusable,
            tries: Vec::new(),
            upstream_head: Vec::new(),
            sent_head: Vec::new(),
            redirect: None,
        }
    }
}

impl Drop for Reply {
    /// Its try list is kept for the worker's next exchange (ringfront-upstream's spare.rs).
    fn drop(&mut self) {
        ringfront_upstream::exchange::keep_tries(std::mem::take(&mut self.tries));
    }
}

/// Request facts shared by the proxy loop and the logs.
pub struct Req<'a> {
    pub buf: &'a [u8],
    pub head: &'a RequestHead,
    pub client: SocketAddr,
    pub local: SocketAddr,
    pub server_name: &'a str,
    pub conn_id: u64,
    pub conn_requests: u64,
    pub start: Instant,
    pub path: &'a str,
    /// The client wants and may keep the connection after this response.
    pub keep_alive: bool,
    /// HEAD: answers carry no body.
    pub head_only: bool,
    /// Bytes the client sent after this request (pipelined); an upgrade tunnel starts with
    /// them.
    pub pipelined: &'a [u8],
    /// What the TLS handshake settled; `None` on a plain connection.
    pub tls: Option<&'a ringfront_tls::Info>,
    /// What the rewrite directives changed; `None` when the configuration has none.
    pub rw: Option<&'a crate::rewrite_state::RwState>,
    /// The request body for `$request_body`: empty unless a template reads it.
    pub body: &'a [u8],
    /// When the connection was accepted (`clock::now_ms`), for `$connection_time`.
    pub opened_ms: u64,
    /// The workers' counters, for `$connections_*`.
    pub stats: &'a [crate::WorkerStats],
    /// `$request_length`: the bytes of the request, head and body as they came.
    pub length: u64,
    /// The upstream tries behind an error answered after them (`$upstream_addr` in its
    /// `add_header`s); empty otherwise.
    pub tries: &'a [TryRecord],
    /// `$request_id`'s bytes (zero unless a template reads it).
    pub id: [u8; 16],
    /// The body's length once read (`$content_length` of a chunked request, as nginx).
    pub body_len: u64,
    /// The connection's PROXY protocol header (`listen ... proxy_protocol`).
    pub proxy_protocol: Option<&'a ringfront_http::ProxyHeader>,
    /// The connection's own client address when the realip module replaced `client`.
    pub realip_from: Option<SocketAddr>,
    /// The client's connection while the phases before the content wait (a `limit_req`
    /// delay watches it, client_gone.rs); `None` once the content handler has it.
    pub client_conn: Option<&'a crate::stream::ClientStream>,
    /// The connection's standing client watch (client_gone.rs), for the upstream's waits.
    pub standing: Option<&'a crate::client_gone::Standing>,
    /// `$request_body_file`: the temporary file holding the body, if it went to one.
    pub body_file: &'a [u8],
    /// `proxy_request_buffering off`: the body still to stream to the upstream (taken by
    /// the first proxying of the request).
    pub body_stream: Option<&'a std::cell::RefCell<Option<crate::body_stream::BodyStream>>>,
    /// `client_body_in_file_only`: the body's open temporary file, sent from by each try.
    pub spooled: Option<&'a crate::body_file::BodyFile>,
}

impl Req<'_> {
    pub fn vars<'b>(
        &'b self,
        proxy_host: &'b str,
        reply: Option<&'b Reply>,
        snap: Option<&'b crate::snapshot::Snapshot>,
    ) -> Vars<'b> {
        Vars {
            buf: self.buf,
            head: self.head,
            client: self.client,
            local: self.local,
            server_name: self.server_name,
            proxy_host,
            proxy_tls: false,
            conn_id: self.conn_id,
            conn_requests: self.conn_requests,
            start: self.start,
            status: reply.map_or(0, |r| r.status),
            body_bytes_sent: reply.map_or(0, |r| r.body_bytes_sent),
            bytes_sent: reply.map_or(0, |r| r.bytes_sent),
            tries: match reply {
                Some(r) => &r.tries,
                None if !self.tries.is_empty() => self.tries,
                None => self.rw.map_or(&[], |rw| &rw.error_tries),
            },
            upstream_head: reply.map_or(&[], |r| &r.upstream_head),
            sent_head: reply.map_or(&[], |r| &r.sent_head),
            body: self.body,
            opened_ms: self.opened_ms,
            stats: self.stats,
            request_length: self.length,
            request_id: self.id,
            body_len: self.body_len,
            topo: snap.map(|s| &s.topology),
            maps: snap.map_or(&[], |s| &s.maps),
            splits: snap.map_or(&[], |s| &s.splits),
            geos: snap.map_or(&[], |s| &s.geos),
            listens: snap.map_or(&[], |s| &s.listens),
            depth: std::cell::Cell::new(0),
            tls: self.tls,
            rw: self.rw,
            proxy_protocol: self.proxy_protocol,
            realip_from: self.realip_from,
            body_file: self.body_file,
        }
    }

    /// The method as the request stands: GET after an `error_page` redirect of a method
    /// other than HEAD, as nginx.
    pub fn method(&self) -> &[u8] {
        match self.rw {
            Some(rw) if rw.error.get => b"GET",
            _ => self.head.method.get(self.buf),
        }
    }

    /// `, client: ..., server: ..., request: "...", host: "..."` as nginx ends its error lines.
    pub fn log_context(&self, upstream: Option<&str>) -> String {
        log_context(self.buf, self.head, self.client, self.server_name, upstream)
    }
}

/// The tail nginx puts on error-log lines about a request.
pub fn log_context(
    buf: &[u8],
    head: &RequestHead,
    client: SocketAddr,
    server_name: &str,
    upstream: Option<&str>,
) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        ", client: {}, server: {}, request: \"{} {} HTTP/1.{}\"",
        crate::vars::client_text(client),
        server_name,
        String::from_utf8_lossy(head.method.get(buf)),
        String::from_utf8_lossy(head.target.get(buf)),
        head.minor_version
    );
    if let Some(u) = upstream {
        let _ = write!(s, ", upstream: \"{u}\"");
    }
    if let Some(h) = head.host {
        let _ = write!(s, ", host: \"{}\"", String::from_utf8_lossy(h.get(buf)));
    }
    s
}

/// Everything answering one request reads: the worker, the configuration it started on, the
/// location it matched and the request itself.
pub struct Cx<'a> {
    pub w: &'a crate::worker::Worker,
    pub snap: &'a crate::snapshot::Snapshot,
    pub loc: &'a crate::snapshot::LocationRt,
    pub req: &'a Req<'a>,
}

impl Cx<'_> {
    pub fn settings(&self) -> &ringfront_config::LocationSettings {
        &self.loc.settings
    }

    /// `http://PEER/URI` (`https://` for `proxy_pass https://`; `http://unix:PATH:/URI` for a
    /// unix-domain peer), as nginx names the upstream in its error-log lines.
    pub fn upstream_url(&self, peer: &str, uri: &str) -> String {
        let scheme = match self.loc.upstream_tls {
            Some(_) => "https",
            None => "http",
        };
        let colon = if peer.starts_with("unix:") { ":" } else { "" };
        format!("{scheme}://{peer}{colon}{uri}")
    }

    /// One error-log line about this request (`ctx` appended as nginx does).
    pub fn log(
        &self,
        level: ringfront_config::LogLevel,
        msg: std::fmt::Arguments<'_>,
        upstream: Option<&str>,
    ) {
        let ctx = self.req.log_context(upstream);
        self.w.log(
            self.snap,
            level,
            self.req.conn_id,
            format_args!("{msg}{ctx}"),
        );
    }
}
