//! `proxy_next_upstream_budget percent=N [min=M] | off` (ringfront only; Envoy's retry
//! budget): at most `N` percent of the requests in flight to a group may be retries at
//! once, or `M`, whichever is more. http, server and location levels, inherited.

use crate::error::ConfigError;
use crate::tree::Directive;
use crate::units::parse_number;
use crate::values::{directive_err, err};

/// Retries always allowed at once when `min=` is not written (Envoy's default is 3).
pub const DEFAULT_MIN: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudget {
    /// 0-100.
    pub percent: u32,
    pub min: u32,
}

/// The directive's value: `None` for `off`.
pub(crate) fn retry_budget(d: &Directive) -> Result<Option<RetryBudget>, ConfigError> {
    if d.args.len() == 1 && d.arg(0) == "off" {
        return Ok(None);
    }
    let mut percent = None;
    let mut min = None;
    for a in &d.args {
        let invalid = || err(d, format!("invalid parameter \"{a}\""));
        let (slot, value, most) = match a.split_once('=') {
            Some(("percent", v)) => (&mut percent, v, 100),
            Some(("min", v)) => (&mut min, v, u64::from(u32::MAX)),
            _ => return Err(invalid()),
        };
        if slot.is_some() {
            return Err(invalid());
        }
        let n = parse_number(value)
            .filter(|&n| n <= most)
            .ok_or_else(invalid)?;
        *slot = Some(n as u32);
    }
    let percent = percent.ok_or_else(|| directive_err(d, "needs \"percent=\""))?;
    Ok(Some(RetryBudget {
        percent,
        min: min.unwrap_or(DEFAULT_MIN),
    }))
}
