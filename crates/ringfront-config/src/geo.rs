//! `geo [$address] $name { ... }` (ngx_http_geo_module): a variable chosen by an address
//! (`$remote_addr` by default): `default`, networks (`10.0.0.0/8 v;`, a bare address is a
//! host) with the longest prefix winning, `delete NET;`, `ranges` mode (`FROM-TO v;` and
//! `delete FROM-TO;`, IPv4, built as nginx builds it: geo_ranges.rs), and `proxy NET;` /
//! `proxy_recursive;` (the address is taken from `X-Forwarded-For` when the client is one
//! of those proxies).

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
        proxies: Vec::new(),
        proxy_recursive: false,
    };
    let mut ranges = false;
    for c in d.children() {
        match (c.name.as_str(), c.args.as_slice()) {
            ("ranges", []) if !g.nets.is_empty() => {
                return Err(err(
                    c,
                    "the \"ranges\" directive must be the first directive inside \"geo\" block",
                ))
            }
            ("ranges", []) => ranges = true,
            ("proxy_recursive", []) => g.proxy_recursive = true,
            ("proxy", [net]) => g.proxies.push(cidr(c, net)?),
            ("default", [v]) => g.default = v.clone(),
            ("delete", [net]) if ranges => {
                let (from, to) = range(c, net)?;
                // nginx warns `no address range "X" to delete` and goes on.
                let _ = crate::geo_ranges::delete(&mut g.ranges, from, to);
            }
            ("delete", [net]) => {
                let net = cidr(c, net)?;
                g.nets.retain(|(n, _)| *n != net);
            }
            (key, [v]) if ranges => {
                let (from, to) = range(c, key)?;
                crate::geo_ranges::add(&mut g.ranges, from, to, v)
                    .map_err(|(s, e)| overlaps(c, key, s, e))?;
            }
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

/// nginx's `range "X" overlaps "A-B"`.
fn overlaps(c: &Directive, key: &str, s: u32, e: u32) -> ConfigError {
    let (s, e) = (Ipv4Addr::from(s), Ipv4Addr::from(e));
    err(c, format!("range \"{key}\" overlaps \"{s}-{e}\""))
}

fn range(c: &Directive, key: &str) -> Result<(u32, u32), ConfigError> {
    let invalid = || err(c, format!("invalid range \"{key}\""));
    let (from, to) = key.split_once('-').ok_or_else(invalid)?;
    let from: Ipv4Addr = from.parse().map_err(|_| invalid())?;
    let to: Ipv4Addr = to.parse().map_err(|_| invalid())?;
    let (from, to) = (u32::from(from), u32::from(to));
    if from > to {
        return Err(invalid());
    }
    Ok((from, to))
}
