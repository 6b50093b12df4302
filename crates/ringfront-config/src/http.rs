//! The `http` block: upstreams, servers, log formats and the http-level settings every server
//! inherits, read in file order (nginx needs a `log_format` before the `access_log` using it).

use crate::build::Env;
use crate::directives::{for_each, unhandled, HTTP};
use crate::error::ConfigError;
use crate::handlers::{apply, Scope};
use crate::health::match_block;
use crate::logs::{combined, log_format};
use crate::model::{GeoBlock, LogFormat, MapBlock, Match, SplitClients, Upstream};
use crate::server::{server_block, ServerRaw};
use crate::settings::Level;
use crate::tree::Directive;
use crate::upstream::{upstream_block, Zone};
use crate::values::err;

/// The http block as written, before inheritance and `proxy_pass` resolution.
#[derive(Debug, Clone)]
pub(crate) struct HttpRaw {
    pub settings: Level,
    pub servers: Vec<ServerRaw>,
    pub upstreams: Vec<Upstream>,
    pub log_formats: Vec<LogFormat>,
    pub maps: Vec<MapBlock>,
    pub splits: Vec<SplitClients>,
    pub geos: Vec<GeoBlock>,
    /// `match NAME { ... }` blocks, looked up by `health_check match=NAME` at the end.
    pub matches: Vec<Match>,
    /// The upstreams' shared memory zones, checked once the whole file is read.
    pub zones: Vec<Zone>,
    /// The rewrite module's variables, `Variable::User(i)` the `i`th.
    pub variables: Vec<String>,
    /// For each of `variables`, whether a `set` gives it values.
    pub variable_set: Vec<bool>,
    /// Some template uses `$1`..`$9`.
    pub captures: bool,
    pub uses: crate::template::Uses,
    /// `limit_req_zone` / `limit_conn_zone` zones (limits.rs).
    pub limit_zones: Vec<crate::limits_model::LimitZone>,
}

impl HttpRaw {
    pub(crate) fn empty() -> Self {
        HttpRaw {
            settings: Level::default(),
            servers: Vec::new(),
            upstreams: Vec::new(),
            log_formats: vec![combined()],
            maps: Vec::new(),
            splits: Vec::new(),
            geos: Vec::new(),
            matches: Vec::new(),
            zones: Vec::new(),
            variables: Vec::new(),
            variable_set: Vec::new(),
            captures: false,
            uses: crate::template::Uses::default(),
            limit_zones: Vec::new(),
        }
    }
}

/// Reads an `http` block.
pub(crate) fn http_block(d: &Directive, env: &Env<'_>) -> Result<HttpRaw, ConfigError> {
    let mut http = HttpRaw::empty();
    // Templates anywhere in the block may use a map defined later in it.
    let custom = crate::custom_vars::collect(d.children())?;
    http.variables = custom
        .iter()
        .filter(|(_, v)| matches!(v, crate::model::Variable::User(_)))
        .map(|(n, _)| n.clone())
        .collect();
    let set = crate::custom_vars::set_names(d.children());
    http.variable_set = http.variables.iter().map(|v| set.contains(v)).collect();
    let _vars = crate::template::with_custom(custom);
    crate::template::take_captures_used();
    crate::template::take_uses();
    crate::limits::begin();
    for_each(d.children(), HTTP, |c| {
        match c.name.as_str() {
            "map" => http.maps.push(crate::map::map_block(c)?),
            "geo" => http.geos.push(crate::geo::geo_block(c)?),
            "split_clients" => http
                .splits
                .push(crate::split_clients::split_clients_block(c)?),
            "upstream" => {
                // Upstream names compare case-insensitively in nginx.
                let name = c.arg(0);
                if http
                    .upstreams
                    .iter()
                    .any(|u| u.name.eq_ignore_ascii_case(name))
                {
                    return Err(err(c, format!("duplicate upstream \"{name}\"")));
                }
                let upstream = upstream_block(c, env.host, &mut http.zones)?;
                http.upstreams.push(upstream);
            }
            "server" => {
                let server = server_block(c, env, &http.log_formats)?;
                http.servers.push(server);
            }
            "log_format" => log_format(c, &mut http.log_formats)?,
            "match" => {
                let name = c.arg(0);
                if http.matches.iter().any(|m| m.name == name) {
                    return Err(err(c, format!("duplicate match \"{name}\"")));
                }
                http.matches.push(match_block(c)?);
            }
            _ => {
                let scope = Scope {
                    prefix: env.prefix,
                    formats: &http.log_formats,
                    regex_location: false,
                    location: false,
                    alias_len: None,
                    host: env.host,
                };
                if !apply(&mut http.settings, c, &scope)? {
                    return Err(unhandled(c));
                }
            }
        }
        Ok(())
    })?;
    crate::resolver::finish_upstreams(&mut http.upstreams, &http.settings.resolver)?;
    http.captures = crate::template::take_captures_used();
    http.uses = crate::template::take_uses();
    let upstream_zones: Vec<String> = http.zones.iter().map(|z| z.name.clone()).collect();
    http.limit_zones = crate::limits::take(&upstream_zones)?;
    Ok(http)
}
