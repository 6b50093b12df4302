//! What the rewrite directives changed for one request: the URI and arguments, the
//! variables `set` gave values, and the captures of the last successful regex match. Empty
//! (nothing allocated) for a configuration without rewrite directives.

/// Captures `$0`..`$9`, as nginx keeps them (`r->captures`).
const CAPTURES: usize = 10;

/// What an `error_page` redirect left on the request.
#[derive(Debug, Default, Clone, Copy)]
pub struct ErrorState {
    /// nginx's `r->err_status`: the status the redirected request's answer goes out with
    /// unless it makes a special response of its own; `Some(0)`: its own status.
    pub status: Option<u16>,
    /// nginx's `r->error_page` (`recursive_error_pages off`): no further error page.
    pub done: bool,
    /// The method became GET (nginx's `ngx_http_send_error_page` of a non-HEAD request).
    pub get: bool,
}

impl ErrorState {
    /// The status a response made with `status` goes out with.
    pub fn sent(&self, status: u16) -> u16 {
        self.status.filter(|&s| s != 0).unwrap_or(status)
    }
}

#[derive(Debug, Default)]
pub struct RwState {
    /// The rewritten URI, or the request's own decoded when it differs from the target
    /// (`ringfront_http::uri`); `None`: the target's path as it came.
    pub uri: Option<String>,
    /// The request's URI held `%XX` escapes (nginx's `r->quoted_uri`).
    pub quoted: bool,
    /// The rewritten arguments; `None`: the request's own, `Some(empty)`: none.
    pub args: Option<Vec<u8>>,
    /// nginx's parser refused the request's URI (its 400): `$uri` and `$args` start empty
    /// and `$request_uri` is never set.
    pub refused_uri: bool,
    /// `Variable::User(i)`'s value; `None` until something sets it.
    pub vars: Vec<Option<Vec<u8>>>,
    /// `set $limit_rate`'s size: this request's `limit_rate` instead of the location's.
    pub limit_rate: Option<u64>,
    /// `$limit_req_status` and `$limit_conn_status` as nginx numbers them (0: unset).
    pub limit_req: u8,
    pub limit_conn: u8,
    /// The `limit_conn` counts this request holds until it ends.
    pub limit_held: crate::limits::Held,
    /// The client address realip's preaccess run decided before the limits ran (the
    /// request then keeps it even when a limit answers).
    pub(crate) preaccess_client: Option<crate::realip::Client>,
    /// The access phase refused the request (its status is the outcome): the body is not
    /// read (access.rs).
    pub(crate) access_refused: bool,
    /// A rewrite changed the URI (nginx's `r->internal`): `internal` locations may be
    /// chosen.
    pub internal: bool,
    /// The URI or the arguments changed (a rewrite, `set $args`; nginx's
    /// `r->valid_unparsed_uri = 0`): the request line sent upstream is built from them.
    pub rebuild: bool,
    /// A `rewrite ... break` (or `break` after a change) made the location's `proxy_pass`
    /// URI part meaningless (nginx's `r->valid_location = 0`): the URI is sent whole.
    pub location_invalid: bool,
    /// The location's directives changed the URI: search the location again.
    pub uri_changed: bool,
    /// `try_files` found the file under a regex location's `alias` taken as a root: the
    /// static handler serves the alias + URI (nginx's `r->add_uri_to_alias`).
    pub add_uri_to_alias: bool,
    /// `try_files ... @name`: the next location is this named one (no location search,
    /// no server rewrite directives, the URI as it is).
    pub named: Option<String>,
    /// The values non-`volatile` maps gave this request (`Variable::Map(i)` the `i`th):
    /// nginx evaluates such a map once per request, internal redirects included.
    pub map_values: std::cell::RefCell<Vec<Option<Vec<u8>>>>,
    /// URI changes used of nginx's `NGX_HTTP_MAX_URI_CHANGES`, counted across the
    /// rewrite phases' location searches and `error_page` redirects (`r->uri_changes`).
    pub uri_changes: u32,
    /// An `error_page` redirect (error_redirect.rs) took place.
    pub error: ErrorState,
    /// The `Location` of the redirect an `error_page` redirected (nginx keeps
    /// `r->headers_out.location`): normal answers to the redirected request send it.
    pub error_location: Option<Vec<u8>>,
    /// The upstreams tried before an `error_page` redirect (nginx keeps
    /// `r->upstream_states`).
    pub error_tries: Vec<ringfront_upstream::exchange::TryRecord>,
    /// The `WWW-Authenticate` fields of an intercepted upstream 401, sent with the answer.
    pub error_authenticate: Vec<Vec<u8>>,
    /// A head refused or timed out before its request line was whole: the bytes nginx's
    /// `$request` shows (head_refusal.rs).
    pub unparsed_line: Option<Vec<u8>>,
    /// An upstream's `X-Accel-Redirect` took place: what its response left
    /// (accel_redirect.rs).
    pub accel: Option<Box<crate::accel_redirect::Carried>>,
    /// The captures of the last successful match; boxed: most requests match no regex,
    /// and this state is written and dropped once per request.
    captured: Option<Box<Captured>>,
}

/// The captures of one match, as nginx keeps them (`r->captures`).
#[derive(Debug, Default, Clone)]
struct Captured {
    /// The string the captures index into (the subject of the match).
    subject: Vec<u8>,
    caps: [Option<(usize, usize)>; CAPTURES],
    /// How many of `caps` the match set (0: a later match failed).
    n: usize,
}

impl RwState {
    /// A state whose variable slots start as `init` (`Snapshot::variables`).
    pub fn new(init: &[Option<Vec<u8>>]) -> Self {
        RwState {
            vars: init.to_vec(),
            ..RwState::default()
        }
    }

    /// Capture `n` of the last match, if it took part.
    pub fn capture(&self, n: usize) -> Option<&[u8]> {
        let c = self.captured.as_deref().filter(|c| n < c.n)?;
        let (a, b) = c.caps.get(n).copied().flatten()?;
        c.subject.get(a..b)
    }

    /// A copy with the captures of a match instead of these (a `map` regex's, for the value
    /// it chose).
    pub fn with_captures(
        &self,
        c: &regex::Captures<'_>,
        subject: &str,
        names: &[(usize, usize)],
    ) -> RwState {
        let mut s = self.copied();
        s.set_captures(c, subject, names);
        s
    }

    /// A copy (its captures too) with what an `X-Accel-Redirect`ing response left, for an
    /// answer made before the redirect (accel_redirect.rs).
    pub fn with_accel(&self, accel: crate::accel_redirect::Carried) -> RwState {
        RwState {
            accel: Some(Box::new(accel)),
            captured: self.captured.clone(),
            named: self.named.clone(),
            add_uri_to_alias: self.add_uri_to_alias,
            refused_uri: self.refused_uri,
            uri_changes: self.uri_changes,
            map_values: self.map_values.clone(),
            ..self.copied()
        }
    }

    /// A copy without the captures (what a `map` reads).
    fn copied(&self) -> RwState {
        RwState {
            uri: self.uri.clone(),
            args: self.args.clone(),
            vars: self.vars.clone(),
            limit_rate: self.limit_rate,
            limit_req: self.limit_req,
            limit_conn: self.limit_conn,
            internal: self.internal,
            quoted: self.quoted,
            rebuild: self.rebuild,
            location_invalid: self.location_invalid,
            uri_changed: self.uri_changed,
            error: self.error,
            error_location: self.error_location.clone(),
            error_tries: self.error_tries.clone(),
            error_authenticate: self.error_authenticate.clone(),
            accel: self.accel.clone(),
            ..RwState::default()
        }
    }

    /// A failed match: the captures are gone (nginx sets `r->ncaptures = 0`).
    pub fn clear_captures(&mut self) {
        if let Some(c) = self.captured.as_deref_mut() {
            c.n = 0;
        }
    }

    /// Keeps the captures of a successful match of `subject`, and fills the slots of its
    /// named groups (`names`: group index, slot).
    pub fn set_captures(
        &mut self,
        c: &regex::Captures<'_>,
        subject: &str,
        names: &[(usize, usize)],
    ) {
        let kept = self.captured.get_or_insert_with(Box::default);
        kept.subject.clear();
        kept.subject.extend_from_slice(subject.as_bytes());
        kept.n = c.len().min(CAPTURES);
        for (i, slot) in kept.caps.iter_mut().enumerate() {
            *slot = c.get(i).map(|m| (m.start(), m.end()));
        }
        for &(group, slot) in names {
            let value = c.get(group).map(|m| m.as_str().as_bytes().to_vec());
            if let Some(v) = self.vars.get_mut(slot) {
                *v = Some(value.unwrap_or_default());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_page_answer_goes_out_with_the_error_status() {
        let mut e = ErrorState::default();
        assert_eq!(e.sent(200), 200, "no error_page redirect");
        e.status = Some(404);
        assert_eq!(e.sent(200), 404);
        e.status = Some(0);
        assert_eq!(e.sent(201), 201, "`=` alone: its own status");
    }

    #[test]
    fn captures_of_the_last_match() {
        let mut s = RwState::new(&[None]);
        let re = regex::Regex::new("^/(?P<a>x+)/(y)?(z)").unwrap();
        let c = re.captures("/xx/z").unwrap();
        s.set_captures(&c, "/xx/z", &[(1, 0)]);
        assert_eq!(s.capture(0), Some(&b"/xx/z"[..]));
        assert_eq!(s.capture(1), Some(&b"xx"[..]));
        assert_eq!(s.capture(2), None, "a group that did not take part");
        assert_eq!(s.capture(3), Some(&b"z"[..]));
        assert_eq!(s.capture(4), None);
        assert_eq!(s.vars[0].as_deref(), Some(&b"xx"[..]));
        s.clear_captures();
        assert_eq!(s.capture(1), None);
        assert_eq!(s.vars[0].as_deref(), Some(&b"xx"[..]), "named values stay");
    }
}
