//! `proxy_cookie_domain`, `proxy_cookie_path` and `proxy_cookie_flags` on an upstream
//! `Set-Cookie`, as nginx's `ngx_http_proxy_rewrite_cookie`: the value is split into
//! `name=value` attributes at `;` (spaces around each trimmed), `domain=` and `path=` go through
//! their rules, the flags rule of the first matching cookie name edits `Secure`, `HttpOnly`
//! and `SameSite`; when anything changed the attributes are joined again with `; `.

use std::borrow::Cow;

use ringfront_config::{CookieName, ProxyHeaders};

use crate::proxy_redirect::rewrite;
use crate::vars::{self, Vars};

/// One attribute; a `None` key is one a flag removed.
struct Attr<'a> {
    key: Option<Cow<'a, [u8]>>,
    value: Option<Cow<'a, [u8]>>,
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' '] = s {
        s = rest;
    }
    s
}

/// `ngx_http_proxy_parse_cookie`.
fn parse(value: &[u8]) -> Vec<Attr<'_>> {
    value
        .split(|&b| b == b';')
        .map(|part| match part.iter().position(|&b| b == b'=') {
            Some(i) => Attr {
                key: Some(Cow::Borrowed(trim(&part[..i]))),
                value: Some(Cow::Borrowed(trim(&part[i + 1..]))),
            },
            None => Attr {
                key: Some(Cow::Borrowed(trim(part))),
                value: None,
            },
        })
        .collect()
}

/// The rewritten `Set-Cookie` value, or `None` when no rule changed it (it passes as it came).
pub fn rewrite_cookie(p: &ProxyHeaders, value: &[u8], v: &Vars<'_>) -> Option<Vec<u8>> {
    let mut attrs = parse(value);
    attrs.first()?.value.as_ref()?;
    let mut changed = false;
    for a in attrs.iter_mut().skip(1) {
        let (Some(key), Some(val)) = (&a.key, &a.value) else {
            continue;
        };
        let rules = if key.eq_ignore_ascii_case(b"domain") {
            &p.cookie_domain
        } else if key.eq_ignore_ascii_case(b"path") {
            &p.cookie_path
        } else {
            continue;
        };
        if let Some(new) = rewrite(rules, val, 0, v) {
            a.value = Some(Cow::Owned(new));
            changed = true;
        }
    }
    if !p.cookie_flags.is_empty() {
        changed |= flags(p, &mut attrs, v);
    }
    changed.then(|| join(&attrs))
}

fn join(attrs: &[Attr<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, a) in attrs.iter().enumerate() {
        let Some(key) = &a.key else { continue };
        if i > 0 {
            out.extend_from_slice(b"; ");
        }
        out.extend_from_slice(key);
        if let Some(v) = &a.value {
            out.push(b'=');
            out.extend_from_slice(v);
        }
    }
    out
}

const SECURE_ON: u8 = 1;
const SECURE_OFF: u8 = 1 << 1;
const HTTPONLY_ON: u8 = 1 << 2;
const HTTPONLY_OFF: u8 = 1 << 3;
const STRICT: u8 = 1 << 4;
const LAX: u8 = 1 << 5;
const NONE: u8 = 1 << 6;
const SAMESITE_OFF: u8 = 1 << 7;

/// nginx's `ngx_http_proxy_cookie_flags_masks`.
const FLAGS: [(&[u8], u8); 8] = [
    (b"secure", SECURE_ON),
    (b"nosecure", SECURE_OFF),
    (b"httponly", HTTPONLY_ON),
    (b"nohttponly", HTTPONLY_OFF),
    (b"samesite=strict", STRICT),
    (b"samesite=lax", LAX),
    (b"samesite=none", NONE),
    (b"nosamesite", SAMESITE_OFF),
];

/// `ngx_http_proxy_rewrite_cookie_flags`: the first rule whose name matches the cookie's;
/// its flags (unknown ones skipped) applied. Whether anything was applied.
fn flags(p: &ProxyHeaders, attrs: &mut Vec<Attr<'_>>, v: &Vars<'_>) -> bool {
    let name = attrs[0].key.as_deref().unwrap_or_default();
    let rule = p.cookie_flags.iter().find(|r| match &r.cookie {
        CookieName::Regex(re) => re.is_match(&String::from_utf8_lossy(name)),
        CookieName::Exact(t) => {
            let mut want = Vec::new();
            vars::render(&mut want, t, v, false);
            want.eq_ignore_ascii_case(name)
        }
    });
    let Some(rule) = rule else { return false };
    let mut f = 0;
    for t in &rule.flags {
        let mut word = Vec::new();
        vars::render(&mut word, t, v, false);
        if let Some((_, bit)) = FLAGS.iter().find(|(n, _)| n.eq_ignore_ascii_case(&word)) {
            f |= bit;
        }
    }
    if f == 0 {
        return false;
    }
    edit(attrs, f);
    true
}

/// `ngx_http_proxy_edit_cookie_flags`: existing attributes kept, re-valued or removed; the
/// ones asked for and missing appended as `Secure`, `HttpOnly`, `SameSite=...`.
fn edit(attrs: &mut Vec<Attr<'_>>, mut f: u8) {
    for a in attrs.iter_mut().skip(1) {
        let Some(key) = &a.key else { continue };
        if key.eq_ignore_ascii_case(b"secure") {
            if f & SECURE_ON != 0 {
                f &= !SECURE_ON;
            } else if f & SECURE_OFF != 0 {
                a.key = None;
            }
        } else if key.eq_ignore_ascii_case(b"httponly") {
            if f & HTTPONLY_ON != 0 {
                f &= !HTTPONLY_ON;
            } else if f & HTTPONLY_OFF != 0 {
                a.key = None;
            }
        } else if key.eq_ignore_ascii_case(b"samesite") {
            let value = a.value.as_deref().unwrap_or_default();
            let set = [(STRICT, "Strict"), (LAX, "Lax"), (NONE, "None")]
                .into_iter()
                .find(|(bit, _)| f & bit != 0);
            match set {
                Some((bit, word)) => {
                    f &= !bit;
                    if !value.eq_ignore_ascii_case(word.as_bytes()) {
                        a.key = Some(Cow::Borrowed(b"SameSite"));
                        a.value = Some(Cow::Borrowed(word.as_bytes()));
                    }
                }
                None if f & SAMESITE_OFF != 0 => a.key = None,
                None => {}
            }
        }
    }
    let mut add = |key: &'static [u8], value: Option<&'static [u8]>| {
        attrs.push(Attr {
            key: Some(Cow::Borrowed(key)),
            value: value.map(Cow::Borrowed),
        })
    };
    if f & SECURE_ON != 0 {
        add(b"Secure", None);
    }
    if f & HTTPONLY_ON != 0 {
        add(b"HttpOnly", None);
    }
    if f & STRICT != 0 {
        add(b"SameSite", Some(b"Strict"));
    } else if f & LAX != 0 {
        add(b"SameSite", Some(b"Lax"));
    } else if f & NONE != 0 {
        add(b"SameSite", Some(b"None"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringfront_config::{parse_template, CookieFlags, Pattern, ValueRewrite};

    fn t(s: &str) -> ringfront_config::Template {
        parse_template(s).unwrap()
    }

    fn run(p: &ProxyHeaders, cookie: &str) -> Option<String> {
        let (buf, head) = crate::testutil::request_head(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        let req = crate::testutil::req(&buf, &head);
        let v = req.vars("", None, None);
        rewrite_cookie(p, cookie.as_bytes(), &v).map(|o| String::from_utf8(o).unwrap())
    }

    #[test]
    fn domain_and_path_rules_rejoin_the_attributes() {
        let p = ProxyHeaders {
            cookie_domain: vec![ValueRewrite {
                pattern: Pattern::Domain(t("up.example")),
                replacement: t("front"),
            }],
            cookie_path: vec![ValueRewrite {
                pattern: Pattern::Prefix(t("/up/")),
                replacement: t("/"),
            }],
            ..Default::default()
        };
        assert_eq!(
            run(&p, "a=1 ;Path=/up/x;  Domain=.UP.example;HttpOnly"),
            Some("a=1; Path=/x; Domain=.front; HttpOnly".into())
        );
        assert_eq!(run(&p, "a=1; path=/other"), None, "nothing matched");
        assert_eq!(run(&p, "novalue; path=/up/"), None, "a cookie without `=`");
    }

    #[test]
    fn flags_set_keep_and_remove_attributes() {
        let rule = |name: CookieName, flags: &[&str]| CookieFlags {
            cookie: name,
            flags: flags.iter().map(|f| t(f)).collect(),
        };
        let p = ProxyHeaders {
            cookie_flags: vec![
                rule(
                    CookieName::Regex(
                        regex::RegexBuilder::new("^s")
                            .case_insensitive(true)
                            .build()
                            .unwrap(),
                    ),
                    &["nosecure", "httponly", "samesite=lax"],
                ),
                rule(
                    CookieName::Exact(t("a")),
                    &["secure", "nosamesite", "bogus"],
                ),
                rule(CookieName::Exact(t("b")), &["bogus"]),
            ],
            ..Default::default()
        };
        assert_eq!(
            run(&p, "S=1; secure; SameSite=strict"),
            Some("S=1; SameSite=Lax; HttpOnly".into())
        );
        assert_eq!(
            run(&p, "A=1; samesite=none; path=/"),
            Some("A=1; path=/; Secure".into())
        );
        assert_eq!(run(&p, "b=1; path=/"), None, "only unknown flags");
        assert_eq!(run(&p, "c=1"), None, "no rule for the name");
    }
}
