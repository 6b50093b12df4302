//! The proxy module's response-header directives at one level — `proxy_hide_header`,
//! `proxy_pass_header`, `proxy_ignore_headers`, `proxy_redirect`, `proxy_cookie_domain`,
//! `proxy_cookie_path`, `proxy_cookie_flags` — read with nginx's checks and messages, and
//! merged as `ngx_http_proxy_merge_loc_conf` merges them.

use crate::error::ConfigError;
use crate::model::{LocationMatch, Template, TemplatePart};
use crate::proxy_headers_model::{
    CookieFlags, CookieName, IgnoreHeaders, Pattern, ProxyHeaders, ValueRewrite, DEFAULT_HIDDEN,
};
use crate::settings::{Level, PassRaw};
use crate::tree::Directive;
use crate::values::{check_regex, directive_err, err, template};

/// What one level wrote; `None`: not written here. `Some(empty)` for the cookie lists is
/// `off`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProxyHeadersLevel {
    pub hide: Option<Vec<String>>,
    pub pass: Option<Vec<String>>,
    pub ignore: Option<u16>,
    pub redirect: Option<Redirects>,
    pub cookie_domain: Option<Vec<ValueRewrite>>,
    pub cookie_path: Option<Vec<ValueRewrite>>,
    pub cookie_flags: Option<Vec<CookieFlags>>,
}

/// `proxy_redirect` at one level.
#[derive(Debug, Clone)]
pub(crate) enum Redirects {
    Off,
    /// `default` stays a marker until the location's `proxy_pass` and name are known
    /// ([`settle`]).
    Rules(Vec<Option<ValueRewrite>>),
}

/// Reads `d` into `level` if it is one of these directives; `Ok(false)` if not.
pub(crate) fn apply(level: &mut Level, d: &Directive) -> Result<bool, ConfigError> {
    let own = &mut level.proxy_headers;
    match d.name.as_str() {
        "proxy_hide_header" => own.hide.get_or_insert_with(Vec::new).push(d.arg(0).into()),
        "proxy_pass_header" => own.pass.get_or_insert_with(Vec::new).push(d.arg(0).into()),
        "proxy_ignore_headers" => own.ignore = Some(ignore_headers(own.ignore, d)?),
        "proxy_redirect" => redirect(&mut own.redirect, level.proxy_pass.as_ref(), d)?,
        "proxy_cookie_domain" => {
            if let Some(rule) = cookie_rule(&mut own.cookie_domain, d)? {
                own.cookie_domain.get_or_insert_with(Vec::new).push(rule);
            }
        }
        "proxy_cookie_path" => {
            if let Some(rule) = cookie_rule(&mut own.cookie_path, d)? {
                own.cookie_path.get_or_insert_with(Vec::new).push(rule);
            }
        }
        "proxy_cookie_flags" => cookie_flags(&mut own.cookie_flags, d)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// `ngx_conf_set_bitmask_slot`: names case-insensitive; several lines at a level add up.
fn ignore_headers(was: Option<u16>, d: &Directive) -> Result<u16, ConfigError> {
    let mut bits = was.unwrap_or(0);
    for a in &d.args {
        let (_, bit) = IgnoreHeaders::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(a))
            .ok_or_else(|| err(d, format!("invalid value \"{a}\"")))?;
        // nginx warns about a repeated value and goes on.
        bits |= bit;
    }
    Ok(bits)
}

/// `proxy_redirect default | off | FROM TO` (`ngx_http_proxy_redirect`).
fn redirect(
    slot: &mut Option<Redirects>,
    pass: Option<&PassRaw>,
    d: &Directive,
) -> Result<(), ConfigError> {
    if matches!(slot, Some(Redirects::Off)) {
        return Err(directive_err(d, "is duplicate"));
    }
    let rule = if d.args.len() == 1 {
        match d.arg(0) {
            "off" if slot.is_some() => return Err(directive_err(d, "is duplicate")),
            "off" => {
                *slot = Some(Redirects::Off);
                return Ok(());
            }
            "default" => {
                check_default(pass, d)?;
                None
            }
            other => return Err(err(d, format!("invalid parameter \"{other}\""))),
        }
    } else {
        let from = d.arg(0);
        let pattern = match from.strip_prefix('~') {
            Some(re) => match re.strip_prefix('*') {
                Some(re) => Pattern::Regex(regex(d, re, true)?),
                None => Pattern::Regex(regex(d, re, false)?),
            },
            None => Pattern::Prefix(template(d, from)?),
        };
        Some(ValueRewrite {
            pattern,
            replacement: template(d, d.arg(1))?,
        })
    };
    match slot.get_or_insert_with(|| Redirects::Rules(Vec::new())) {
        Redirects::Rules(rules) => rules.push(rule),
        Redirects::Off => {}
    }
    Ok(())
}

/// `proxy_redirect default` needs this level's `proxy_pass` written before it, without
/// variables (nginx's two messages).
fn check_default(pass: Option<&PassRaw>, d: &Directive) -> Result<(), ConfigError> {
    let Some(p) = pass else {
        return Err(err(
            d,
            "\"proxy_redirect default\" should be placed after the \"proxy_pass\" directive",
        ));
    };
    let vars = p.authority.contains('$') || p.uri.as_deref().is_some_and(|u| u.contains('$'));
    if vars {
        return Err(err(
            d,
            "\"proxy_redirect default\" cannot be used with \"proxy_pass\" directive with variables",
        ));
    }
    Ok(())
}

/// A compiled regex, with `check_regex`'s message when it does not compile.
fn regex(d: &Directive, pattern: &str, caseless: bool) -> Result<regex::Regex, ConfigError> {
    check_regex(d, pattern, caseless)?;
    regex::RegexBuilder::new(pattern)
        .case_insensitive(caseless)
        .build()
        .map_err(|e| err(d, e.to_string()))
}

/// The `off` check shared by the cookie directives: `off` only before any rule and once;
/// nothing after `off`.
fn cookie_off<T>(slot: &mut Option<Vec<T>>, d: &Directive) -> Result<bool, ConfigError> {
    if slot.as_ref().is_some_and(Vec::is_empty) {
        return Err(directive_err(d, "is duplicate"));
    }
    if d.args.len() != 1 {
        return Ok(false);
    }
    if d.arg(0) != "off" {
        return Err(err(d, format!("invalid parameter \"{}\"", d.arg(0))));
    }
    if slot.is_some() {
        return Err(directive_err(d, "is duplicate"));
    }
    *slot = Some(Vec::new());
    Ok(true)
}

/// `proxy_cookie_domain|path off | FROM TO`; `None` for `off`.
fn cookie_rule(
    slot: &mut Option<Vec<ValueRewrite>>,
    d: &Directive,
) -> Result<Option<ValueRewrite>, ConfigError> {
    if cookie_off(slot, d)? {
        return Ok(None);
    }
    let domain = d.name == "proxy_cookie_domain";
    let (from, mut to) = (d.arg(0), d.arg(1));
    let pattern = match from.strip_prefix('~') {
        // `proxy_cookie_domain ~RE` is always caseless; `proxy_cookie_path` has `~*`.
        Some(re) if domain => Pattern::Regex(regex(d, re, true)?),
        Some(re) => match re.strip_prefix('*') {
            Some(re) => Pattern::Regex(regex(d, re, true)?),
            None => Pattern::Regex(regex(d, re, false)?),
        },
        None if domain => {
            to = to.strip_prefix('.').unwrap_or(to);
            Pattern::Domain(template(d, from.strip_prefix('.').unwrap_or(from))?)
        }
        None => Pattern::Prefix(template(d, from)?),
    };
    Ok(Some(ValueRewrite {
        pattern,
        replacement: template(d, to)?,
    }))
}

/// `proxy_cookie_flags off | COOKIE FLAG...` (the flags are templates, checked when used).
fn cookie_flags(slot: &mut Option<Vec<CookieFlags>>, d: &Directive) -> Result<(), ConfigError> {
    if cookie_off(slot, d)? {
        return Ok(());
    }
    let name = d.arg(0);
    let cookie = match name.strip_prefix('~') {
        Some(re) => CookieName::Regex(regex(d, re, true)?),
        None => CookieName::Exact(template(d, name)?),
    };
    let flags = d.args[1..]
        .iter()
        .map(|f| template(d, f))
        .collect::<Result<_, _>>()?;
    slot.get_or_insert_with(Vec::new)
        .push(CookieFlags { cookie, flags });
    Ok(())
}

/// The location's `proxy_redirect default` (written, or implied where `proxy_pass` is and no
/// level wrote `proxy_redirect`): `proxy_pass`'s URL becomes the location's name, or, without
/// a URI part, `URL/` becomes `/`. Done before nested locations inherit, so they get the rule
/// of the location that wrote it, as nginx's merge.
pub(crate) fn settle(level: &mut Level, matcher: &LocationMatch) {
    let Some(pass) = &level.proxy_pass else {
        return;
    };
    let default = || default_redirect(pass, matcher);
    match &mut level.proxy_headers.redirect {
        None => level.proxy_headers.redirect = Some(Redirects::Rules(vec![Some(default())])),
        Some(Redirects::Rules(rules)) => {
            for r in rules.iter_mut().filter(|r| r.is_none()) {
                *r = Some(default());
            }
        }
        Some(Redirects::Off) => {}
    }
}

fn default_redirect(pass: &PassRaw, matcher: &LocationMatch) -> ValueRewrite {
    let scheme = if pass.tls { "https://" } else { "http://" };
    let url = format!("{scheme}{}", pass.authority);
    let literal = |s: String| Template {
        parts: vec![TemplatePart::Literal(s)],
    };
    let (from, to) = match &pass.uri {
        Some(uri) => {
            let name = match matcher {
                LocationMatch::Exact(n)
                | LocationMatch::PrefixNoRegex(n)
                | LocationMatch::Prefix(n)
                | LocationMatch::Named(n) => n.clone(),
                LocationMatch::Regex { pattern, .. } => pattern.clone(),
            };
            (format!("{url}{uri}"), name)
        }
        None => (format!("{url}/"), "/".to_string()),
    };
    ValueRewrite {
        pattern: Pattern::Prefix(literal(from)),
        replacement: literal(to),
    }
}

impl ProxyHeadersLevel {
    /// This level with what it did not write taken from `outer` (each list whole).
    pub(crate) fn inherit(&self, outer: &ProxyHeadersLevel) -> ProxyHeadersLevel {
        fn pick<T: Clone>(own: &Option<T>, outer: &Option<T>) -> Option<T> {
            own.clone().or_else(|| outer.clone())
        }
        ProxyHeadersLevel {
            hide: pick(&self.hide, &outer.hide),
            pass: pick(&self.pass, &outer.pass),
            ignore: pick(&self.ignore, &outer.ignore),
            redirect: pick(&self.redirect, &outer.redirect),
            cookie_domain: pick(&self.cookie_domain, &outer.cookie_domain),
            cookie_path: pick(&self.cookie_path, &outer.cookie_path),
            cookie_flags: pick(&self.cookie_flags, &outer.cookie_flags),
        }
    }

    /// The merged settings: nginx's hide list plus `proxy_hide_header`, minus
    /// `proxy_pass_header` (`ngx_http_upstream_hide_headers_hash`).
    pub(crate) fn finish(self) -> ProxyHeaders {
        let hide = (self.hide.is_some() || self.pass.is_some()).then(|| {
            let mut list: Vec<String> = DEFAULT_HIDDEN.iter().map(|s| s.to_string()).collect();
            for h in self.hide.iter().flatten() {
                let h = h.to_ascii_lowercase();
                if !list.contains(&h) {
                    list.push(h);
                }
            }
            for p in self.pass.iter().flatten() {
                list.retain(|h| !h.eq_ignore_ascii_case(p));
            }
            list
        });
        let redirect = match self.redirect {
            Some(Redirects::Rules(rules)) => rules.into_iter().flatten().collect(),
            Some(Redirects::Off) | None => Vec::new(),
        };
        ProxyHeaders {
            hide,
            ignore: self.ignore.unwrap_or(0),
            redirect,
            cookie_domain: self.cookie_domain.unwrap_or_default(),
            cookie_path: self.cookie_path.unwrap_or_default(),
            cookie_flags: self.cookie_flags.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str, args: &[&str]) -> Directive {
        Directive {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            block: None,
            origin: crate::model::Origin {
                file: "/c/x.conf".into(),
                line: 7,
            },
            end_line: 7,
        }
    }

    fn read(level: &mut Level, name: &str, args: &[&str]) -> Result<(), String> {
        apply(level, &dir(name, args))
            .map(|handled| assert!(handled))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn hide_and_pass_change_nginx_default_list() {
        let mut http = Level::default();
        read(&mut http, "proxy_hide_header", &["X-Secret"]).unwrap();
        read(&mut http, "proxy_pass_header", &["Server"]).unwrap();
        let mut loc = Level::default();
        read(&mut loc, "proxy_pass_header", &["x-accel-buffering"]).unwrap();
        let h = loc.inherit(&http).proxy_headers.finish();
        let hide = h.hide.unwrap();
        assert!(hide.contains(&"x-secret".to_string()), "inherited hide");
        assert!(!hide.iter().any(|n| n == "x-accel-buffering"));
        assert!(
            hide.iter().any(|n| n == "server"),
            "pass replaced, not merged"
        );
        assert!(Level::default().proxy_headers.finish().hide.is_none());
    }

    #[test]
    fn ignore_headers_take_nginx_names() {
        let mut l = Level::default();
        read(
            &mut l,
            "proxy_ignore_headers",
            &["x-accel-redirect", "Expires"],
        )
        .unwrap();
        let h = l.proxy_headers.clone().finish();
        assert!(h.ignores(IgnoreHeaders::XA_REDIRECT) && h.ignores(IgnoreHeaders::EXPIRES));
        assert!(!h.ignores(IgnoreHeaders::VARY));
        read(&mut l, "proxy_ignore_headers", &["Vary"]).unwrap();
        let h = l.proxy_headers.clone().finish();
        assert!(h.ignores(IgnoreHeaders::VARY) && h.ignores(IgnoreHeaders::EXPIRES));
        let mut l = Level::default();
        assert!(read(&mut l, "proxy_ignore_headers", &["Foo"])
            .unwrap_err()
            .starts_with("invalid value \"Foo\""));
    }

    #[test]
    fn redirect_default_needs_proxy_pass_first_and_off_is_alone() {
        let mut l = Level::default();
        assert!(read(&mut l, "proxy_redirect", &["default"])
            .unwrap_err()
            .starts_with(
                "\"proxy_redirect default\" should be placed after the \"proxy_pass\" directive"
            ));
        let mut l = Level::default();
        read(&mut l, "proxy_redirect", &["off"]).unwrap();
        assert!(read(&mut l, "proxy_redirect", &["a", "b"])
            .unwrap_err()
            .contains("is duplicate"));
        let mut l = Level::default();
        read(&mut l, "proxy_redirect", &["a", "b"]).unwrap();
        assert!(read(&mut l, "proxy_redirect", &["off"]).is_err());
        assert!(read(&mut l, "proxy_redirect", &["on"])
            .unwrap_err()
            .starts_with("invalid parameter \"on\""));
        assert!(read(&mut l, "proxy_redirect", &["~(", "b"])
            .unwrap_err()
            .starts_with("invalid regular expression \"(\""));
    }

    #[test]
    fn default_redirect_from_proxy_pass_and_location() {
        let pass = |uri: Option<&str>| PassRaw {
            host: "b".into(),
            port: Some(81),
            authority: "b:81".into(),
            uri: uri.map(String::from),
            tls: false,
            origin: Default::default(),
            vars: None,
        };
        let loc = LocationMatch::Prefix("/app/".into());
        let lit = |t: &Template| match &t.parts[..] {
            [TemplatePart::Literal(s)] => s.clone(),
            _ => panic!("not a literal"),
        };
        let r = default_redirect(&pass(Some("/x/")), &loc);
        let Pattern::Prefix(from) = &r.pattern else {
            panic!("prefix rule")
        };
        assert_eq!(
            (lit(from), lit(&r.replacement)),
            ("http://b:81/x/".into(), "/app/".into())
        );
        let r = default_redirect(&pass(None), &loc);
        let Pattern::Prefix(from) = &r.pattern else {
            panic!("prefix rule")
        };
        assert_eq!(
            (lit(from), lit(&r.replacement)),
            ("http://b:81/".into(), "/".into())
        );
        // Not with variables in `proxy_pass` (once they are read there).
        let mut l = Level {
            proxy_pass: Some(PassRaw {
                uri: Some("/$x".into()),
                ..pass(None)
            }),
            ..Level::default()
        };
        assert!(read(&mut l, "proxy_redirect", &["default"])
            .unwrap_err()
            .starts_with("\"proxy_redirect default\" cannot be used with \"proxy_pass\" directive with variables"));
        // Implied where nothing is written; not with `off`.
        let mut l = Level {
            proxy_pass: Some(pass(None)),
            ..Level::default()
        };
        settle(&mut l, &loc);
        assert_eq!(l.proxy_headers.clone().finish().redirect.len(), 1);
        let mut l = Level {
            proxy_pass: Some(pass(None)),
            ..Level::default()
        };
        read(&mut l, "proxy_redirect", &["off"]).unwrap();
        settle(&mut l, &loc);
        assert!(l.proxy_headers.finish().redirect.is_empty());
    }

    #[test]
    fn cookie_directives_off_and_rules() {
        let mut l = Level::default();
        read(&mut l, "proxy_cookie_domain", &[".example.com", ".local"]).unwrap();
        read(&mut l, "proxy_cookie_path", &["~*^/A(.*)", "/b$1"]).unwrap();
        read(
            &mut l,
            "proxy_cookie_flags",
            &["~^s", "secure", "samesite=$arg_s"],
        )
        .unwrap();
        assert!(read(&mut l, "proxy_cookie_domain", &["off"])
            .unwrap_err()
            .contains("is duplicate"));
        let h = l.proxy_headers.clone().finish();
        assert!(h.rewrites_cookies());
        assert!(matches!(h.cookie_domain[0].pattern, Pattern::Domain(_)));
        assert!(matches!(h.cookie_path[0].pattern, Pattern::Regex(_)));
        assert_eq!(h.cookie_flags[0].flags.len(), 2);
        let mut l = Level::default();
        read(&mut l, "proxy_cookie_flags", &["off"]).unwrap();
        assert!(read(&mut l, "proxy_cookie_flags", &["a", "secure"]).is_err());
        assert!(read(&mut Level::default(), "proxy_cookie_path", &["on"])
            .unwrap_err()
            .starts_with("invalid parameter \"on\""));
        assert!(!l.proxy_headers.finish().rewrites_cookies());
    }
}
