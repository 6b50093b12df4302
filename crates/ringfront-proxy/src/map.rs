//! `map` variables at request time: the source rendered, then nginx's priority — exact
//! string (ignoring case), longest prefix mask (`*.example.com`, `.example.com`), longest
//! suffix mask (`www.example.*`), the first matching regex, the default — and the chosen
//! value rendered. Built once per configuration; regexes compiled then.

use std::collections::HashMap;

use regex::Regex;
use ringfront_config::{MapBlock, MapKey, Template};

use crate::build_error::BuildError;

/// The regex of a `map` that chose a value, with its named groups' variable slots.
pub type RegexHit<'a> = (&'a Regex, &'a [(usize, usize)]);

/// A `map` ready to evaluate.
#[derive(Debug)]
pub struct MapRt {
    pub source: Template,
    default: Template,
    hostnames: bool,
    /// `volatile`: not kept per request (nginx caches other maps' values).
    pub volatile: bool,
    exact: HashMap<Vec<u8>, Template>,
    /// (name, value, also the name itself): `*.name` / `.name`.
    domains: Vec<(Vec<u8>, Template, bool)>,
    /// `name.*`, stored as `name.`.
    prefixes: Vec<(Vec<u8>, Template)>,
    regexes: Vec<(Regex, Template)>,
    /// For each of `regexes`, the variable slot of each named group.
    names: Vec<Vec<(usize, usize)>>,
}

impl MapRt {
    /// `variables`: the configuration's rewrite variables (named groups fill theirs).
    pub fn build(m: &MapBlock, variables: &[String]) -> Result<MapRt, BuildError> {
        let mut rt = MapRt {
            source: m.source.clone(),
            default: m.default.clone(),
            hostnames: m.hostnames,
            volatile: m.volatile,
            exact: HashMap::new(),
            domains: Vec::new(),
            prefixes: Vec::new(),
            regexes: Vec::new(),
            names: Vec::new(),
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
                    let m =
                        crate::rewrite_rt::Matcher::build(pattern, *case_insensitive, variables)?;
                    rt.names.push(m.names);
                    rt.regexes.push((m.re, v));
                }
            }
        }
        Ok(rt)
    }

    /// The value template for a rendered source value.
    pub fn pick(&self, source: &[u8]) -> &Template {
        self.pick_with(source).0
    }

    /// [`MapRt::pick`], with the regex that chose the value (its captures are the
    /// value's `$1`.., its named groups its variables), with its named groups' slots.
    pub fn pick_with(&self, source: &[u8]) -> (&Template, Option<RegexHit<'_>>) {
        let mut s = source;
        if self.hostnames {
            s = s.strip_suffix(b".").unwrap_or(s);
        }
        let lower = s.to_ascii_lowercase();
        if let Some(t) = self.exact.get(&lower) {
            return (t, None);
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
            return (t, None);
        }
        let prefix = self
            .prefixes
            .iter()
            .filter(|(name, _)| lower.starts_with(name))
            .max_by_key(|(name, _)| name.len());
        if let Some((_, t)) = prefix {
            return (t, None);
        }
        let text = String::from_utf8_lossy(source);
        match self.regexes.iter().position(|(re, _)| re.is_match(&text)) {
            Some(i) => {
                let names = self.names.get(i).map_or(&[][..], Vec::as_slice);
                (&self.regexes[i].1, Some((&self.regexes[i].0, names)))
            }
            None => (&self.default, None),
        }
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
            volatile: false,
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
        let rt = MapRt::build(&m, &[]).unwrap();
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
