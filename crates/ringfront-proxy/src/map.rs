//! `map` variables at request time: the source rendered, then nginx's priority — exact
//! string (ignoring case), longest prefix mask (`*.example.com`, `.example.com`), longest
//! suffix mask (`www.example.*`), the first matching regex, the default — and the chosen
//! value rendered. Built once per configuration; regexes compiled then.

use std::collections::HashMap;

use regex::{Regex, RegexBuilder};
use ringfront_config::{MapBlock, MapKey, Template};

use crate::build_error::BuildError;

/// A `map` ready to evaluate.
#[derive(Debug)]
pub struct MapRt {
    pub source: Template,
    default: Template,
    hostnames: bool,
    exact: HashMap<Vec<u8>, Template>,
    /// (name, value, also the name itself): `*.name` / `.name`.
    domains: Vec<(Vec<u8>, Template, bool)>,
    /// `name.*`, stored as `name.`.
    prefixes: Vec<(Vec<u8>, Template)>,
    regexes: Vec<(Regex, Template)>,
}

impl MapRt {
    pub fn build(m: &MapBlock) -> Result<MapRt, BuildError> {
        let mut rt = MapRt {
            source: m.source.clone(),
            default: m.default.clone(),
            hostnames: m.hostnames,
            exact: HashMap::new(),
            domains: Vec::new(),
            prefixes: Vec::new(),
            regexes: Vec::new(),
        };
        for (key, value) in &m.entries {
            let v = value.clone();
            match key {
                MapKey::Exact(s) => {
                    rt.exact.entry(s.as_bytes().to_vec()).or_insert(v);
                }
                MapKey::Subdomains(s) => rt.domains.push((s.as_bytes().to_vec(), v, false)),
                MapKey::DomainAndSubdomains(s) => rt.domains.push((s.as_bytes().to_vec(), v, true)),
                MapKey::Prefix(s) => rt.prefixes.push((s.as_bytes().to_vec(), v)),
                MapKey::Regex {
                    pattern,
                    case_insensitive,
                } => {
                    let re = RegexBuilder::new(pattern)
                        .case_insensitive(*case_insensitive)
                        .build()
                        .map_err(|e| BuildError::Regex(pattern.clone(), e.to_string()))?;
                    rt.regexes.push((re, v));
                }
            }
        }
        Ok(rt)
    }

    /// The value template for a rendered source value.
    pub fn pick(&self, source: &[u8]) -> &Template {
        let mut s = source;
        if self.hostnames {
            s = s.strip_suffix(b".").unwrap_or(s);
        }
        let lower = s.to_ascii_lowercase();
        if let Some(t) = self.exact.get(&lower) {
            return t;
        }
        let domain = self
            .domains
            .iter()
            .filter(|(name, _, itself)| {
                (*itself && lower == *name)
                    || (lower.len() > name.len()
                        && lower.ends_with(name)
                        && lower[lower.len() - name.len() - 1] == b'.')
            })
            .max_by_key(|(name, _, _)| name.len());
        if let Some((_, t, _)) = domain {
            return t;
        }
        let prefix = self
            .prefixes
            .iter()
            .filter(|(name, _)| lower.starts_with(name))
            .max_by_key(|(name, _)| name.len());
        if let Some((_, t)) = prefix {
            return t;
        }
        let text = String::from_utf8_lossy(source);
        self.regexes
            .iter()
            .find(|(re, _)| re.is_match(&text))
            .map_or(&self.default, |(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Template {
        ringfront_config::parse_template(s).unwrap()
    }

    fn text(t: &Template) -> String {
        match t.parts.first() {
            Some(ringfront_config::TemplatePart::Literal(s)) => s.clone(),
            _ => String::new(),
        }
    }

    #[test]
    fn nginx_priority() {
        let m = MapBlock {
            name: "m".into(),
            source: lit("$host"),
            default: lit("default"),
            hostnames: true,
            entries: vec![
                (
                    MapKey::Regex {
                        pattern: "^www".into(),
                        case_insensitive: false,
                    },
                    lit("regex"),
                ),
                (MapKey::Prefix("www.example.".into()), lit("suffix-mask")),
                (
                    MapKey::DomainAndSubdomains("example.com".into()),
                    lit("dot"),
                ),
                (
                    MapKey::Subdomains("a.example.com".into()),
                    lit("star-longer"),
                ),
                (MapKey::Exact("exact.example.com".into()), lit("exact")),
            ],
        };
        let rt = MapRt::build(&m).unwrap();
        let pick = |s: &str| text(rt.pick(s.as_bytes()));
        assert_eq!(pick("EXACT.example.com"), "exact");
        assert_eq!(
            pick("exact.example.com."),
            "exact",
            "hostnames: trailing dot"
        );
        assert_eq!(pick("example.com"), "dot");
        assert_eq!(pick("x.a.example.com"), "star-longer");
        assert_eq!(pick("a.example.com"), "dot", "*.name is subdomains only");
        assert_eq!(pick("www.example.org"), "suffix-mask");
        assert_eq!(pick("www.other.net"), "regex");
        assert_eq!(pick("nothing"), "default");
        assert_eq!(pick("xexample.com"), "default", "a label boundary");
    }
}
