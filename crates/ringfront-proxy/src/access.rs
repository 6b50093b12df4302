//! nginx's access phase for a location: the access module (`allow`/`deny`), then the
//! auth_basic module, combined as `satisfy all|any` says (`ngx_http_core_access_phase` and
//! its post-access phase), and a 401 held back `auth_delay` long. It runs after the
//! preaccess phase (limit_req, limit_conn, realip), before the precontent phase
//! (`try_files`, the index module) and before the body is read (rewrite.rs calls [`run`]).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ringfront_config::auth_basic::AuthBasic;
use ringfront_config::LogLevel;

use crate::req::Req;
use crate::rewrite::Outcome;
use crate::rewrite_state::RwState;
use crate::snapshot::{LocationRt, Snapshot};
use crate::worker::Worker;

/// A refused request: its status and, for a 401, the `WWW-Authenticate` value to send and
/// how long to hold it back (`auth_delay`; [`hold`]).
pub(crate) struct Refusal {
    pub status: u16,
    pub authenticate: Option<Vec<u8>>,
    pub delay: std::time::Duration,
}

/// What one access handler said (nginx's `NGX_DECLINED`, `NGX_OK`, or a status).
enum Said {
    Declined,
    Ok,
    Status(u16, Option<Vec<u8>>),
}

/// Whether `loc` has anything for the phase to check.
pub(crate) fn configured(loc: &LocationRt) -> bool {
    !loc.settings.access_rules.is_empty() || loc.settings.access.auth_basic.is_some()
}

/// The phase in `loc` for `req`, with the client the realip module decides there (the one
/// the limits counted, else decided here the same way): `Continue`, or the refusal's
/// status, its `WWW-Authenticate` kept in `rw` (sent with the answer and through an
/// `error_page` redirect, as nginx keeps `r->headers_out.www_authenticate`).
pub(crate) async fn run<'s>(
    w: &Worker,
    snap: &Snapshot,
    req: &Req<'_>,
    loc: &LocationRt,
    rw: &mut RwState,
) -> Outcome<'s> {
    let real = rw.preaccess_client.unwrap_or_else(|| {
        let mut real = crate::realip::Client {
            addr: req.client,
            from: req.realip_from,
        };
        let conf = loc.settings.real_ip.as_ref();
        real.apply(conf, req.buf, req.head, req.proxy_protocol);
        real
    });
    rw.preaccess_client = Some(real);
    let probe = Req {
        client: real.addr,
        realip_from: real.from,
        rw: Some(&*rw),
        ..*req
    };
    let Some(refusal) = phase(w, snap, loc, &probe) else {
        return Outcome::Continue;
    };
    if !refusal.delay.is_zero() {
        // Boxed: only a delayed 401 pays for the timer in its future.
        Box::pin(hold(refusal.delay)).await;
    }
    if let Some(www) = refusal.authenticate {
        rw.error_authenticate.push(www);
    }
    rw.access_refused = true;
    Outcome::Status(refusal.status)
}

/// Runs the phase for `req` (its client the one the realip module decided); `None`: the
/// request goes on. Logs as nginx does; the caller waits a 401's `delay` with [`hold`].
fn phase(w: &Worker, snap: &Snapshot, loc: &LocationRt, req: &Req<'_>) -> Option<Refusal> {
    let s = &loc.settings;
    let log = |level, msg: std::fmt::Arguments<'_>| {
        let ctx = req.log_context(None);
        w.log(snap, level, req.conn_id, format_args!("{msg}{ctx}"));
    };
    let any = s.access.satisfy_any;
    let rules = match s.access_rules.iter().find(|r| r.matches(req.client.ip())) {
        None => Said::Declined,
        Some(r) if r.allow => Said::Ok,
        Some(_) => {
            if !any {
                log(LogLevel::Error, format_args!("access forbidden by rule"));
            }
            Said::Status(403, None)
        }
    };
    let mut code = match (any, rules) {
        (true, Said::Ok) => return None,
        (false, Said::Status(status, _)) => return Some(Refusal::plain(status)),
        (true, Said::Status(status, _)) => Some(Refusal::plain(status)),
        _ => None,
    };
    let auth = match &s.access.auth_basic {
        Some(basic) => check(basic, snap, req, &log),
        None => Said::Declined,
    };
    match (any, auth) {
        (_, Said::Declined) => {}
        (false, Said::Ok) => {}
        (true, Said::Ok) => return None,
        (true, Said::Status(status @ (401 | 403), www)) => {
            if code.as_ref().is_none_or(|c| c.status != 401) {
                code = Some(Refusal {
                    status,
                    authenticate: www,
                    delay: Default::default(),
                });
            }
        }
        (_, Said::Status(status, www)) => {
            code = Some(Refusal {
                status,
                authenticate: www,
                delay: Default::default(),
            });
            return delayed(code, s.access.auth_delay, &log);
        }
    }
    if any && code.as_ref().is_some_and(|c| c.status == 403) {
        log(LogLevel::Error, format_args!("access forbidden by rule"));
    }
    delayed(code, s.access.auth_delay, &log)
}

impl Refusal {
    fn plain(status: u16) -> Refusal {
        Refusal {
            status,
            authenticate: None,
            delay: Default::default(),
        }
    }
}

/// `ngx_http_core_auth_delay`: a 401 waits `delay` before it is sent.
fn delayed(
    code: Option<Refusal>,
    delay: std::time::Duration,
    log: &impl Fn(LogLevel, std::fmt::Arguments<'_>),
) -> Option<Refusal> {
    let mut code = code?;
    if code.status == 401 && !delay.is_zero() {
        log(
            LogLevel::Info,
            format_args!("delaying unauthorized request"),
        );
        code.delay = delay;
    }
    Some(code)
}

/// Waits a refusal's `auth_delay`.
async fn hold(delay: std::time::Duration) {
    monoio::time::sleep(delay).await;
}

/// `ngx_http_auth_basic_handler`.
fn check(
    basic: &AuthBasic,
    snap: &Snapshot,
    req: &Req<'_>,
    log: &impl Fn(LogLevel, std::fmt::Arguments<'_>),
) -> Said {
    let vars = req.vars("", None, Some(snap));
    let mut realm = Vec::new();
    crate::vars::render(&mut realm, &basic.realm, &vars, false);
    if realm == b"off" {
        return Said::Declined;
    }
    let challenge = || {
        let mut v = b"Basic realm=\"".to_vec();
        v.extend_from_slice(&realm);
        v.push(b'"');
        Said::Status(401, Some(v))
    };
    let creds = req
        .head
        .header(req.buf, "authorization")
        .and_then(crate::vars_auth::credentials);
    let Some((decoded, colon)) = creds else {
        let msg = format_args!("no user/password was provided for basic authentication");
        log(LogLevel::Info, msg);
        return challenge();
    };
    let (user, pass) = (&decoded[..colon], &decoded[colon + 1..]);
    let mut name = Vec::new();
    crate::vars::render(&mut name, &basic.user_file, &vars, false);
    // nginx's complex value holds a C string: a NUL ends the name.
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let path = basic
        .prefix
        .join(Path::new(std::ffi::OsStr::from_bytes(name)));
    let shown = path.display();
    let text = match crate::auth_file::read(&path) {
        Ok(t) => t,
        Err(e) => {
            let (level, status) = match e.kind() {
                std::io::ErrorKind::NotFound => (LogLevel::Error, 403),
                _ => (LogLevel::Crit, 500),
            };
            let errno = crate::io::errno_text(&e);
            log(level, format_args!("open() \"{shown}\" failed {errno}"));
            return Said::Status(status, None);
        }
    };
    let user_text = String::from_utf8_lossy(user);
    let Some(stored) = crate::auth_file::password(&text, user) else {
        let msg = format_args!("user \"{user_text}\" was not found in \"{shown}\"");
        log(LogLevel::Error, msg);
        return challenge();
    };
    match crate::auth_crypt::verify(pass, stored) {
        Ok(true) => Said::Ok,
        Ok(false) => {
            log(
                LogLevel::Error,
                format_args!("user \"{user_text}\": password mismatch"),
            );
            challenge()
        }
        Err(()) => Said::Status(500, None),
    }
}
