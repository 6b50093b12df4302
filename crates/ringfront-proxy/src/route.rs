//! Request routing as nginx does it: the virtual server by `Host` among the servers on the
//! listening address (exact name, then `*.suffix`, then `prefix.*`, else the default server),
//! then the location: exact `=`, longest prefix (`^~` stops there), nested locations, then
//! regexes in the order written, else the longest prefix.

use ringfront_config::LocationMatch;

use crate::snapshot::{LocationRt, ServerRt, Snapshot};

/// How well `name` matches `host` in a pass (exact, leading wildcard, trailing wildcard):
/// the length of the part that matched, so that the most specific wildcard wins, as in
/// nginx's wildcard hashes.
fn name_match(pass: usize, name: &str, host: &str) -> Option<usize> {
    let hit = match pass {
        // `.example.com` is both `example.com` and `*.example.com`.
        0 => name == host || name.strip_prefix('.') == Some(host),
        1 => {
            return name
                .strip_prefix('*')
                .or_else(|| name.starts_with('.').then_some(name))
                .filter(|suf| suf.starts_with('.') && host.ends_with(suf))
                .map(str::len)
        }
        _ => {
            return name
                .strip_suffix('*')
                .filter(|pre| pre.ends_with('.') && host.starts_with(pre))
                .map(str::len)
        }
    };
    hit.then_some(host.len())
}

/// Picks the server for `host` (lower-cased, port stripped) among `candidates`: exact name,
/// leading wildcard, trailing wildcard, then regex names in order, else the default server.
pub fn server<'a>(snap: &'a Snapshot, candidates: &[usize], host: &[u8]) -> Option<&'a ServerRt> {
    server_by(snap, candidates, host).map(|(s, _)| s)
}

/// The one server on an address, when it has no regex names: it answers whatever the Host
/// says, so the Host need not be looked at.
pub fn lone<'a>(snap: &'a Snapshot, candidates: &[usize]) -> Option<&'a ServerRt> {
    match candidates {
        [only] => snap
            .servers
            .get(*only)
            .filter(|s| s.name_regexes.is_empty()),
        _ => None,
    }
}

/// [`server`], with the index of the `server_name` regex that chose it (its captures are
/// the request's until another regex matches, as nginx's).
pub fn server_by<'a>(
    snap: &'a Snapshot,
    candidates: &[usize],
    host: &[u8],
) -> Option<(&'a ServerRt, Option<usize>)> {
    if let Some(s) = lone(snap, candidates) {
        return Some((s, None));
    }
    let servers = candidates.iter().filter_map(|&i| snap.servers.get(i));
    let host = std::str::from_utf8(host).unwrap_or("");
    if host.is_empty() {
        // nginx looks the empty name up too: `server_name ""`, or a server without names.
        let unnamed = servers
            .clone()
            .find(|s| s.names.is_empty() || s.names.iter().any(|n| n.is_empty()));
        if let Some(s) = unnamed {
            return Some((s, None));
        }
    } else {
        for pass in 0..3 {
            let mut best: Option<(&ServerRt, usize)> = None;
            for s in servers.clone() {
                let len = s
                    .names
                    .iter()
                    .filter_map(|n| name_match(pass, n, host))
                    .max();
                if let Some(len) = len.filter(|&l| best.is_none_or(|(_, b)| l > b)) {
                    best = Some((s, len));
                }
            }
            if let Some((s, _)) = best {
                return Some((s, None));
            }
        }
        for s in servers.clone() {
            if let Some(i) = s.name_regexes.iter().position(|re| re.is_match(host)) {
                return Some((s, Some(i)));
            }
        }
    }
    candidates
        .first()
        .and_then(|&i| snap.servers.get(i))
        .map(|s| (s, None))
}

fn longest_prefix<'a>(locs: &'a [LocationRt], path: &str) -> Option<&'a LocationRt> {
    let mut best: Option<(&LocationRt, usize)> = None;
    for l in locs {
        let p = match &l.matcher {
            Some(LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p)) => p,
            _ => continue,
        };
        if path.starts_with(p.as_str()) && best.is_none_or(|(_, n)| p.len() > n) {
            best = Some((l, p.len()));
        }
    }
    best.map(|(l, _)| l)
}

/// Returns the location and whether it was found by a regex.
fn find<'a>(locs: &'a [LocationRt], path: &str) -> Option<(&'a LocationRt, bool)> {
    for l in locs {
        if let Some(LocationMatch::Exact(p)) = &l.matcher {
            if p == path {
                return Some((l, false));
            }
        }
    }
    let prefix = longest_prefix(locs, path);
    let nested = prefix.and_then(|p| find(&p.children, path));
    if let Some(p) = prefix {
        if matches!(p.matcher, Some(LocationMatch::PrefixNoRegex(_))) {
            return Some(nested.unwrap_or((p, false)));
        }
    }
    if let Some(hit @ (_, true)) = nested {
        return Some(hit);
    }
    for l in locs {
        if let Some(re) = &l.regex {
            if re.is_match(path) {
                return Some((l, true));
            }
        }
    }
    nested.or(prefix.map(|p| (p, false)))
}

/// nginx's `auto_redirect`: a URI that is the name of a proxying prefix or exact location
/// without its final `/` (and no location of its own name) gets a 301 to the name; regex
/// locations are not looked at. The location.
pub fn auto_redirect<'a>(locs: &'a [LocationRt], path: &str) -> Option<&'a LocationRt> {
    let (mut found, mut nested) = (None, false);
    for l in locs {
        let name = match &l.matcher {
            Some(
                LocationMatch::Prefix(p)
                | LocationMatch::PrefixNoRegex(p)
                | LocationMatch::Exact(p),
            ) => p.as_str(),
            _ => continue,
        };
        nested |= !l.children.is_empty();
        // `==` and `slashed` compare lengths first: no byte is read for most locations.
        if name == path {
            return None;
        }
        let slashed = name.len() == path.len() + 1 && name.ends_with('/');
        if slashed && l.upstream.is_some() && name.starts_with(path) {
            found = Some(l);
        }
    }
    match (found, nested) {
        (None, true) => auto_redirect(&longest_prefix(locs, path)?.children, path),
        _ => found,
    }
}

/// Whether any of `locs` (nested ones too) can answer an auto redirect: a proxying prefix
/// or exact location named with a final `/` after something (`location /` never does).
pub fn has_auto_redirects(locs: &[LocationRt]) -> bool {
    locs.iter().any(|l| {
        let named = match &l.matcher {
            Some(
                LocationMatch::Prefix(p)
                | LocationMatch::PrefixNoRegex(p)
                | LocationMatch::Exact(p),
            ) => p.len() > 1 && p.ends_with('/'),
            _ => false,
        };
        (named && l.upstream.is_some()) || has_auto_redirects(&l.children)
    })
}

/// The `Location` of an auto redirect: the location's name escaped, then the arguments.
pub fn auto_location(loc: &LocationRt, args: &[u8]) -> Vec<u8> {
    let name = match &loc.matcher {
        Some(
            LocationMatch::Prefix(p) | LocationMatch::PrefixNoRegex(p) | LocationMatch::Exact(p),
        ) => p.as_bytes(),
        _ => b"",
    };
    let mut url = Vec::with_capacity(name.len() + args.len() + 1);
    crate::static_path::escape_uri(&mut url, name);
    if !args.is_empty() {
        url.push(b'?');
        url.extend_from_slice(args);
    }
    url
}

/// The server's `location @name` (`name` with its `@`).
pub fn named<'a>(server: &'a ServerRt, name: &str) -> Option<&'a LocationRt> {
    server
        .locations
        .iter()
        .find(|l| matches!(&l.matcher, Some(LocationMatch::Named(n)) if n == name))
}

/// The location for `path` (the URI without arguments), or the server's fallback.
pub fn location<'a>(server: &'a ServerRt, path: &str) -> &'a LocationRt {
    find(&server.locations, path)
        .map(|(l, _)| l)
        .unwrap_or(&server.fallback)
}

#[cfg(test)]
mod tests {
    use super::{auto_location, auto_redirect, name_match};

    fn snapshot(locations: &str) -> crate::snapshot::Snapshot {
        let text = format!(
            "events {{}}\nhttp {{\n server {{\n  listen 127.0.0.1:1;\n{locations}\n }}\n}}\n"
        );
        let host = ringfront_config::MemoryHost::default();
        let path = std::path::Path::new("/t/r.conf");
        let cfg = ringfront_config::parse_str(&text, path, &host).unwrap();
        crate::snapshot::Snapshot::build(&cfg, 1).unwrap()
    }

    #[test]
    fn auto_redirect_to_a_proxying_location_named_with_a_slash() {
        let plain = snapshot("location / { proxy_pass http://127.0.0.1:2; }");
        assert!(
            !plain.servers[0].auto_redirects,
            "`location /` never redirects"
        );
        let snap = snapshot(
            "location /a/ { proxy_pass http://127.0.0.1:2; }
             location /own { return 200; }
             location /own/ { proxy_pass http://127.0.0.1:2; }
             location /s/ { }
             location /n/ { location /n/p/ { proxy_pass http://127.0.0.1:2; } }",
        );
        let server = &snap.servers[0];
        assert!(server.auto_redirects);
        let to =
            |path: &str| auto_redirect(&server.locations, path).map(|l| auto_location(l, b"k=1"));
        assert_eq!(to("/a").as_deref(), Some(&b"/a/?k=1"[..]));
        assert_eq!(to("/n/p").as_deref(), Some(&b"/n/p/?k=1"[..]), "nested");
        assert_eq!(to("/own"), None, "a location of the URI's own name");
        assert_eq!(to("/s"), None, "not proxying");
        assert_eq!(to("/a/"), None);
        assert_eq!(to("/b"), None);
    }

    fn m(pass: usize, name: &str, host: &str) -> bool {
        name_match(pass, name, host).is_some()
    }

    #[test]
    fn server_name_forms() {
        assert!(m(0, "example.com", "example.com"));
        assert!(m(0, ".example.com", "example.com"));
        assert!(m(1, ".example.com", "www.example.com"));
        assert!(m(1, "*.example.com", "a.b.example.com"));
        assert!(!m(1, "*.example.com", "example.com"));
        assert!(m(2, "www.*", "www.example.org"));
        assert!(!m(2, "www.*", "mail.example.org"));
    }

    #[test]
    fn the_most_specific_wildcard_scores_highest() {
        let host = "www.pref.wc.example.com";
        assert!(
            name_match(1, "*.pref.wc.example.com", host) > name_match(1, "*.wc.example.com", host)
        );
        let host = "wc2.example.com.pref";
        assert!(name_match(2, "wc2.example.com.*", host) > name_match(2, "wc2.example.*", host));
    }
}
