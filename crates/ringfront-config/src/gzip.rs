//! nginx's gzip filter module and the core module's `gzip_*` directives: `gzip`,
//! `gzip_types`, `gzip_min_length`, `gzip_comp_level`, `gzip_proxied`, `gzip_vary`,
//! `gzip_disable`, `gzip_http_version`, and `gzip_buffers` (checked, ignored: ringfront
//! compresses through its own buffers). What a level wrote is kept as `Option`s and
//! merged as nginx's `ngx_http_gzip_merge_conf` / `ngx_http_core_merge_loc_conf` do.

use crate::error::ConfigError;
use crate::tree::Directive;
use crate::units::{parse_number, parse_size};
use crate::values::{check_regex, err, flag, set_once, size};

/// The gzip settings of a location where `gzip on` is in effect (the model holds `None`
/// where it is off, so a request there pays nothing for the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gzip {
    /// `gzip_comp_level` 1..=9 (default 1).
    pub comp_level: u32,
    /// `gzip_min_length` (default 20): a response whose `Content-Length` is smaller is
    /// sent as it is; one without a length is always compressed.
    pub min_length: u64,
    pub types: GzipTypes,
    pub proxied: GzipProxied,
    /// `gzip_vary on`: `Vary: Accept-Encoding` on every response the filter considered.
    pub vary: bool,
    /// `gzip_http_version 1.0|1.1` (default 1.1): the lowest request version compressed
    /// for, as its minor number.
    pub http_version_minor: u8,
    /// `gzip_disable msie6`: nginx's MSIE 4-6 test on `User-Agent`.
    pub disable_msie6: bool,
    /// `gzip_disable REGEX ...`: case-insensitive, matched against `User-Agent`.
    pub disable: Vec<UaRegex>,
}

/// `gzip_types`: the `Content-Type`s (lower-cased, before a `charset=` parameter)
/// compressed; `text/html` is always one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GzipTypes {
    /// `gzip_types *`: every response, with a type or without.
    Any,
    List(Vec<String>),
}

/// `gzip_proxied` flags: which responses to requests with a `Via` header (that came
/// through a proxy) are compressed. Default `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GzipProxied {
    pub off: bool,
    pub expired: bool,
    pub no_cache: bool,
    pub no_store: bool,
    pub private: bool,
    pub no_last_modified: bool,
    pub no_etag: bool,
    pub auth: bool,
    pub any: bool,
}

/// A compiled `gzip_disable` expression; equal when written the same.
#[derive(Debug, Clone)]
pub struct UaRegex(pub regex::bytes::Regex);

impl PartialEq for UaRegex {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Eq for UaRegex {}

/// What one level wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct GzipLevel {
    enable: Option<bool>,
    comp_level: Option<u32>,
    min_length: Option<u64>,
    types: Option<GzipTypes>,
    proxied: Option<GzipProxied>,
    vary: Option<bool>,
    http_version_minor: Option<u8>,
    disable_msie6: Option<bool>,
    disable: Option<Vec<UaRegex>>,
    buffers: Option<()>,
}

impl GzipLevel {
    /// Reads `d` if it is one of the module's directives; `Ok(false)` if not.
    pub(crate) fn apply(&mut self, d: &Directive) -> Result<bool, ConfigError> {
        let arg = d.arg(0);
        match d.name.as_str() {
            "gzip" => set_once(&mut self.enable, flag(d)?, d)?,
            "gzip_vary" => set_once(&mut self.vary, flag(d)?, d)?,
            "gzip_comp_level" => set_once(&mut self.comp_level, comp_level(d)?, d)?,
            "gzip_min_length" => set_once(&mut self.min_length, size(d, arg)?, d)?,
            "gzip_http_version" => {
                let minor = match arg {
                    "1.0" => 0,
                    "1.1" => 1,
                    _ => return Err(err(d, format!("invalid value \"{arg}\""))),
                };
                set_once(&mut self.http_version_minor, minor, d)?;
            }
            "gzip_types" => types(self.types.get_or_insert_with(html_only), d),
            "gzip_proxied" => proxied(self.proxied.get_or_insert_with(Default::default), d)?,
            "gzip_disable" => {
                let list = self.disable.get_or_insert_with(Vec::new);
                for pattern in &d.args {
                    if pattern == "msie6" {
                        self.disable_msie6 = Some(true);
                        continue;
                    }
                    list.push(ua_regex(d, pattern)?);
                }
            }
            "gzip_buffers" => {
                let ok = parse_number(arg).is_some_and(|n| n > 0)
                    && parse_size(d.arg(1)).is_some_and(|n| n > 0);
                if !ok {
                    return Err(crate::values::directive_err(d, "invalid value"));
                }
                set_once(&mut self.buffers, (), d)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// This level over `outer`, field by field.
    pub(crate) fn inherit(&self, outer: &GzipLevel) -> GzipLevel {
        fn pick<T: Clone>(own: &Option<T>, outer: &Option<T>) -> Option<T> {
            own.clone().or_else(|| outer.clone())
        }
        GzipLevel {
            enable: pick(&self.enable, &outer.enable),
            comp_level: pick(&self.comp_level, &outer.comp_level),
            min_length: pick(&self.min_length, &outer.min_length),
            types: pick(&self.types, &outer.types),
            proxied: pick(&self.proxied, &outer.proxied),
            vary: pick(&self.vary, &outer.vary),
            http_version_minor: pick(&self.http_version_minor, &outer.http_version_minor),
            disable_msie6: pick(&self.disable_msie6, &outer.disable_msie6),
            disable: pick(&self.disable, &outer.disable),
            buffers: pick(&self.buffers, &outer.buffers),
        }
    }

    /// The location's settings: `None` unless `gzip on` is in effect.
    pub(crate) fn finish(self) -> Option<Gzip> {
        if self.enable != Some(true) {
            return None;
        }
        let mut proxied = self.proxied.unwrap_or_default();
        if proxied == GzipProxied::default() {
            proxied.off = true;
        }
        Some(Gzip {
            comp_level: self.comp_level.unwrap_or(1),
            min_length: self.min_length.unwrap_or(20),
            types: self.types.unwrap_or_else(html_only),
            proxied,
            vary: self.vary.unwrap_or(false),
            http_version_minor: self.http_version_minor.unwrap_or(1),
            disable_msie6: self.disable_msie6.unwrap_or(false),
            disable: self.disable.unwrap_or_default(),
        })
    }
}

fn html_only() -> GzipTypes {
    GzipTypes::List(vec!["text/html".to_string()])
}

/// `gzip_comp_level N`: a number from 1 to 9 (`ngx_conf_check_num_bounds`).
fn comp_level(d: &Directive) -> Result<u32, ConfigError> {
    let n =
        parse_number(d.arg(0)).ok_or_else(|| crate::values::directive_err(d, "invalid number"))?;
    if !(1..=9).contains(&n) {
        return Err(err(d, "value must be between 1 and 9"));
    }
    Ok(n as u32)
}

/// `gzip_types TYPE ...` (`ngx_http_types_slot`): lines at one level add up; `*` means
/// every type from then on.
fn types(list: &mut GzipTypes, d: &Directive) {
    for t in &d.args {
        let GzipTypes::List(names) = list else {
            return;
        };
        if t == "*" {
            *list = GzipTypes::Any;
            return;
        }
        let t = t.to_ascii_lowercase();
        if !names.contains(&t) {
            names.push(t);
        }
    }
}

/// `gzip_proxied FLAG ...` (`ngx_conf_set_bitmask_slot`: any case, lines add up).
fn proxied(p: &mut GzipProxied, d: &Directive) -> Result<(), ConfigError> {
    for word in &d.args {
        let slot = match word.to_ascii_lowercase().as_str() {
            "off" => &mut p.off,
            "expired" => &mut p.expired,
            "no-cache" => &mut p.no_cache,
            "no-store" => &mut p.no_store,
            "private" => &mut p.private,
            "no_last_modified" => &mut p.no_last_modified,
            "no_etag" => &mut p.no_etag,
            "auth" => &mut p.auth,
            "any" => &mut p.any,
            _ => return Err(err(d, format!("invalid value \"{word}\""))),
        };
        *slot = true;
    }
    Ok(())
}

/// A `gzip_disable` expression, case-insensitive as nginx compiles it.
fn ua_regex(d: &Directive, pattern: &str) -> Result<UaRegex, ConfigError> {
    check_regex(d, pattern, true)?;
    regex::bytes::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .map(UaRegex)
        .map_err(|e| err(d, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;

    fn dir(name: &str, args: &[&str]) -> Directive {
        Directive {
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            block: None,
            origin: Origin {
                file: "/c/x.conf".into(),
                line: 3,
            },
            end_line: 3,
        }
    }

    fn read(lines: &[(&str, &[&str])]) -> Result<GzipLevel, String> {
        let mut level = GzipLevel::default();
        for (name, args) in lines {
            assert!(level.apply(&dir(name, args)).map_err(|e| e.to_string())?);
        }
        Ok(level)
    }

    #[test]
    fn defaults_are_nginx_and_off_means_none() {
        assert_eq!(GzipLevel::default().finish(), None);
        let off = read(&[("gzip", &["off"]), ("gzip_vary", &["on"])]).unwrap();
        assert_eq!(off.finish(), None);
        let g = read(&[("gzip", &["On"])]).unwrap().finish().unwrap();
        assert_eq!(g.comp_level, 1);
        assert_eq!(g.min_length, 20);
        assert_eq!(g.types, html_only());
        assert!(g.proxied.off && !g.proxied.any);
        assert_eq!(g.http_version_minor, 1);
        assert!(!g.vary && !g.disable_msie6 && g.disable.is_empty());
    }

    #[test]
    fn inner_levels_inherit_and_override() {
        let http = read(&[
            ("gzip", &["on"]),
            ("gzip_comp_level", &["6"]),
            ("gzip_types", &["Application/JSON"]),
            ("gzip_types", &["text/css"]),
        ])
        .unwrap();
        let loc = read(&[("gzip_min_length", &["1k"]), ("gzip_types", &["*"])]).unwrap();
        let g = loc.inherit(&http).finish().unwrap();
        assert_eq!((g.comp_level, g.min_length), (6, 1024));
        assert_eq!(g.types, GzipTypes::Any);
        let g = http.clone().finish().unwrap();
        let want = ["text/html", "application/json", "text/css"];
        assert_eq!(
            g.types,
            GzipTypes::List(want.iter().map(|s| s.to_string()).collect())
        );
        let off_inside = read(&[("gzip", &["off"])]).unwrap();
        assert_eq!(off_inside.inherit(&http).finish(), None);
    }

    #[test]
    fn proxied_disable_and_version() {
        let g = read(&[
            ("gzip", &["on"]),
            ("gzip_proxied", &["expired", "NO-CACHE"]),
            ("gzip_proxied", &["auth"]),
            ("gzip_disable", &["msie6", "^Bot/"]),
            ("gzip_http_version", &["1.0"]),
            ("gzip_buffers", &["16", "8k"]),
        ])
        .unwrap()
        .finish()
        .unwrap();
        let want = GzipProxied {
            expired: true,
            no_cache: true,
            auth: true,
            ..Default::default()
        };
        assert_eq!(g.proxied, want);
        assert!(g.disable_msie6);
        assert!(g.disable[0].0.is_match(b"bot/1.0"));
        assert_eq!(g.http_version_minor, 0);
    }

    #[test]
    fn errors_read_like_nginx() {
        let e = |name: &str, args: &[&str]| read(&[(name, args)]).err().unwrap();
        assert_eq!(
            e("gzip_comp_level", &["10"]),
            "value must be between 1 and 9 in /c/x.conf:3"
        );
        assert_eq!(
            e("gzip_comp_level", &["x"]),
            "\"gzip_comp_level\" directive invalid number in /c/x.conf:3"
        );
        assert_eq!(
            e("gzip_proxied", &["sometimes"]),
            "invalid value \"sometimes\" in /c/x.conf:3"
        );
        assert_eq!(
            e("gzip_http_version", &["2.0"]),
            "invalid value \"2.0\" in /c/x.conf:3"
        );
        assert_eq!(
            e("gzip_min_length", &["big"]),
            "\"gzip_min_length\" directive invalid value in /c/x.conf:3"
        );
        assert_eq!(
            e("gzip_buffers", &["0", "4k"]),
            "\"gzip_buffers\" directive invalid value in /c/x.conf:3"
        );
        assert_eq!(
            e("gzip", &["yes"]),
            "invalid value \"yes\" in \"gzip\" directive, it must be \"on\" or \"off\" in /c/x.conf:3"
        );
        assert!(e("gzip_disable", &["("]).starts_with("invalid regular expression \"(\""));
        let twice = read(&[("gzip", &["on"]), ("gzip", &["on"])]).err().unwrap();
        assert_eq!(twice, "\"gzip\" directive is duplicate in /c/x.conf:3");
    }
}
