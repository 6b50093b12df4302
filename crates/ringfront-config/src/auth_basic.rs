//! nginx's access-phase settings: `auth_basic` (a realm with variables; `off` at run time
//! turns it off), `auth_basic_user_file` (a path with variables, relative to the
//! configuration's folder), and the core module's `satisfy all|any` and `auth_delay`. Merged
//! as `ngx_http_auth_basic_merge_loc_conf` and the core's: each inherited on its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ConfigError;
use crate::model::{Template, TemplatePart};
use crate::tree::Directive;
use crate::values::{err, msec, set_once, template};

/// Basic authentication where both `auth_basic` and `auth_basic_user_file` are in effect
/// (the module declines elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthBasic {
    /// The realm; a value of `off` declines at run time, as nginx.
    pub realm: Template,
    /// The password file's name; one not starting with `/` is relative to `prefix`.
    pub user_file: Template,
    pub prefix: PathBuf,
}

/// The access settings of a location.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Access {
    pub auth_basic: Option<AuthBasic>,
    /// `satisfy any`: one passing check (allow/deny or auth_basic) suffices.
    pub satisfy_any: bool,
    /// `auth_delay` (default 0): how long a 401 waits before it is sent.
    pub auth_delay: Duration,
}

/// What one level wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct AccessLevel {
    realm: Option<Template>,
    user_file: Option<(Template, PathBuf)>,
    satisfy_any: Option<bool>,
    auth_delay: Option<Duration>,
}

impl AccessLevel {
    /// Reads `d` if it is one of these directives; `Ok(false)` if not.
    pub(crate) fn apply(&mut self, d: &Directive, prefix: &Path) -> Result<bool, ConfigError> {
        let arg = d.arg(0);
        match d.name.as_str() {
            "auth_basic" => set_once(&mut self.realm, template(d, arg)?, d)?,
            "auth_basic_user_file" => {
                let file = (template(d, arg)?, prefix.to_path_buf());
                set_once(&mut self.user_file, file, d)?;
            }
            "satisfy" => {
                let any = match arg {
                    "all" => false,
                    "any" => true,
                    _ => return Err(err(d, format!("invalid value \"{arg}\""))),
                };
                set_once(&mut self.satisfy_any, any, d)?;
            }
            "auth_delay" => set_once(&mut self.auth_delay, msec(d, arg)?, d)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// This level over `outer`.
    pub(crate) fn inherit(&self, outer: &AccessLevel) -> AccessLevel {
        AccessLevel {
            realm: self.realm.clone().or_else(|| outer.realm.clone()),
            user_file: self.user_file.clone().or_else(|| outer.user_file.clone()),
            satisfy_any: self.satisfy_any.or(outer.satisfy_any),
            auth_delay: self.auth_delay.or(outer.auth_delay),
        }
    }

    pub(crate) fn finish(&self) -> Access {
        let auth_basic = match (&self.realm, &self.user_file) {
            (Some(realm), Some((user_file, prefix))) => Some(AuthBasic {
                realm: realm.clone(),
                user_file: user_file.clone(),
                prefix: prefix.clone(),
            }),
            _ => None,
        };
        Access {
            auth_basic,
            satisfy_any: self.satisfy_any.unwrap_or(false),
            auth_delay: self.auth_delay.unwrap_or_default(),
        }
    }
}

impl AuthBasic {
    /// The realm when it is the constant `off` (nothing to check at run time).
    pub fn is_off(&self) -> bool {
        matches!(&self.realm.parts[..], [TemplatePart::Literal(s)] if s == "off")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(http: &str) -> Result<crate::Config, ConfigError> {
        let text = format!(
            "events {{}}\nhttp {{\n{http}\n server {{ listen 127.0.0.1:8080; location / {{ return 204; }} \
             location /in {{ auth_basic off; return 204; }} }}\n}}\n"
        );
        crate::parse_str(
            &text,
            Path::new("/etc/rf/nginx.conf"),
            &crate::MemoryHost::new(),
        )
    }

    #[test]
    fn inherited_each_on_its_own_and_relative_to_the_folder() {
        let c = load(
            "auth_basic \"R $host\"; auth_basic_user_file htpasswd; satisfy any; auth_delay 2s;",
        )
        .unwrap();
        let locs = &c.http.servers[0].locations;
        let a = &locs[0].settings.access;
        let basic = a.auth_basic.as_ref().unwrap();
        assert_eq!(basic.prefix, Path::new("/etc/rf"));
        assert!(a.satisfy_any);
        assert_eq!(a.auth_delay, Duration::from_secs(2));
        assert!(!basic.is_off());
        assert!(locs[1]
            .settings
            .access
            .auth_basic
            .as_ref()
            .unwrap()
            .is_off());
    }

    #[test]
    fn errors_as_nginx() {
        let e = load("satisfy some;").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid value \"some\" in /etc/rf/nginx.conf:3"),
            "{e}"
        );
        let e = load("auth_basic a; auth_basic b;").unwrap_err().to_string();
        assert!(e.contains("\"auth_basic\" directive is duplicate"), "{e}");
        let e = load("auth_delay x;").unwrap_err().to_string();
        assert!(e.contains("\"auth_delay\" directive invalid value"), "{e}");
    }
}
