//! `proxy_pass` with variables: the URL is evaluated per request and names, as in nginx's
//! `ngx_http_upstream_init_request`, an upstream group (an `upstream` block by its name when
//! no port is written, an implicit group by host and port), else a literal address, which
//! gets a group of its own for this request. Any other name is resolved through the
//! location's `resolver` (dns.rs; the worker's cache, else a lookup on the worker's ring):
//! a group of one peer per address for this request, or 502 with nginx's `NAME could not
//! be resolved (3: Host not found)`; without a resolver, 502 with `no resolver defined to
//! resolve NAME`.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::rc::Rc;

use ringfront_config::{LogLevel, Template};
use ringfront_upstream::{Board, PeerSpec, Topology, UpstreamSpec, WorkerPeers};

use crate::pass_url::{self, PassUrl};
use crate::pool::Pool;
use crate::proxy::{self, Group};
use crate::req::{Cx, Reply};
use crate::snapshot::GroupConf;
use crate::stream::ClientStream;
use crate::worker::PeerState;

/// Evaluates `url` and proxies the request where it points.
pub async fn run(
    cx: &Cx<'_>,
    url: &Template,
    body: Vec<u8>,
    client: ClientStream,
    out: Vec<u8>,
) -> (Reply, Option<ClientStream>) {
    let mut text = Vec::new();
    crate::vars::render(&mut text, url, &cx.req.vars("", None, Some(cx.snap)), false);
    let parsed = match pass_url::parse(&text) {
        Ok(u) => u,
        Err(e) => return refuse(cx, 500, &e.message(&text), client, out).await,
    };
    let uri = (!parsed.uri.is_empty()).then_some(&parsed.uri[..]);
    if let Some(id) = find_group(&cx.snap.groups, &parsed) {
        let Some(conf) = cx.snap.groups.get(id) else {
            return refuse(cx, 502, "", client, out).await;
        };
        let group = Group {
            id,
            topo: &cx.snap.topology,
            board: &cx.snap.board,
            conf,
            state: cx.w.peer_state(cx.snap),
            proxy_host: parsed.host_header,
            tls: parsed.tls,
            adhoc: false,
            uri,
            unix: &cx.snap.unix_paths,
        };
        return proxy::run_in(cx, &group, body, client, out).await;
    }
    let (spec, unix) = match (parsed.addr, parsed.unix) {
        (Some(addr), _) => (one_peer(addr.to_string(), addr), None),
        (None, Some(path)) => (
            one_peer(format!("unix:{path}"), UNSPECIFIED),
            Some(path.into()),
        ),
        (None, None) => match resolved(cx, &parsed).await {
            Ok(spec) => (spec, None),
            Err(line) => return refuse(cx, 502, &line, client, out).await,
        },
    };
    let peers = spec.primary.len();
    let unix = vec![unix; peers];
    let topo = Topology::new(vec![spec]);
    let board = Board::new(peers);
    let conf = adhoc_conf();
    let group = Group {
        id: 0,
        topo: &topo,
        board: &board,
        conf: &conf,
        state: Rc::new(PeerState {
            generation: 0,
            peers: RefCell::new(WorkerPeers::new(&topo, 0)),
            pool: RefCell::new(Pool::new(0)),
        }),
        proxy_host: parsed.host_header,
        tls: parsed.tls,
        adhoc: true,
        uri,
        unix: &unix,
    };
    proxy::run_in(cx, &group, body, client, out).await
}

/// A group of one peer per address `url`'s host resolves to, at the URL's port, starting
/// at the worker's next rotation (nginx rotates a cached answer's addresses); the error-log
/// line when it does not resolve.
async fn resolved(cx: &Cx<'_>, url: &PassUrl<'_>) -> Result<UpstreamSpec, String> {
    let settings = &cx.settings().resolver;
    let Some(conf) = &settings.resolver else {
        return Err(format!("no resolver defined to resolve {}", url.host));
    };
    let log = |line: &str| {
        cx.w.log(
            cx.snap,
            LogLevel::Error,
            cx.req.conn_id,
            format_args!("{line}"),
        )
    };
    let addrs =
        cx.w.dns
            .addresses(conf, settings.timeout, url.host, &log)
            .await
            .map_err(|f| format!("{} could not be resolved ({})", url.host, f.text()))?;
    let start = cx.w.dns.rotation(addrs.len());
    let mut spec = UpstreamSpec {
        name: url.host.to_string(),
        ..UpstreamSpec::default()
    };
    for i in 0..addrs.len() {
        let addr = SocketAddr::new(addrs[(start + i) % addrs.len()], url.port);
        spec.primary
            .push(one_peer(addr.to_string(), addr).primary.remove(0));
    }
    Ok(spec)
}

/// The group the URL names: an `upstream` block by name when no port is written (its port
/// is 0 in nginx), an implicit one by host and port; names compare case-insensitively.
pub fn find_group(groups: &[GroupConf], url: &PassUrl<'_>) -> Option<usize> {
    groups.iter().position(|g| {
        let (host, port) = &g.host_key;
        let port_matches = match port {
            None => url.no_port,
            Some(p) => *p == url.port,
        };
        port_matches && host.eq_ignore_ascii_case(url.host)
    })
}

/// The address of a unix-domain peer, never connected to.
const UNSPECIFIED: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// A group of one peer named `name` at `addr` (nginx's `ngx_http_upstream_create_round_robin_peer`:
/// weight 1, `max_fails=1`, `fail_timeout=10s`; a single peer is never failed out).
fn one_peer(name: String, addr: SocketAddr) -> UpstreamSpec {
    UpstreamSpec {
        name: name.clone(),
        primary: vec![PeerSpec {
            name,
            server: String::new(),
            addr,
            weight: 1,
            max_fails: 1,
            fail_timeout: 10,
            max_conns: 0,
            down: false,
            drain: false,
            slow_start_ms: 0,
        }],
        ..UpstreamSpec::default()
    }
}

/// The settings of a group made for one request: no keepalive (nginx keeps connections only
/// for `upstream` blocks with `keepalive`), so `Connection: close` is sent.
fn adhoc_conf() -> GroupConf {
    GroupConf {
        keepalive: 0,
        keepalive_timeout: std::time::Duration::ZERO,
        keepalive_requests: 1,
        keepalive_time: std::time::Duration::ZERO,
        proxy_host: String::new(),
        host_key: (String::new(), Some(0)),
        hash_key: None,
        least_time_last_byte: None,
        confirm: false,
        checks: Vec::new(),
        balancer: "round_robin",
        sticky: None,
    }
}

/// Answers `status` after logging `line` at `error` (nothing when it is empty).
async fn refuse(
    cx: &Cx<'_>,
    status: u16,
    line: &str,
    mut client: ClientStream,
    mut out: Vec<u8>,
) -> (Reply, Option<ClientStream>) {
    if !line.is_empty() {
        cx.log(LogLevel::Error, format_args!("{line}"), None);
    }
    let reply = crate::local::error(&mut client, &mut out, cx, status).await;
    cx.w.give_buf(out);
    (reply, Some(client))
}
