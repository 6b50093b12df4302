//! `proxy_redirect`: the upstream's `Location` and the `url=` part of its `Refresh` rewritten
//! by the location's rules, as nginx's `ngx_http_proxy_rewrite_redirect` (the first rule that
//! matches wins). The matching of one rule is shared with `proxy_cookie_domain|path`.

use ringfront_config::{Pattern, ValueRewrite};
use ringfront_http::Known;

use crate::req::Req;
use crate::response_headers::Decor;
use crate::rewrite_state::RwState;
use crate::vars::{self, Vars};

/// `value` with the first rule that matches it from byte `prefix` on applied, or `None`
/// when none does (nginx's rewrite handlers and `ngx_http_proxy_rewrite`).
pub fn rewrite(
    rules: &[ValueRewrite],
    value: &[u8],
    prefix: usize,
    v: &Vars<'_>,
) -> Option<Vec<u8>> {
    let rest = value.get(prefix..)?;
    rules.iter().find_map(|r| apply(r, value, prefix, rest, v))
}

fn apply(
    r: &ValueRewrite,
    value: &[u8],
    prefix: usize,
    rest: &[u8],
    v: &Vars<'_>,
) -> Option<Vec<u8>> {
    let mut out = value[..prefix].to_vec();
    let mut pattern = Vec::new();
    match &r.pattern {
        Pattern::Prefix(t) => {
            vars::render(&mut pattern, t, v, false);
            if !rest.starts_with(&pattern) {
                return None;
            }
            vars::render(&mut out, &r.replacement, v, false);
            out.extend_from_slice(&rest[pattern.len()..]);
        }
        Pattern::Domain(t) => {
            vars::render(&mut pattern, t, v, false);
            // A leading dot is kept and not compared.
            let (dot, name) = match rest.first() {
                Some(b'.') => (&rest[..1], &rest[1..]),
                _ => (&rest[..0], rest),
            };
            if !name.eq_ignore_ascii_case(&pattern) {
                return None;
            }
            out.extend_from_slice(dot);
            vars::render(&mut out, &r.replacement, v, false);
        }
        Pattern::Regex(re) => {
            let subject = String::from_utf8_lossy(rest);
            let caps = re.captures(&subject)?;
            // The replacement sees this match's captures (`$1`...).
            let local = match v.rw {
                Some(rw) => rw.with_captures(&caps, &subject, &[]),
                None => {
                    let mut s = RwState::default();
                    s.set_captures(&caps, &subject, &[]);
                    s
                }
            };
            let inner = Vars {
                rw: Some(&local),
                depth: std::cell::Cell::new(v.depth.get()),
                ..*v
            };
            vars::render(&mut out, &r.replacement, &inner, false);
        }
    }
    Some(out)
}

/// An upstream field's value (a field of the kind `known`) as the client gets it when a rule
/// changes it: `Location` and `Refresh` by `proxy_redirect`, `Set-Cookie` by
/// `proxy_cookie_*`; `None` (nothing built) for every other field and where no rule is
/// configured or matches.
#[inline]
pub fn edited(decor: &Decor<'_>, known: Known, value: &[u8]) -> Option<Vec<u8>> {
    let p = decor.proxy;
    let refresh = match known {
        Known::Location if !p.redirect.is_empty() => false,
        Known::Refresh if !p.redirect.is_empty() => true,
        Known::SetCookie if p.rewrites_cookies() => {
            return crate::cookie_rewrite::rewrite_cookie(p, value, &decor.vars()?);
        }
        _ => return None,
    };
    redirect(&p.redirect, value, refresh, decor.req()?, &decor.vars()?)
}

/// A rewritten `Location` (`refresh` false) or `Refresh` value, or `None` to pass it as
/// it came. A rewritten `Location` that starts with `/` is made absolute with the request's
/// scheme, host and port, as nginx's header filter does for `absolute_redirect on`.
pub fn redirect(
    rules: &[ValueRewrite],
    value: &[u8],
    refresh: bool,
    req: &Req<'_>,
    v: &Vars<'_>,
) -> Option<Vec<u8>> {
    if !refresh {
        let out = rewrite(rules, value, 0, v)?;
        return Some(if out.first() == Some(&b'/') {
            absolute(req, &out)
        } else {
            out
        });
    }
    // nginx looks for `url=` anywhere, case-insensitively.
    let at = value
        .windows(4)
        .position(|w| w.eq_ignore_ascii_case(b"url="))?;
    rewrite(rules, value, at + 4, v)
}

/// `scheme://host[:port]` + `path`: the `Host` the client sent (else the server's name), the
/// port unless it is the scheme's default.
fn absolute(req: &Req<'_>, path: &[u8]) -> Vec<u8> {
    let tls = req.tls.is_some();
    let mut abs = if tls {
        b"https://".to_vec()
    } else {
        b"http://".to_vec()
    };
    let host = vars::host(req.buf, req.head);
    abs.extend_from_slice(if host.is_empty() {
        req.server_name.as_bytes()
    } else {
        host
    });
    if req.local.port() != if tls { 443 } else { 80 } {
        abs.push(b':');
        ringfront_http::push_decimal(&mut abs, u64::from(req.local.port()));
    }
    abs.extend_from_slice(path);
    abs
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringfront_config::{parse_template, Template};

    fn t(s: &str) -> Template {
        parse_template(s).unwrap()
    }

    fn rule(pattern: Pattern, to: &str) -> ValueRewrite {
        ValueRewrite {
            pattern,
            replacement: t(to),
        }
    }

    fn run(rules: &[ValueRewrite], value: &str, refresh: bool) -> Option<String> {
        let (buf, head) =
            crate::testutil::request_head(b"GET /p?a=b HTTP/1.1\r\nHost: front\r\n\r\n");
        let req = crate::testutil::req(&buf, &head);
        let v = req.vars("", None, None);
        redirect(rules, value.as_bytes(), refresh, &req, &v).map(|o| String::from_utf8(o).unwrap())
    }

    #[test]
    fn prefix_rules_first_match_wins_and_relative_results_become_absolute() {
        let port = {
            let (buf, head) = crate::testutil::request_head(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
            crate::testutil::req(&buf, &head).local.port()
        };
        let rules = [
            rule(Pattern::Prefix(t("http://b:81/x/")), "/app/"),
            rule(Pattern::Prefix(t("http://b:81/")), "/"),
        ];
        let host = if port == 80 {
            "http://front".to_string()
        } else {
            format!("http://front:{port}")
        };
        assert_eq!(
            run(&rules, "http://b:81/x/y?z", false),
            Some(format!("{host}/app/y?z"))
        );
        assert_eq!(
            run(&rules, "http://b:81/q", false),
            Some(format!("{host}/q"))
        );
        assert_eq!(run(&rules, "http://c/q", false), None);
        assert_eq!(
            run(&rules, "5; URL=http://b:81/x/1", true),
            Some("5; URL=/app/1".into()),
            "Refresh keeps its relative result"
        );
        assert_eq!(run(&rules, "5", true), None);
    }

    #[test]
    fn regex_rules_replace_the_whole_value_with_captures() {
        let re = regex::RegexBuilder::new("^(.+)/regex_w_([^/]+)")
            .build()
            .unwrap();
        let rules = [rule(Pattern::Regex(re), "$1/$2/t.html")];
        assert_eq!(
            run(&rules, "http://b/regex_w_cap/t.html", false),
            Some("http://b/cap/t.html".into())
        );
        assert_eq!(run(&rules, "http://b/other", false), None);
    }

    #[test]
    fn domain_rules_compare_whole_names_without_case_keeping_the_dot() {
        let (buf, head) = crate::testutil::request_head(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
        let req = crate::testutil::req(&buf, &head);
        let v = req.vars("", None, None);
        let rules = [rule(Pattern::Domain(t("up.example")), "front.example")];
        let got =
            |s: &str| rewrite(&rules, s.as_bytes(), 0, &v).map(|o| String::from_utf8(o).unwrap());
        assert_eq!(got(".UP.example"), Some(".front.example".into()));
        assert_eq!(got("up.example"), Some("front.example".into()));
        assert_eq!(got("a.up.example"), None);
    }
}
