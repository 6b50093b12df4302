//! The fields every response ringfront sends gets besides its own, as nginx's header filter
//! and headers module write them: `Server` (per `server_tokens`) and `Date` first, the
//! location's `add_header`s last; and which upstream fields nginx's default
//! `proxy_hide_header` list drops from relayed responses.

use ringfront_config::{
    AddHeader, Expires, LocationSettings, ProxyHeaders, Template, TemplatePart, Variable,
};
use ringfront_http::{server_line, HeadWriter, Known};

use crate::req::Req;

/// Statuses `add_header` applies to without `always` (`ngx_http_headers_filter`).
pub fn safe_status(status: u16) -> bool {
    matches!(
        status,
        200 | 201 | 204 | 206 | 301 | 302 | 303 | 304 | 307 | 308
    )
}

/// What a response head gets from the configuration and the clock.
pub struct Decor<'a> {
    version: bool,
    /// The `Date` field line.
    date: [u8; crate::date::LINE_LEN],
    adds: &'a [AddHeader],
    trailers: &'a [AddHeader],
    /// `chunked_transfer_encoding`: trailers need chunks.
    chunked: bool,
    /// For variables in `add_header` values.
    req: Option<&'a Req<'a>>,
    /// For `map`, `geo` and `split_clients` variables in them.
    snap: Option<&'a crate::snapshot::Snapshot>,
    expires: &'a Expires,
    /// The answer's `Last-Modified` time, for `expires modified`.
    mtime: Option<i64>,
    /// A relayed response's tries and upstream head, for `$upstream_*` in values.
    tries: Option<&'a [ringfront_upstream::exchange::TryRecord]>,
    upstream_head: &'a [u8],
    /// What a relayed response's upstream fields go through.
    pub proxy: &'a ProxyHeaders,
    /// `$proxy_host` of a proxied response ("" otherwise).
    proxy_host: &'a str,
    /// The scheme of that upstream is https (for `$proxy_port`).
    proxy_tls: bool,
    /// `keepalive_timeout`'s header seconds (0: no `Keep-Alive` field).
    keepalive_header: u64,
}

impl<'a> Decor<'a> {
    /// For a request answered in a location with `settings`; `req` is `None` for a request
    /// refused before it was read whole.
    pub fn new(settings: &'a LocationSettings, req: Option<&'a Req<'a>>) -> Self {
        Decor {
            version: settings.server_tokens.version(),
            date: crate::date::line(&crate::date::now()),
            adds: &settings.add_headers,
            trailers: &settings.add_trailers,
            chunked: settings.chunked_transfer_encoding,
            req,
            snap: None,
            expires: &settings.files.expires,
            mtime: None,
            tries: None,
            upstream_head: &[],
            proxy: &settings.proxy_headers,
            proxy_host: "",
            proxy_tls: false,
            keepalive_header: settings.keepalive_header,
        }
    }

    /// `Connection: keep-alive` (with nginx's `Keep-Alive: timeout=N` when configured) or
    /// `Connection: close`.
    pub fn connection(&self, h: &mut HeadWriter<'_>, keep: bool) {
        if !keep {
            h.line(b"Connection: close\r\n");
            return;
        }
        h.line(b"Connection: keep-alive\r\n");
        let secs = self.keepalive_header;
        if secs > 0 {
            h.header_with(b"Keep-Alive", |out| {
                out.extend_from_slice(b"timeout=");
                ringfront_http::push_decimal(out, secs);
            });
        }
    }

    /// For a relayed response: the tries so far, the upstream's head (raw) and the
    /// location's upstream (`$proxy_host`, `$proxy_port`).
    pub fn with_upstream(
        mut self,
        cx: &'a crate::req::Cx<'a>,
        tries: &'a [ringfront_upstream::exchange::TryRecord],
        upstream_head: &'a [u8],
    ) -> Self {
        self.tries = Some(tries);
        self.upstream_head = upstream_head;
        let group = cx.loc.upstream.and_then(|u| cx.snap.groups.get(u));
        self.proxy_host = group.map_or("", |g| g.proxy_host.as_str());
        self.proxy_tls = cx.loc.upstream_tls.is_some();
        self
    }

    /// For a response proxied to the group whose `$proxy_host` this is.
    pub fn with_proxy_host(mut self, proxy_host: &'a str) -> Self {
        self.proxy_host = proxy_host;
        self
    }

    /// For a file modified at `mtime` (`expires modified`).
    pub fn with_mtime(mut self, mtime: i64) -> Self {
        self.mtime = Some(mtime);
        self
    }

    /// The same with a fixed `Date` (tests).
    #[cfg(test)]
    pub fn at(mut self, unix_secs: u64) -> Self {
        self.date = crate::date::line(&crate::date::imf_fixdate(unix_secs));
        self
    }

    /// Whether the error pages' footer names the version.
    pub fn version(&self) -> bool {
        self.version
    }

    /// `Server` and `Date`, written right after the status line as nginx does.
    pub fn first(&self, h: &mut HeadWriter<'_>) {
        self.first_unless(h, false, false);
    }

    /// The same, leaving out those the upstream's own replace (`proxy_pass_header Server`).
    pub fn first_unless(&self, h: &mut HeadWriter<'_>, server: bool, date: bool) {
        if !server {
            h.line(server_line(self.version));
        }
        if !date {
            h.line(&self.date);
        }
    }

    /// Whether an upstream field is hidden: nginx's default list, or the location's
    /// (`proxy_hide_header`, `proxy_pass_header`). `Content-Length` never is: nginx takes the
    /// length from the upstream before the list applies, and the body is framed by it.
    pub fn hides(&self, name: &[u8]) -> bool {
        self.hides_field(Known::of(name), name)
    }

    /// [`Decor::hides`] for a parsed field, whose name's kind is known already.
    #[inline]
    pub fn hides_field(&self, known: Known, name: &[u8]) -> bool {
        match &self.proxy.hide {
            None => known.hidden_by_default(),
            Some(list) => {
                known != Known::ContentLength
                    && list.iter().any(|h| name.eq_ignore_ascii_case(h.as_bytes()))
            }
        }
    }

    /// Whether the upstream's own `name` (`server` or `date`), when it has one, is passed
    /// (`proxy_pass_header`), so ours is not sent.
    pub fn upstream_sends(&self, name: &str) -> bool {
        self.proxy.hide.is_some() && !self.hides(name.as_bytes())
    }

    /// The variables of the request, for the upstream fields' rewrites.
    pub fn vars(&self) -> Option<crate::vars::Vars<'_>> {
        self.req.map(|r| {
            let mut v = r.vars(self.proxy_host, None, self.snap);
            v.proxy_tls = self.proxy_tls;
            v
        })
    }

    /// The request this answers, if it was read whole.
    pub fn req(&self) -> Option<&Req<'a>> {
        self.req
    }

    fn applies(a: &AddHeader, status: u16) -> bool {
        a.always || safe_status(status)
    }

    /// An upstream field that an `add_header ETag|Last-Modified` in effect replaces, or
    /// `Expires` and `Cache-Control`, which `expires` sets.
    pub fn replaces(&self, known: Known, name: &[u8], status: u16) -> bool {
        if *self.expires != Expires::Off
            && safe_status(status)
            && matches!(known, Known::Expires | Known::CacheControl)
        {
            return true;
        }
        self.adds.iter().any(|a| {
            a.replaces && Self::applies(a, status) && name.eq_ignore_ascii_case(a.name.as_bytes())
        })
    }

    /// Whether an `add_trailer` applies to `status`: then nginx's headers filter sets
    /// `expect_trailers`, and an HTTP/1.1 body goes chunked to carry them.
    pub fn trailers_apply(&self, status: u16) -> bool {
        self.chunked && self.trailers.iter().any(|t| Self::applies(t, status))
    }

    /// The last chunk with the `add_trailer` fields that apply to `status` (one whose value
    /// is empty left out), and the blank line that ends the body. `sent_head` is the head
    /// sent (`$sent_http_*`); `$upstream_*` see the tries given by `with_upstream`.
    pub fn last_chunk(&self, status: u16, sent_head: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(b"0\r\n");
        let vars = self.req.map(|r| {
            let mut v = r.vars(self.proxy_host, None, self.snap);
            v.proxy_tls = self.proxy_tls;
            v.status = status;
            v.sent_head = sent_head;
            if let Some(tries) = self.tries {
                v.tries = tries;
                v.upstream_head = self.upstream_head;
            }
            v
        });
        let first = out.len();
        for t in self.trailers.iter().filter(|t| Self::applies(t, status)) {
            let mark = out.len();
            out.extend_from_slice(t.name.as_bytes());
            out.extend_from_slice(b": ");
            let start = out.len();
            for part in &t.value.parts {
                match (part, &vars) {
                    (TemplatePart::Var(Variable::SentTrailer(name)), _) => {
                        let set = sent_trailer(&out[first..mark], name).map(<[u8]>::to_vec);
                        out.extend_from_slice(&set.unwrap_or_default());
                    }
                    (TemplatePart::Literal(s), _) => out.extend_from_slice(s.as_bytes()),
                    (part, Some(v)) => {
                        let one = Template {
                            parts: vec![part.clone()],
                        };
                        crate::vars::render(out, &one, v, false);
                    }
                    (_, None) => {}
                }
            }
            if out.len() == start {
                out.truncate(mark);
            } else {
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Whether `add_header ETag|Last-Modified` number `i` is replaced by a later one of the
    /// same name: nginx keeps one such field, the last set (an empty last one removes it).
    fn superseded(&self, i: usize, status: u16) -> bool {
        let a = &self.adds[i];
        a.replaces
            && self.adds[i + 1..].iter().any(|b| {
                b.replaces && Self::applies(b, status) && b.name.eq_ignore_ascii_case(&a.name)
            })
    }

    /// With the configuration's `map`, `geo` and `split_clients` variables.
    pub fn with_snap(mut self, snap: &'a crate::snapshot::Snapshot) -> Self {
        self.snap = Some(snap);
        self
    }

    /// The `add_header`s that apply to `status`, in order; one whose value is empty is left
    /// out. Nothing is built when none is configured. Without a request (refused before it
    /// was read whole) variables are empty.
    pub fn last(&self, h: &mut HeadWriter<'_>, status: u16) {
        if *self.expires != Expires::Off && safe_status(status) {
            match self.expires {
                Expires::Var { value, modified } => {
                    let mut text = Vec::new();
                    if let Some(r) = self.req {
                        // `$sent_http_*`, directly or through a `map` (the common
                        // `map $sent_http_content_type $expires`): the fields so far.
                        let mut v = r.vars(self.proxy_host, None, self.snap);
                        v.status = status;
                        crate::vars::render(
                            &mut text,
                            value,
                            &v.with_sent_head(h.written()),
                            false,
                        );
                    }
                    let text = String::from_utf8_lossy(&text);
                    // nginx fails the request on a bad value; here it writes nothing.
                    if let Ok(e) = Expires::parse(text.trim(), *modified) {
                        self.expires(h, &e);
                    }
                }
                e => self.expires(h, e),
            }
        }
        if self.adds.is_empty() {
            return;
        }
        let vars = self.req.map(|r| {
            let mut v = r.vars(self.proxy_host, None, self.snap);
            v.proxy_tls = self.proxy_tls;
            v.status = status;
            if let Some(tries) = self.tries {
                v.tries = tries;
                v.upstream_head = self.upstream_head;
            }
            v
        });
        for (i, a) in self.adds.iter().enumerate() {
            if !Self::applies(a, status) || self.superseded(i, status) {
                continue;
            }
            h.header_with(a.name.as_bytes(), |o| match &vars {
                Some(v) if crate::vars::reads_sent_fields(&a.value) => {
                    // `$sent_http_*`: the fields written so far, as nginx's headers_out.
                    let written = o.len().saturating_sub(a.name.len() + 2);
                    let sent = o[..written].to_vec();
                    crate::vars::render(o, &a.value, &v.with_sent_head(&sent), false)
                }
                Some(v) => crate::vars::render(o, &a.value, v, false),
                None => literals(o, &a.value),
            });
        }
    }
}

impl Decor<'_> {
    /// `Expires` and `Cache-Control` as nginx's `ngx_http_set_expires` writes them.
    fn expires(&self, h: &mut HeadWriter<'_>, e: &Expires) {
        let now = (crate::clock::unix_ms() / 1000) as i64;
        let (at, max_age, negative) = match *e {
            Expires::Off | Expires::Var { .. } => return,
            Expires::Epoch => {
                h.header(b"Expires", b"Thu, 01 Jan 1970 00:00:01 GMT")
                    .header(b"Cache-Control", b"no-cache");
                return;
            }
            Expires::Max => {
                h.header(b"Expires", b"Thu, 31 Dec 2037 23:55:55 GMT")
                    .header(b"Cache-Control", b"max-age=315360000");
                return;
            }
            // Saturating: a variable's value comes from the request.
            Expires::Access(t) => (now.saturating_add(t), t, t < 0),
            // The next time the (UTC: see docs) clock shows that time of day.
            Expires::Daily(t) => {
                let mut at = now - now.rem_euclid(86_400) + t;
                if at <= now {
                    at += 86_400;
                }
                (at, at - now, false)
            }
            Expires::Modified(t) => match self.mtime {
                Some(m) => {
                    let at = m.saturating_add(t);
                    (at, at.saturating_sub(now), t < 0)
                }
                None => (now.saturating_add(t), t, t < 0),
            },
        };
        h.header(
            b"Expires",
            &crate::date::imf_fixdate(u64::try_from(at).unwrap_or(0)),
        );
        if negative || max_age < 0 {
            h.header(b"Cache-Control", b"no-cache");
        } else {
            h.header_with(b"Cache-Control", |o| {
                o.extend_from_slice(b"max-age=");
                ringfront_http::push_decimal(o, max_age as u64);
            });
        }
    }
}

/// `$sent_trailer_NAME`: the value of a trailer line already in `lines` whose name is NAME
/// (`-` read as `_`, any case), as nginx's `ngx_http_variable_unknown_header`.
fn sent_trailer<'b>(lines: &'b [u8], name: &str) -> Option<&'b [u8]> {
    lines.split(|&b| b == b'\n').find_map(|l| {
        let l = l.strip_suffix(b"\r")?;
        let i = l.windows(2).position(|w| w == b": ")?;
        let same = l[..i].len() == name.len()
            && l[..i].iter().zip(name.bytes()).all(|(&a, b)| {
                let a = if a == b'-' {
                    b'_'
                } else {
                    a.to_ascii_lowercase()
                };
                a == b
            });
        same.then(|| &l[i + 2..])
    })
}

fn literals(out: &mut Vec<u8>, t: &Template) {
    for part in &t.parts {
        if let TemplatePart::Literal(s) = part {
            out.extend_from_slice(s.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nginx's `proxy_hide_header` defaults, as the parsed field's kind says.
    fn hidden(name: &[u8]) -> bool {
        Known::of(name).hidden_by_default()
    }

    #[test]
    fn hide_list_is_nginx_default() {
        for n in [
            "Date",
            "SERVER",
            "x-pad",
            "X-Accel-Expires",
            "X-Accel-Redirect",
            "x-accel-limit-rate",
            "X-Accel-Buffering",
            "X-Accel-Charset",
        ] {
            assert!(hidden(n.as_bytes()), "{n}");
        }
        for n in [
            "Dates",
            "X-Accel-Other",
            "X-Accel-",
            "Y-Accel-Expires",
            "x_accel-expires",
            "Content-Type",
            "ETag",
            "",
        ] {
            assert!(!hidden(n.as_bytes()), "{n}");
        }
        // The fast check and the configuration's list (used once a level changes it) agree.
        for n in ringfront_config::DEFAULT_HIDDEN {
            assert!(hidden(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn the_last_add_header_etag_wins_and_an_empty_one_removes_it() {
        use ringfront_config::{parse_template, AddHeader};
        let add = |name: &str, value: &str, always| AddHeader {
            name: name.into(),
            value: parse_template(value).unwrap(),
            always,
            replaces: true,
        };
        let head = |adds| {
            let settings = ringfront_config::LocationSettings {
                add_headers: adds,
                ..Default::default()
            };
            let mut out = Vec::new();
            let mut h = HeadWriter::relayed(&mut out, 200, b"OK");
            Decor::new(&settings, None).last(&mut h, 200);
            h.finish();
            String::from_utf8(out).unwrap()
        };
        let cleared = head(vec![add("ETag", "foo", true), add("ETag", "", true)]);
        assert!(!cleared.contains("ETag"), "{cleared}");
        let last = head(vec![add("ETag", "a", true), add("etag", "b", false)]);
        assert!(
            last.contains("etag: b\r\n") && !last.contains("ETag: a"),
            "{last}"
        );
    }

    #[test]
    fn the_last_chunk_carries_the_trailers_that_apply() {
        use ringfront_config::{parse_template, AddHeader};
        let add = |name: &str, value: &str, always| AddHeader {
            name: name.into(),
            value: parse_template(value).unwrap(),
            always,
            replaces: false,
        };
        let settings = ringfront_config::LocationSettings {
            add_trailers: vec![
                add("X-Var", "v$status", false),
                add("X-Empty", "", true),
                add("X-Seen", "[$sent_trailer_x_var]", true),
            ],
            ..Default::default()
        };
        let (buf, head) = crate::testutil::request_head(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        let req = crate::testutil::req(&buf, &head);
        let decor = Decor::new(&settings, Some(&req));
        assert!(decor.trailers_apply(200) && decor.trailers_apply(404));
        let mut out = Vec::new();
        decor.last_chunk(200, b"", &mut out);
        assert_eq!(out, b"0\r\nX-Var: v200\r\nX-Seen: [v200]\r\n\r\n");
        out.clear();
        decor.last_chunk(404, b"", &mut out);
        assert_eq!(out, b"0\r\nX-Seen: []\r\n\r\n");
        let none = ringfront_config::LocationSettings {
            add_trailers: vec![add("X-Var", "v", false)],
            ..Default::default()
        };
        assert!(!Decor::new(&none, None).trailers_apply(500));
    }

    #[test]
    fn expires_from_a_variable_sees_the_fields_sent_before_it() {
        let mut settings = ringfront_config::LocationSettings::default();
        settings.files.expires = Expires::Var {
            value: ringfront_config::parse_template("$sent_http_x_policy").unwrap(),
            modified: false,
        };
        let (buf, head) = crate::testutil::request_head(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        let req = crate::testutil::req(&buf, &head);
        let mut out = Vec::new();
        let mut h = HeadWriter::relayed(&mut out, 200, b"OK");
        h.header(b"X-Policy", b"max");
        Decor::new(&settings, Some(&req)).last(&mut h, 200);
        h.finish();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("Expires: Thu, 31 Dec 2037 23:55:55 GMT\r\n")
                && text.contains("Cache-Control: max-age=315360000\r\n"),
            "{text}"
        );
    }

    #[test]
    fn safe_statuses() {
        let safe: Vec<u16> = (100..600).filter(|&s| safe_status(s)).collect();
        assert_eq!(safe, [200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);
    }
}
