//! What the proxy module does to the upstream response's header fields, merged per location:
//! which fields are hidden (`proxy_hide_header`, `proxy_pass_header`), which controls are
//! ignored (`proxy_ignore_headers`), and the rewrites of `Location`/`Refresh`
//! (`proxy_redirect`) and `Set-Cookie` (`proxy_cookie_domain`, `_path`, `_flags`).

use crate::model::Template;

/// nginx's `ngx_http_proxy_hide_headers`: hidden unless `proxy_pass_header` names them.
pub const DEFAULT_HIDDEN: [&str; 8] = [
    "date",
    "server",
    "x-pad",
    "x-accel-expires",
    "x-accel-redirect",
    "x-accel-limit-rate",
    "x-accel-buffering",
    "x-accel-charset",
];

/// The proxy module's response-header settings of one location.
#[derive(Debug, Clone, Default)]
pub struct ProxyHeaders {
    /// The hidden fields, lower-cased, when a level wrote `proxy_hide_header` or
    /// `proxy_pass_header`; `None`: nginx's [`DEFAULT_HIDDEN`] (checked without a list).
    pub hide: Option<Vec<String>>,
    /// `proxy_ignore_headers`, as [`IgnoreHeaders`] bits.
    pub ignore: u16,
    /// `proxy_redirect`'s rules in order (the first that matches wins); empty: off.
    pub redirect: Vec<ValueRewrite>,
    /// `proxy_cookie_domain` rules (applied to a cookie's `domain=`).
    pub cookie_domain: Vec<ValueRewrite>,
    /// `proxy_cookie_path` rules (applied to a cookie's `path=`).
    pub cookie_path: Vec<ValueRewrite>,
    /// `proxy_cookie_flags` rules (the first whose name matches applies).
    pub cookie_flags: Vec<CookieFlags>,
}

impl ProxyHeaders {
    /// Whether an upstream `Set-Cookie` needs looking at.
    pub fn rewrites_cookies(&self) -> bool {
        !(self.cookie_domain.is_empty()
            && self.cookie_path.is_empty()
            && self.cookie_flags.is_empty())
    }

    /// Whether an `ignore` bit is set.
    pub fn ignores(&self, bit: u16) -> bool {
        self.ignore & bit != 0
    }
}

/// The bits of `proxy_ignore_headers` (nginx's `ngx_http_upstream_ignore_headers_masks`).
pub struct IgnoreHeaders;

impl IgnoreHeaders {
    pub const XA_REDIRECT: u16 = 1 << 1;
    pub const XA_EXPIRES: u16 = 1 << 2;
    pub const EXPIRES: u16 = 1 << 3;
    pub const CACHE_CONTROL: u16 = 1 << 4;
    pub const SET_COOKIE: u16 = 1 << 5;
    pub const XA_LIMIT_RATE: u16 = 1 << 6;
    pub const XA_BUFFERING: u16 = 1 << 7;
    pub const XA_CHARSET: u16 = 1 << 8;
    pub const VARY: u16 = 1 << 9;

    /// The names nginx accepts (case-insensitive) and their bits.
    pub const NAMES: [(&'static str, u16); 9] = [
        ("X-Accel-Redirect", Self::XA_REDIRECT),
        ("X-Accel-Expires", Self::XA_EXPIRES),
        ("X-Accel-Limit-Rate", Self::XA_LIMIT_RATE),
        ("X-Accel-Buffering", Self::XA_BUFFERING),
        ("X-Accel-Charset", Self::XA_CHARSET),
        ("Expires", Self::EXPIRES),
        ("Cache-Control", Self::CACHE_CONTROL),
        ("Set-Cookie", Self::SET_COOKIE),
        ("Vary", Self::VARY),
    ];
}

/// One `FROM TO` rule of `proxy_redirect` or `proxy_cookie_domain|path`.
#[derive(Debug, Clone)]
pub struct ValueRewrite {
    pub pattern: Pattern,
    /// Replaces what the pattern matched (with a regex: the whole value), with variables and
    /// the regex's captures.
    pub replacement: Template,
}

/// How a rule's `FROM` matches (nginx's rewrite handlers).
#[derive(Debug, Clone)]
pub enum Pattern {
    /// The value starts with it, case-sensitively (`ngx_http_proxy_rewrite_complex_handler`).
    Prefix(Template),
    /// `proxy_cookie_domain`'s plain form: the whole domain, a leading dot aside,
    /// case-insensitively (`ngx_http_proxy_rewrite_domain_handler`).
    Domain(Template),
    /// `~` / `~*`: the value (from the rule's start) is searched; the whole of it is replaced.
    Regex(regex::Regex),
}

/// `proxy_cookie_flags COOKIE FLAG...`.
#[derive(Debug, Clone)]
pub struct CookieFlags {
    pub cookie: CookieName,
    /// `secure`, `nosecure`, `httponly`, `nohttponly`, `samesite=strict|lax|none`,
    /// `nosamesite`, evaluated per response (unknown values are skipped, as nginx).
    pub flags: Vec<Template>,
}

/// Which cookies a `proxy_cookie_flags` rule is for.
#[derive(Debug, Clone)]
pub enum CookieName {
    /// The cookie's name, case-insensitively.
    Exact(Template),
    /// `~RE`, case-insensitive.
    Regex(regex::Regex),
}
