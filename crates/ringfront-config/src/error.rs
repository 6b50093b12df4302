//! The one error type of the crate, displayed exactly as nginx words its `[emerg]` lines:
//! `unknown directive "foo" in /abs/conf/x.conf:12`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::model::Origin;

/// A configuration error. `file` and `line` are present whenever nginx would print
/// `in FILE:LINE`; a few messages (the main file missing, `no "events" section`) have neither,
/// as in nginx.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", Suffix(.file.as_deref(), *.line))]
pub struct ConfigError {
    pub message: String,
    pub file: Option<PathBuf>,
    pub line: Option<usize>,
}

/// The file name of directives from `-g`: nginx reports them `in command line`.
pub(crate) const COMMAND_LINE: &str = "command line";

/// Renders ` in FILE:LINE` when both are known (` in command line` for `-g`), nothing
/// otherwise.
struct Suffix<'a>(Option<&'a Path>, Option<usize>);

impl fmt::Display for Suffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(file), Some(_)) if file == Path::new(COMMAND_LINE) => {
                write!(f, " in {COMMAND_LINE}")
            }
            (Some(file), Some(line)) => write!(f, " in {}:{}", file.display(), line),
            _ => Ok(()),
        }
    }
}

impl ConfigError {
    /// An error tied to no place in the configuration.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
            file: None,
            line: None,
        }
    }

    /// An error at a directive (nginx reports the line where the directive's `;` or `{` is).
    pub(crate) fn at(message: impl Into<String>, origin: &Origin) -> Self {
        ConfigError {
            message: message.into(),
            file: Some(origin.file.clone()),
            line: Some(origin.line),
        }
    }
}

/// nginx's wording of a failed system call on a file:
/// `open() "/etc/x.conf" failed (2: No such file or directory)`.
pub(crate) fn os_failure(call: &str, path: &Path, err: &std::io::Error) -> String {
    let text = err.to_string();
    match err.raw_os_error() {
        Some(code) => {
            // std renders "No such file or directory (os error 2)"; nginx puts the number first.
            let suffix = format!(" (os error {code})");
            let desc = text.strip_suffix(&suffix).unwrap_or(&text);
            format!("{call} \"{}\" failed ({code}: {desc})", path.display())
        }
        None => format!("{call} \"{}\" failed ({text})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_with_and_without_place() {
        let origin = Origin {
            file: PathBuf::from("/abs/conf/x.conf"),
            line: 12,
        };
        let e = ConfigError::at("unknown directive \"foo\"", &origin);
        assert_eq!(
            e.to_string(),
            "unknown directive \"foo\" in /abs/conf/x.conf:12"
        );
        let e = ConfigError::new("no \"events\" section in configuration");
        assert_eq!(e.to_string(), "no \"events\" section in configuration");
    }

    #[test]
    fn os_failure_reads_like_nginx() {
        let err = std::io::Error::from_raw_os_error(2);
        assert_eq!(
            os_failure("open()", Path::new("/x/y.conf"), &err),
            "open() \"/x/y.conf\" failed (2: No such file or directory)"
        );
    }
}
