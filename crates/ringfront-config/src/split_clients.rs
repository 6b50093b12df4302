//! `split_clients STRING $name { P% VALUE; ... [* VALUE;] }` (ngx_http_split_clients_module):
//! the variable's value is chosen by MurmurHash2 of STRING against the cumulative percentages,
//! as nginx computes them (percent in hundredths, scaled to the 32-bit hash range), so the
//! same keys land in the same bucket as on nginx.

use crate::error::ConfigError;
use crate::model::SplitClients;
use crate::tree::Directive;
use crate::values::{err, template};

/// Reads one `split_clients` block (its variable was registered by the first pass).
pub(crate) fn split_clients_block(d: &Directive) -> Result<SplitClients, ConfigError> {
    let mut parts: Vec<(u32, String)> = Vec::new();
    let mut sum: u32 = 0;
    for c in d.children() {
        let [value] = c.args.as_slice() else {
            return Err(err(c, "invalid number of the split_clients parameters"));
        };
        let percent = if c.name == "*" {
            0
        } else {
            let p = c
                .name
                .strip_suffix('%')
                .and_then(hundredths)
                .filter(|&p| p > 0)
                .ok_or_else(|| err(c, format!("invalid percent value \"{}\"", c.name)))?;
            sum += p;
            if sum > 10_000 {
                return Err(err(c, "percent total is greater than 100%"));
            }
            p
        };
        parts.push((percent, value.clone()));
    }
    // nginx: each bound is the running total of percent * 0xffffffff / 10000, in 32 bits.
    let mut last: u32 = 0;
    let parts = parts
        .into_iter()
        .map(|(p, v)| {
            if p == 0 {
                return (0, v);
            }
            last = last.wrapping_add((u64::from(p) * 0xffff_ffff / 10_000) as u32);
            (last, v)
        })
        .collect();
    Ok(SplitClients {
        name: d.arg(1).trim_start_matches('$').to_ascii_lowercase(),
        source: template(d, d.arg(0))?,
        parts,
    })
}

/// nginx's `ngx_atofp(.., 2)`: a decimal with at most two places, in hundredths.
fn hundredths(s: &str) -> Option<u32> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty()
        || frac.len() > 2
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let int: u32 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut f: u32 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    if frac.len() == 1 {
        f *= 10;
    }
    int.checked_mul(100)?.checked_add(f)
}

#[cfg(test)]
mod tests {
    use super::hundredths;

    #[test]
    fn percents_as_nginx_reads_them() {
        assert_eq!(hundredths("0.5"), Some(50));
        assert_eq!(hundredths("2.0"), Some(200));
        assert_eq!(hundredths("51"), Some(5100));
        assert_eq!(hundredths(".25"), Some(25));
        assert_eq!(hundredths("0.125"), None);
        assert_eq!(hundredths("a"), None);
        assert_eq!(hundredths(""), None);
    }
}
