//! The nginx Plus API's write methods (`api write=on`): POST, PATCH and DELETE of
//! `/N/http/upstreams/NAME/servers[/ID]`. The request runs on its worker; the change is one
//! [`Shared::set_members`] (the membership change the resolver uses: a new snapshot that
//! adopts the old one's board, swapped in without a lock), then the upstream's `state`
//! file, if any, is rewritten (upstream_state.rs). Only a group with a `zone` can be changed, as nginx Plus.
//!
//! Ids: a `server` line's id is its index; a server the API adds takes the next id past
//! every id the group has had. The key of a static line holds what the API made of it.

use ringfront_config::{Config, Upstream, UpstreamServer};

use crate::members::{self, Members, Unbuilt};
use crate::status::api::{answer, error, ApiResponse};
use crate::status::api_servers::{self, Refused};
use crate::Shared;

/// One write request.
pub struct Write<'a> {
    pub method: &'a str,
    /// The upstream's name and the id as written (`None`: the group's list).
    pub upstream: &'a str,
    pub id: Option<&'a str>,
    pub body: &'a [u8],
    pub request_id: &'a str,
}

/// Why a write was not made.
enum Fail {
    Api(ApiResponse),
    Unbuilt(String),
}

impl From<Unbuilt> for Fail {
    fn from(e: Unbuilt) -> Fail {
        Fail::Unbuilt(e.0)
    }
}

/// Answers one write request.
pub fn handle(shared: &Shared, w: &Write<'_>) -> ApiResponse {
    let rid = w.request_id;
    let snap = shared.snapshot.load_full();
    let Some(cfg) = snap.config.clone() else {
        return error(500, "no configuration", "InternalError", rid);
    };
    let Some(up) = group(&cfg, w.upstream) else {
        let text = format!("unknown upstream \"{}\"", w.upstream);
        return error(404, &text, "UpstreamNotFound", rid);
    };
    if up.zone.is_none() {
        let text = format!("upstream \"{}\" is static", up.name);
        return error(400, &text, "UpstreamStatic", rid);
    }
    let made = shared.change_members(&up.name, |cfg, members| {
        let up = group(cfg, w.upstream).ok_or_else(|| {
            let text = format!("unknown upstream \"{}\"", w.upstream);
            Fail::Api(error(404, &text, "UpstreamNotFound", rid))
        })?;
        edit(up, members, w).map_err(Fail::Api)
    });
    match made {
        Ok(r) => {
            crate::upstream_state::save(shared, &up.name);
            r
        }
        Err(Fail::Api(r)) => r,
        Err(Fail::Unbuilt(e)) => error(500, &e, "InternalError", rid),
    }
}

fn group<'a>(cfg: &'a Config, name: &str) -> Option<&'a Upstream> {
    cfg.http
        .upstreams
        .iter()
        .find(|u| u.name == name && !u.implicit)
}

/// The change `w` asks of `up`'s members, made in `members`, and its answer.
fn edit(up: &Upstream, members: &mut Members, w: &Write<'_>) -> Result<ApiResponse, ApiResponse> {
    let rid = w.request_id;
    let servers = members::servers_of(up, members);
    let refusal = |r: Refused| error(r.status, &r.text, r.code, rid);
    let mut out = String::new();
    match (w.method, w.id) {
        ("POST", None) => {
            let s = api_servers::apply(&api_servers::fresh(), w.body, true).map_err(refusal)?;
            let id = next_id(up, members, &servers);
            api_servers::conf(&mut out, id, &s);
            members.insert((up.name.clone(), id), vec![s]);
            Ok(answer(201, out))
        }
        ("PATCH", Some(id)) => {
            let (id, base) = find(&servers, id, rid)?;
            immutable(up, id, rid)?;
            let s = api_servers::apply(base, w.body, false).map_err(refusal)?;
            api_servers::conf(&mut out, id, &s);
            members.insert((up.name.clone(), id), vec![s]);
            Ok(answer(200, out))
        }
        ("DELETE", Some(id)) => {
            let (id, _) = find(&servers, id, rid)?;
            immutable(up, id, rid)?;
            members.insert((up.name.clone(), id), Vec::new());
            let left: Vec<_> = servers.into_iter().filter(|(i, _)| *i != id).collect();
            api_servers::list(&mut out, &left);
            Ok(answer(200, out))
        }
        _ => Err(error(405, "method not allowed", "MethodNotAllowed", rid)),
    }
}

/// The server `id` names in `servers` (its first address's entry).
fn find<'a>(
    servers: &'a [(usize, UpstreamServer)],
    id: &str,
    rid: &str,
) -> Result<(usize, &'a UpstreamServer), ApiResponse> {
    let missing = || {
        let text = format!("server with ID \"{id}\" does not exist");
        error(404, &text, "UpstreamServerNotFound", rid)
    };
    if !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(missing());
    }
    let n: usize = id.parse().map_err(|_| missing())?;
    servers
        .iter()
        .find(|(i, _)| *i == n)
        .map(|(i, s)| (*i, s))
        .ok_or_else(missing)
}

/// The servers of a `resolve` line belong to the resolver.
fn immutable(up: &Upstream, id: usize, rid: &str) -> Result<(), ApiResponse> {
    match up.servers.get(id) {
        Some(line) if line.resolve.is_some() => {
            let text = format!("server with ID \"{id}\" is resolved by the resolver");
            Err(error(400, &text, "UpstreamServerImmutable", rid))
        }
        _ => Ok(()),
    }
}

/// Past every id the group has had: its lines and every key the API has used (a deleted
/// server's id is not given again).
fn next_id(up: &Upstream, members: &Members, servers: &[(usize, UpstreamServer)]) -> usize {
    let keys = members
        .keys()
        .filter(|(name, _)| *name == up.name)
        .map(|(_, i)| i + 1);
    let ids = servers.iter().map(|(i, _)| i + 1);
    keys.chain(ids).max().unwrap_or(0).max(up.servers.len())
}
