//! `sticky` at run time: the server ids of a group's peers (a `route=`, or the keyed hash
//! of `ringfront_upstream::sid`), finding the peer a request names (the first non-empty
//! lookup variable), and the `Set-Cookie` of `sticky cookie` on every proxied response, as
//! nginx 1.29.6's `ngx_http_upstream_sticky_cookie_insert` writes it.

use ringfront_config::model::Template;
use ringfront_config::sticky::{samesite_value, CookieExpires, Sticky, StickyCookie, StickyMode};
use ringfront_upstream::{PeerId, Upstream};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use ringfront_upstream::sessions::Sessions;

use crate::vars::{self, Vars};

/// One group's `sticky`, ready to run.
#[derive(Debug)]
pub struct StickyRt {
    pub conf: Sticky,
    /// The server id of each peer of the group, primaries then backups (peer id order).
    pub ids: Vec<String>,
    /// `sticky learn`: the sessions, shared by every worker (and kept across reloads).
    pub learned: Option<Arc<Sessions>>,
}

/// The learn zones by zone and group name, with the server ids their sessions index: a
/// reload keeps a zone's sessions, as nginx keeps a shared memory zone, while the group's
/// servers stay the same (sessions name a server by its place in the group). Read only
/// while a configuration is built.
type Zones = Mutex<HashMap<(String, String), (Vec<String>, Arc<Sessions>)>>;

fn zones() -> &'static Zones {
    static ZONES: OnceLock<Zones> = OnceLock::new();
    ZONES.get_or_init(Mutex::default)
}

impl StickyRt {
    /// `sticky` of group `group`; `ids`: the server id of each peer, in peer id order.
    pub fn build(conf: &Sticky, group: &str, ids: Vec<String>) -> StickyRt {
        let learned = match &conf.mode {
            StickyMode::Learn(l) => {
                let timeout = u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX);
                let mut z = zones().lock().unwrap_or_else(|e| e.into_inner());
                let (known, s) = z
                    .entry((l.zone.clone(), group.to_string()))
                    .or_insert_with(|| (ids.clone(), Arc::new(Sessions::new(l.size, timeout))));
                if s.timeout_ms() != timeout || s.size() != l.size || *known != ids {
                    *known = ids.clone();
                    *s = Arc::new(Sessions::new(l.size, timeout));
                }
                Some(s.clone())
            }
            _ => None,
        };
        StickyRt {
            conf: conf.clone(),
            ids,
            learned,
        }
    }

    /// `sticky learn` after a response from `peer`: the session the response creates (the
    /// first non-empty `create=` value), else the one the request named, now uses `peer`.
    pub fn learn(&self, up: &Upstream, peer: PeerId, v: &Vars<'_>, now_ms: u64) {
        let (Some(s), StickyMode::Learn(l)) = (&self.learned, &self.conf.mode) else {
            return;
        };
        let Some(i) = peer
            .checked_sub(up.primary.base)
            .filter(|&i| i < self.ids.len())
        else {
            return;
        };
        if let Some(id) = first_value(&l.create, v) {
            s.learn(&id, i, true, now_ms);
        } else if let Some(id) = first_value(&self.conf.lookup, v) {
            s.learn(&id, i, false, now_ms);
        }
    }
}

/// The server id of a peer: its `route=`, else the keyed hash of its address (under the
/// group's `secret=`, if any).
pub fn server_id(route: Option<&str>, secret: &[u8], name: &str) -> String {
    match route {
        Some(r) => r.to_string(),
        None => ringfront_upstream::sid::server_id(secret, name),
    }
}

/// The first of `templates` whose value is not empty (nginx's `ngx_http_upstream_sticky_get_id`).
pub fn first_value(templates: &[Template], v: &Vars<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for t in templates {
        out.clear();
        vars::render(&mut out, t, v, false);
        if !out.is_empty() {
            return Some(out);
        }
    }
    None
}

impl StickyRt {
    /// The peer this request names, if it names one of the group's (`now_ms` for learn's
    /// session expiry), and the first backup with that server id: nginx looks the id (a
    /// learned session's, its peer's) up on the list the request is on.
    pub fn pinned(
        &self,
        up: &Upstream,
        v: &Vars<'_>,
        now_ms: u64,
    ) -> (Option<PeerId>, Option<PeerId>) {
        let Some(id) = first_value(&self.conf.lookup, v) else {
            return (None, None);
        };
        let sid = match &self.learned {
            Some(s) => match s.lookup(&id, now_ms).and_then(|i| self.ids.get(i)) {
                Some(sid) => sid.as_bytes(),
                None => return (None, None),
            },
            None => &id[..],
        };
        use ringfront_upstream::sticky::{find, find_backup};
        (find(up, &self.ids, sid), find_backup(up, &self.ids, sid))
    }

    /// The server id of peer `peer` of group `up`.
    pub fn id_of(&self, up: &Upstream, peer: PeerId) -> Option<&str> {
        let i = peer.checked_sub(up.primary.base)?;
        self.ids.get(i).map(String::as_str)
    }

    /// `sticky learn header`: learn when the response head arrives.
    pub fn learns_at_head(&self) -> bool {
        matches!(&self.conf.mode, StickyMode::Learn(l) if l.header)
    }

    /// `sticky learn` without `header`: learn when the request ends.
    pub fn learns_at_end(&self) -> bool {
        matches!(&self.conf.mode, StickyMode::Learn(l) if !l.header)
    }

    /// `sticky cookie`'s configuration, if that is the mode.
    pub fn cookie(&self) -> Option<&StickyCookie> {
        match &self.conf.mode {
            StickyMode::Cookie(c) => Some(c),
            _ => None,
        }
    }
}

/// nginx's fixed `expires=max` attributes.
const MAX_EXPIRES: &str = "; expires=Thu, 31-Dec-37 23:55:55 GMT; max-age=315360000";

/// The `Set-Cookie` value naming server `sid`: `NAME=SID[; expires=..; max-age=N]
/// [; domain=D][; httponly][; secure][; samesite=S][; path=P]`, nginx's order.
pub fn set_cookie(c: &StickyCookie, sid: &str, v: &Vars<'_>, unix_now: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.name.len() + sid.len() + 64);
    out.extend_from_slice(c.name.as_bytes());
    out.push(b'=');
    out.extend_from_slice(sid.as_bytes());
    match c.expires {
        None => {}
        Some(CookieExpires::Max) => out.extend_from_slice(MAX_EXPIRES.as_bytes()),
        Some(CookieExpires::After(d)) => {
            let secs = d.as_secs();
            out.extend_from_slice(b"; expires=");
            out.extend_from_slice(cookie_time(unix_now.saturating_add(secs)).as_bytes());
            out.extend_from_slice(format!("; max-age={secs}").as_bytes());
        }
    }
    if let Some(t) = &c.domain {
        let mut d = Vec::new();
        vars::render(&mut d, t, v, false);
        if !d.is_empty() {
            out.extend_from_slice(b"; domain=");
            out.extend_from_slice(&d);
        }
    }
    if c.httponly {
        out.extend_from_slice(b"; httponly");
    }
    if c.secure {
        out.extend_from_slice(b"; secure");
    }
    if let Some(t) = &c.samesite {
        let mut s = Vec::new();
        vars::render(&mut s, t, v, false);
        let valid = std::str::from_utf8(&s)
            .ok()
            .and_then(samesite_value)
            .is_some();
        if !s.is_empty() {
            out.extend_from_slice(b"; samesite=");
            out.extend_from_slice(if valid { &s } else { b"strict" });
        }
    }
    if let Some(p) = &c.path {
        out.extend_from_slice(b"; path=");
        out.extend_from_slice(p.as_bytes());
    }
    out
}

/// `Thu, 31-Dec-37 23:55:55 GMT`: nginx's `ngx_http_cookie_time` (a two-digit year up to
/// 2037, four digits after).
pub fn cookie_time(unix: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    let days = (unix / 86_400) as i64;
    let (y, m, d) = crate::clock::civil(days);
    let rem = unix % 86_400;
    let month = crate::clock::MONTHS[(m as usize).saturating_sub(1) % 12];
    let year = if y > 2037 {
        format!("{y}")
    } else {
        format!("{:02}", y % 100)
    };
    format!(
        "{}, {:02}-{}-{} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        d,
        month,
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_time_as_nginx() {
        // 2145916555 is nginx's NGX_HTTP_STICKY_COOKIE_MAX_EXPIRES.
        assert_eq!(cookie_time(2_145_916_555), "Thu, 31-Dec-37 23:55:55 GMT");
        assert_eq!(cookie_time(0), "Thu, 01-Jan-70 00:00:00 GMT");
        assert_eq!(cookie_time(1_796_083_200), "Tue, 01-Dec-26 00:00:00 GMT");
        assert_eq!(cookie_time(2_208_988_800), "Sun, 01-Jan-2040 00:00:00 GMT");
    }

    #[test]
    fn routes_are_kept_and_hashes_hide_the_address() {
        assert_eq!(server_id(Some("a"), b"", "127.0.0.1:1"), "a");
        let h = server_id(None, b"", "127.0.0.1:1");
        assert_eq!(h.len(), 32);
        assert_eq!(h, server_id(None, b"", "127.0.0.1:1"));
        assert_ne!(h, server_id(None, b"k", "127.0.0.1:1"));
    }
}
