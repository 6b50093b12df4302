//! What nginx's command line adds to loading a configuration: `-p PREFIX` (where relative
//! paths start), `-g DIRECTIVES` (main-level directives read before the file) and
//! `-e FILE` (the error log used when the configuration names none).

use std::path::PathBuf;

/// How to load a configuration beyond its file. The default is ringfront's behaviour
/// without nginx's flags: relative paths start at the main file's folder, no extra
/// directives, errors to stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// nginx's prefix (`-p`): relative `pid`, log, `root` and temp paths start here;
    /// `include` still starts at the main file's folder (nginx's conf prefix).
    pub prefix: Option<PathBuf>,
    /// `-g`: main-level directives, read before the file; errors in them are reported
    /// `in command line` as nginx does.
    pub globals: Option<String>,
    /// `-e`: the error log when the main level writes no `error_log` (`None` is stderr).
    pub error_log: Option<PathBuf>,
}
