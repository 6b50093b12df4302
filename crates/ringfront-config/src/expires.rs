//! `expires` (nginx's headers module): what it says, read from its arguments when the
//! configuration loads, or from a variable's value for each response, with nginx's
//! `ngx_http_parse_expires` rules.

use crate::model::Template;
use crate::units::{parse_time_mode, TimeMode};

/// What nginx's headers filter writes as `Expires` and `Cache-Control` on responses with
/// statuses `add_header` applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Expires {
    #[default]
    Off,
    /// `Thu, 01 Jan 1970 00:00:01 GMT`, `no-cache`.
    Epoch,
    /// `Thu, 31 Dec 2037 23:55:55 GMT`, `max-age=315360000`.
    Max,
    /// `expires [-]TIME`: seconds after the request (negative: `no-cache`).
    Access(i64),
    /// `expires modified [-]TIME`: seconds after the file's modification time.
    Modified(i64),
    /// `expires @TIME`: the next time the clock shows this time of day (seconds).
    Daily(i64),
    /// `expires [modified] $var`: the value read as the arguments for each response.
    Var { value: Template, modified: bool },
}

impl Expires {
    /// One written value (`modified`: after the `modified` keyword); the error is nginx's.
    pub fn parse(text: &str, modified: bool) -> Result<Expires, &'static str> {
        if !modified {
            match text {
                "epoch" => return Ok(Expires::Epoch),
                "max" => return Ok(Expires::Max),
                "off" => return Ok(Expires::Off),
                _ => {}
            }
        }
        if let Some(t) = text.strip_prefix('@') {
            if modified {
                return Err("daily time cannot be used with \"modified\" parameter");
            }
            let secs = parse_time_mode(t, TimeMode::Sec)
                .ok_or("invalid value")?
                .as_secs();
            if secs > 24 * 60 * 60 {
                return Err("daily time value must be less than 24 hours");
            }
            return Ok(Expires::Daily(secs as i64));
        }
        let (minus, t) = match text.strip_prefix('-') {
            Some(t) => (true, t),
            None => (false, text),
        };
        let secs = parse_time_mode(t, TimeMode::Sec)
            .ok_or("invalid value")?
            .as_secs() as i64;
        let secs = if minus { -secs } else { secs };
        Ok(match modified {
            false => Expires::Access(secs),
            true => Expires::Modified(secs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Expires;

    #[test]
    fn forms() {
        assert_eq!(Expires::parse("1h", false), Ok(Expires::Access(3600)));
        assert_eq!(Expires::parse("-1", false), Ok(Expires::Access(-1)));
        assert_eq!(Expires::parse("30s", true), Ok(Expires::Modified(30)));
        assert_eq!(
            Expires::parse("@15h30m33s", false),
            Ok(Expires::Daily(55_833))
        );
        assert_eq!(Expires::parse("max", false), Ok(Expires::Max));
        assert!(Expires::parse("@1h", true).is_err());
        assert!(Expires::parse("@25h", false).is_err());
        assert!(Expires::parse("soon", false).is_err());
    }
}
