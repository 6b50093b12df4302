//! `geo [$address] $name { ... }` (ngx_http_geo_module): a variable chosen by an address
//! (`$remote_addr` by default): `default`, networks (`10.0.0.0/8 v;`, a bare address is a
//! host) with the longest prefix winning, `delete NET;`, and `ranges` mode (`FROM-TO v;`,
//! IPv4). `proxy`/`proxy_recursive` (the realip part) are refused until the realip module
//! lands.

use std::net::Ipv4Addr;

use crate::cidr::Cidr;
use crate::error::ConfigError;
use crate::model::GeoBlock;
use crate::tree::Directive;
use crate::values::{err, template};

/// Reads one `geo` block (its variable was registered by the first pass).
pub(crate) fn geo_block(d: &Directive) -> Result<GeoBlock, ConfigError> {
    let (source, name) = match d.args.as_slice() {
        [name] => (None, name),
        [source, name] => (Some(template(d, source)?), name),
        _ => return Err(err(d, "invalid number of arguments in \"geo\" directive")),
    };
    let mut g = GeoBlock {
        name: name.trim_start_matches('$').to_ascii_lowercase(),
        source,
        default: String::new(),
        nets: Vec::new(),
        ranges: Vec::new(),
    };
    let mut ranges = false;
    for c in d.children() {
        match (c.name.as_str(), c.args.as_slice()) {
            ("ranges", []) => ranges = true,
            ("default", [v]) => g.default = v.clone(),
            ("delete", [net]) => {
                let net = cidr(c, net)?;
                g.nets.retain(|(n, _)| *n != net);
            }
            ("proxy" | "proxy_recursive", _) => {
                return Err(err(
                    c,
                    format!("\"{}\" in \"geo\" is not supported yet", c.name),
                ))
            }
            (key, [v]) if ranges => g.ranges.push(range(c, key, v)?),
            (key, [v]) => {
                let net = cidr(c, key)?;
                g.nets.retain(|(n, _)| *n != net);
                g.nets.push((net, v.clone()));
            }
            _ => return Err(err(c, "invalid number of the geo parameters")),
        }
    }
    Ok(g)
}

fn cidr(c: &Directive, text: &str) -> Result<Cidr, ConfigError> {
    Cidr::parse(text).ok_or_else(|| err(c, format!("invalid network \"{text}\"")))
}

fn range(c: &Directive, key: &str, v: &str) -> Result<(u32, u32, String), ConfigError> {
    let invalid = || err(c, format!("invalid range \"{key}\""));
    let (from, to) = key.split_once('-').ok_or_else(invalid)?;
    let from: Ipv4Addr = from.parse().map_err(|_| invalid())?;
    let to: Ipv4Addr = to.parse().map_err(|_| invalid())?;
    let (from, to) = (u32::from(from), u32::from(to));
    if from > to {
        return Err(invalid());
    }
    Ok((from, to, v.to_string()))
}
