//! nginx's rewrite phases for one request: the server's rewrite directives, then the
//! location search, then the location's directives — again from the search when they
//! changed the URI (`last`, or a rewrite without a flag), at most 10 times, then 500 as
//! nginx ("rewrite or internal redirection cycle"). Without rewrite directives this is
//! the location search alone.

use std::borrow::Cow;

use ringfront_config::{
    FileTest, LogLevel, Return, Rewrite, RewriteFlag, Template, TemplatePart, Variable,
};

use crate::req::Req;
use crate::rewrite_rt::{Cond, IfRt, Matcher, Op, RewriteRt};
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, ServerRt, Snapshot};
use crate::vars;
use crate::worker::Worker;

/// nginx's `NGX_HTTP_MAX_URI_CHANGES`.
pub(crate) const MAX_URI_CHANGES: u32 = 10;

/// What the rewrite phases decided.
#[derive(Debug)]
pub enum Outcome<'s> {
    /// Go on to the access checks and the content (proxy, status page, 404).
    Continue,
    /// A `return` stopped them.
    Return(&'s Return),
    /// A `rewrite` answered with a redirect to this URL.
    Redirect { status: u16, location: Vec<u8> },
    /// An error status: 404 for an `internal` location, 500 for a rewrite cycle.
    Status(u16),
}

/// How a list of directives ended.
enum Flow<'s> {
    Next,
    /// `break`, `rewrite ... last|break`: the list stops.
    Exit,
    Stop(Outcome<'s>),
}

/// One run of a level's directives.
struct Run<'a, 's> {
    w: &'a Worker,
    snap: &'a Snapshot,
    /// The request, for the variables (its own `rw` is unused: the state is passed along).
    req: &'a Req<'a>,
    /// `rewrite_log` of the level.
    log: bool,
    /// The location whose directives run (`None`: the server's).
    base: Option<&'s LocationRt>,
    /// The configuration of the last `if` of `base` that held and has one.
    switched: std::cell::Cell<Option<&'s LocationRt>>,
    /// A configuration switched to proxies: nginx's content handler stays the proxy's
    /// even when a later switch has no `proxy_pass` (then 500).
    proxies: std::cell::Cell<bool>,
}

/// Runs the rewrite phases; the location that answers and how. `req.path` is the
/// request's own URI.
pub async fn process<'s>(
    w: &Worker,
    snap: &Snapshot,
    server: &'s ServerRt,
    req: &Req<'_>,
    rw: &mut RwState,
) -> (&'s LocationRt, Outcome<'s>) {
    let mut run = Run {
        w,
        snap,
        req,
        log: server.fallback.settings.rewrite_log,
        base: None,
        switched: std::cell::Cell::new(None),
        proxies: std::cell::Cell::new(false),
    };
    // An error_page redirect to a named location skips the server's rewrite directives.
    // (Each `ops` is awaited only for a list that has directives: most levels have none,
    // and an empty list's future still costs its making, poll and drop per request.)
    if rw.named.is_none() && !server.rewrite.ops.is_empty() {
        if let Flow::Stop(o) = run.ops(&server.rewrite.ops, rw).await {
            return (&server.fallback, o);
        }
    }
    loop {
        rw.uri_changed = false;
        let uri: Cow<'_, str> = match &rw.uri {
            Some(u) => Cow::Owned(u.clone()),
            None => Cow::Borrowed(req.path),
        };
        let loc = match rw.named.take() {
            None => match server
                .auto_redirects
                .then(|| crate::route::auto_redirect(&server.locations, &uri))
                .flatten()
            {
                Some(to) => {
                    let location = crate::route::auto_location(to, run.args(rw));
                    return (
                        to,
                        Outcome::Redirect {
                            status: 301,
                            location,
                        },
                    );
                }
                None => crate::route::location(server, &uri),
            },
            Some(n) => match crate::route::named(server, &n) {
                Some(l) => l,
                None => {
                    run.error(format_args!("could not find named location \"{n}\""));
                    return (&server.fallback, Outcome::Status(500));
                }
            },
        };
        if snap.captures {
            location_captures(loc, &uri, rw);
        }
        if loc.settings.internal && !rw.internal {
            return (loc, Outcome::Status(404));
        }
        if let Some((answering, outcome)) = run.location(loc, rw).await {
            // A location without limits pays the test; the phase allocates nothing unless
            // a request is delayed.
            let outcome = match crate::limits::due(answering, &outcome, rw) {
                true => {
                    // realip's preaccess run comes before the limits (nginx runs a
                    // phase's handlers in reverse order of registration): they count
                    // the address it decides, which session.rs decides the same way.
                    let mut real = crate::realip::Client {
                        addr: req.client,
                        from: req.realip_from,
                    };
                    let conf = answering.settings.real_ip.as_ref();
                    real.apply(conf, req.buf, req.head, req.proxy_protocol);
                    rw.preaccess_client = Some(real);
                    let req = Req {
                        client: real.addr,
                        realip_from: real.from,
                        ..*req
                    };
                    crate::limits::phase(w, snap, &req, answering, outcome, rw).await
                }
                false => outcome,
            };
            // The access phase (allow/deny, auth_basic), before try_files and index.
            let outcome = match matches!(outcome, Outcome::Continue)
                && crate::access::configured(answering)
            {
                true => crate::access::run(w, snap, req, answering, rw).await,
                false => outcome,
            };
            match crate::precontent::run(w, snap, req, answering, outcome, rw).await {
                Some(outcome) => return (answering, outcome),
                // nginx's internal redirect runs the server's rewrite directives again (a
                // named location's does not).
                None if rw.named.is_none() && !server.rewrite.ops.is_empty() => {
                    if let Flow::Stop(o) = run.ops(&server.rewrite.ops, rw).await {
                        return (&server.fallback, o);
                    }
                }
                None => {}
            }
        }
        if rw.uri_changes >= MAX_URI_CHANGES {
            run.error(format_args!(
                "rewrite or internal redirection cycle while processing \"{}\"",
                rw.uri.as_deref().unwrap_or_default()
            ));
            // nginx's `r->uri_changes` reached 0: no error page for this 500.
            rw.uri_changes = MAX_URI_CHANGES + 1;
            return (loc, Outcome::Status(500));
        }
        rw.uri_changes += 1;
    }
}

/// The location that answers with `Continue` when no phase before the content has work for
/// this request: no rewrite directives at the server or the location, no internal
/// redirect or named location pending, no captures to set, no `internal`, no limits, no
/// access rules, no `try_files`, no index to look for. Found without the phases' futures
/// (most of a proxy's requests); `None`: `process` runs them. Where this gives a location,
/// `process` gives the same one with `Continue`.
pub fn without_phases<'s>(
    snap: &Snapshot,
    server: &'s ServerRt,
    req: &Req<'_>,
    rw: &RwState,
) -> Option<&'s LocationRt> {
    let pending = rw.named.is_some() || rw.uri.is_some() || rw.internal;
    if pending || snap.captures || !server.rewrite.ops.is_empty() {
        return None;
    }
    if server.auto_redirects && crate::route::auto_redirect(&server.locations, req.path).is_some() {
        return None;
    }
    let loc = crate::route::location(server, req.path);
    if loc.settings.internal || !loc.rewrite.ops.is_empty() {
        return None;
    }
    let answering = limited(loc, req, rw);
    let idle = !crate::limits::due(answering, &Outcome::Continue, rw)
        && !crate::access::configured(answering)
        && crate::precontent::idle(req, answering, req.path);
    idle.then_some(answering)
}

/// `limit_except`: the block's configuration for a method it does not list (GET after an
/// `error_page` redirect).
fn limited<'s>(loc: &'s LocationRt, req: &Req<'_>, rw: &RwState) -> &'s LocationRt {
    let (Some(rt), Some(l)) = (&loc.limit, &loc.settings.limit_except) else {
        return loc;
    };
    let method = match rw.error.get {
        true => &b"GET"[..],
        false => req.head.method.get(req.buf),
    };
    match l.limits(method) {
        true => rt,
        false => loc,
    }
}

/// A regex location's captures (nginx matches locations with `ngx_http_regex_exec`).
fn location_captures(loc: &LocationRt, uri: &str, rw: &mut RwState) {
    if let Some(c) = loc.regex.as_ref().and_then(|re| re.captures(uri)) {
        rw.set_captures(&c, uri, &loc.capture_names);
    }
}

impl<'a, 's> Run<'a, 's> {
    /// The location's directives; the answer unless they changed the URI (`None`: search
    /// the location again).
    async fn location(
        &mut self,
        loc: &'s LocationRt,
        rw: &mut RwState,
    ) -> Option<(&'s LocationRt, Outcome<'s>)> {
        self.log = loc.settings.rewrite_log;
        self.base = Some(loc);
        let flow = match loc.rewrite.ops.is_empty() {
            true => Flow::Next,
            false => self.ops(&loc.rewrite.ops, rw).await,
        };
        let answering = match self.switched.take() {
            Some(c) => c,
            None => limited(loc, self.req, rw),
        };
        let proxies = self.proxies.take();
        if let Flow::Stop(o) = flow {
            return Some((answering, o));
        }
        if rw.uri_changed {
            return None;
        }
        if proxies && !answering.proxies() {
            self.line(LogLevel::Alert, format_args!("no upstream configuration"));
            return Some((answering, Outcome::Status(500)));
        }
        Some((answering, Outcome::Continue))
    }

    async fn ops<'o>(&self, ops: &'o [Op], rw: &mut RwState) -> Flow<'o> {
        for op in ops {
            let flow = match op {
                Op::Set { var, value } => {
                    let v = self.eval(value, rw);
                    if let Some(slot) = rw.vars.get_mut(*var) {
                        *slot = Some(v);
                    }
                    Flow::Next
                }
                Op::SetArgs(value) => {
                    rw.args = Some(self.eval(value, rw));
                    rw.rebuild = true;
                    Flow::Next
                }
                Op::SetLimitRate(value) => {
                    self.set_limit_rate(value, rw);
                    Flow::Next
                }
                Op::Rewrite(r) => self.rewrite(r, rw),
                Op::Return(r) => Flow::Stop(Outcome::Return(r)),
                Op::Break => {
                    if std::mem::take(&mut rw.uri_changed) {
                        rw.location_invalid = true;
                    }
                    Flow::Exit
                }
                Op::If(i) => self.if_(i, rw).await,
            };
            if !matches!(flow, Flow::Next) {
                return flow;
            }
        }
        Flow::Next
    }

    async fn if_<'o>(&self, i: &'o IfRt, rw: &mut RwState) -> Flow<'o> {
        if self.test(&i.cond, rw).await {
            // nginx switches the request to the block's configuration for good; a block
            // without directives of its own has the location's.
            if let Some(base) = self.base {
                let c = i.config.and_then(|n| base.ifs.get(n)).unwrap_or(base);
                self.proxies.set(self.proxies.get() || c.proxies());
                self.switched.set(Some(c));
            }
            // Boxed: the body's directives are this same future one level down.
            Box::pin(self.ops(&i.body, rw)).await
        } else {
            Flow::Next
        }
    }

    async fn test(&self, c: &Cond, rw: &mut RwState) -> bool {
        match c {
            Cond::Set(var) => {
                let v = self.var(var, rw);
                !(v.is_empty() || v == b"0")
            }
            Cond::Equals { var, value, negate } => {
                (self.var(var, rw) == self.eval(value, rw)) != *negate
            }
            Cond::Matches {
                var,
                matcher,
                negate,
            } => {
                let text = String::from_utf8_lossy(&self.var(var, rw)).into_owned();
                self.matches(matcher, &text, rw) != *negate
            }
            Cond::File { test, path, negate } => {
                let path = self.eval(path, rw);
                self.file(*test, &path).await != *negate
            }
        }
    }

    async fn file(&self, test: FileTest, path: &[u8]) -> bool {
        match crate::rewrite_file::test(test, path).await {
            Ok(holds) => holds,
            Err(e) => {
                let shown = String::from_utf8_lossy(path);
                let why = crate::listen::os_error(&e);
                self.line(
                    LogLevel::Crit,
                    format_args!("stat() \"{shown}\" failed ({why})"),
                );
                false
            }
        }
    }

    /// Matches `text`, keeping the captures (or clearing them on a miss), as
    /// `ngx_http_script_regex_start_code` does, with its `rewrite_log` lines.
    fn matches(&self, m: &Matcher, text: &str, rw: &mut RwState) -> bool {
        match m.re.captures(text) {
            Some(c) => {
                self.notice(format_args!("\"{}\" matches \"{text}\"", m.pattern));
                rw.set_captures(&c, text, &m.names);
                true
            }
            None => {
                self.notice(format_args!("\"{}\" does not match \"{text}\"", m.pattern));
                rw.clear_captures();
                false
            }
        }
    }

    fn rewrite<'o>(&self, r: &RewriteRt, rw: &mut RwState) -> Flow<'o> {
        let uri = rw.uri.clone().unwrap_or_else(|| self.req.path.to_string());
        if !self.matches(&r.matcher, &uri, rw) {
            return Flow::Next;
        }
        let rule = &r.rule;
        if let Some(status) = rule.redirect {
            return self.redirect(rule, status, rw);
        }
        let args = self.args(rw).to_vec();
        rw.internal = true;
        rw.rebuild = true;
        if rule.flag == RewriteFlag::Break {
            rw.location_invalid = true;
            rw.uri_changed = false;
        } else {
            rw.uri_changed = true;
        }
        let (new_uri, new_args) = self.eval_split(&rule.replacement, rw);
        match new_args {
            Some(mut a) => {
                if rule.add_args && !args.is_empty() {
                    a.push(b'&');
                    a.extend_from_slice(&args);
                }
                rw.args = Some(a);
            }
            None if !rule.add_args => rw.args = Some(Vec::new()),
            None => {}
        }
        self.new_uri(rule.flag, new_uri, rw)
    }

    /// A rewrite's redirect: the URL unescaped as nginx's, then the arguments.
    fn redirect<'o>(&self, rule: &Rewrite, status: u16, rw: &RwState) -> Flow<'o> {
        let mut location =
            crate::rewrite_unescape::unescape_redirect(&self.eval(&rule.replacement, rw));
        let args = self.args(rw);
        if rule.add_args && !args.is_empty() {
            location.push(if rule.has_args { b'&' } else { b'?' });
            location.extend_from_slice(args);
        }
        let shown = String::from_utf8_lossy(&location);
        self.notice(format_args!("rewritten redirect: \"{shown}\""));
        Flow::Stop(Outcome::Redirect { status, location })
    }

    /// The rewritten URI taken (500 when empty, as nginx), and where the list goes on.
    fn new_uri<'o>(&self, flag: RewriteFlag, new_uri: Vec<u8>, rw: &mut RwState) -> Flow<'o> {
        if new_uri.is_empty() {
            self.error(format_args!("the rewritten URI has a zero length"));
            return Flow::Stop(Outcome::Status(500));
        }
        let new_uri = String::from_utf8_lossy(&new_uri).into_owned();
        let shown = String::from_utf8_lossy(self.args(rw)).into_owned();
        self.notice(format_args!(
            "rewritten data: \"{new_uri}\", args: \"{shown}\""
        ));
        rw.uri = Some(new_uri);
        match flag {
            RewriteFlag::None => Flow::Next,
            _ => Flow::Exit,
        }
    }

    /// The arguments as they stand.
    fn args<'r>(&'r self, rw: &'r RwState) -> &'r [u8] {
        match &rw.args {
            Some(a) => a,
            None => {
                let target = vars::origin_path(self.req.head.target.get(self.req.buf));
                match target.iter().position(|&b| b == b'?') {
                    Some(i) => &target[i + 1..],
                    None => b"",
                }
            }
        }
    }

    fn vars<'r>(&'r self, rw: &'r RwState) -> vars::Vars<'r> {
        let mut v = self.req.vars("", None, Some(self.snap));
        v.rw = Some(rw);
        v
    }

    /// `set $limit_rate VALUE`: a size becomes this request's rate; anything else is
    /// nginx's `invalid $limit_rate "x"` error and changes nothing.
    fn set_limit_rate(&self, value: &Template, rw: &mut RwState) {
        let v = self.eval(value, rw);
        match std::str::from_utf8(&v)
            .ok()
            .and_then(ringfront_config::parse_size)
        {
            Some(rate) => rw.limit_rate = Some(rate),
            None => self.error(format_args!(
                "invalid $limit_rate \"{}\"",
                String::from_utf8_lossy(&v)
            )),
        }
    }

    fn eval(&self, t: &Template, rw: &RwState) -> Vec<u8> {
        let mut out = Vec::new();
        vars::render(&mut out, t, &self.vars(rw), false);
        out
    }

    fn var(&self, var: &ringfront_config::Variable, rw: &RwState) -> Vec<u8> {
        let mut out = Vec::new();
        vars::push_var(&mut out, var, &self.vars(rw), false);
        out
    }

    /// A replacement split at its first literal `?`: the URI, and the new arguments
    /// (`ngx_http_script_compile` with `compile_args`).
    fn eval_split(&self, t: &Template, rw: &RwState) -> (Vec<u8>, Option<Vec<u8>>) {
        let v = self.vars(rw);
        let mut out = Vec::new();
        let mut split = None;
        for part in &t.parts {
            match part {
                TemplatePart::Literal(s) if split.is_none() && s.contains('?') => {
                    let (a, b) = s.split_once('?').unwrap_or((s, ""));
                    out.extend_from_slice(a.as_bytes());
                    split = Some(out.len());
                    out.extend_from_slice(b.as_bytes());
                }
                TemplatePart::Literal(s) => out.extend_from_slice(s.as_bytes()),
                // A capture of a decoded URI goes into the arguments escaped (nginx's
                // `ngx_http_script_copy_capture_code`).
                TemplatePart::Var(var @ Variable::Capture(_)) if split.is_some() && rw.quoted => {
                    let mut cap = Vec::new();
                    vars::push_var(&mut cap, var, &v, false);
                    crate::static_path::escape_args(&mut out, &cap);
                }
                TemplatePart::Var(var) => vars::push_var(&mut out, var, &v, false),
            }
        }
        match split {
            Some(i) => {
                let args = out.split_off(i);
                (out, Some(args))
            }
            None => (out, None),
        }
    }

    fn notice(&self, msg: std::fmt::Arguments<'_>) {
        if self.log {
            self.line(LogLevel::Notice, msg);
        }
    }

    fn error(&self, msg: std::fmt::Arguments<'_>) {
        self.line(LogLevel::Error, msg);
    }

    fn line(&self, level: LogLevel, msg: std::fmt::Arguments<'_>) {
        let ctx = self.req.log_context(None);
        let conn = self.req.conn_id;
        self.w
            .log(self.snap, level, conn, format_args!("{msg}{ctx}"));
    }
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
