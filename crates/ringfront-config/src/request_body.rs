//! How a request body is read: `proxy_request_buffering`, `client_body_buffer_size`,
//! `client_body_in_file_only` and `client_body_temp_path` (nginx's core and proxy module
//! slots, merged as `ngx_http_core_merge_loc_conf`: each on its own, the temporary path
//! inherited whole).

use std::path::{Path, PathBuf};

use crate::directives::check_noop;
use crate::error::ConfigError;
use crate::table::Check;
use crate::tree::Directive;
use crate::values::{err, flag, set_once, size};

/// `client_body_in_file_only` (default `off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InFileOnly {
    #[default]
    Off,
    /// The file is removed when the request ends.
    Clean,
    /// The file is kept.
    On,
}

/// `client_body_temp_path PATH [L1 [L2 [L3]]]`: the folder and the length of each level
/// of subfolders, named by the file name's last characters (nginx's `ngx_create_hashed_filename`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempPath {
    pub dir: PathBuf,
    pub levels: Vec<u8>,
}

/// The settings of a location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBody {
    /// `proxy_request_buffering` (default on): off streams the body to the upstream.
    pub buffering: bool,
    /// `client_body_buffer_size` (default 16k, nginx's two pages): a longer body goes to a
    /// temporary file.
    pub buffer_size: u64,
    pub in_file_only: InFileOnly,
    pub temp_path: TempPath,
    /// A chunked body may stream: `proxy_http_version 1.1` is written (nginx streams it
    /// only to an HTTP/1.1 upstream, and its default is 1.0, whatever ringfront's default
    /// for upstream keepalive is).
    pub chunked_streams: bool,
}

impl RequestBody {
    /// nginx's defaults, the temporary folder `client_body_temp` under `prefix`.
    pub fn defaults(prefix: &Path) -> RequestBody {
        RequestBody {
            buffering: true,
            buffer_size: 16 * 1024,
            in_file_only: InFileOnly::Off,
            temp_path: TempPath {
                dir: prefix.join("client_body_temp"),
                levels: Vec::new(),
            },
            chunked_streams: false,
        }
    }
}

impl Default for RequestBody {
    fn default() -> RequestBody {
        RequestBody::defaults(Path::new(""))
    }
}

/// What one level wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestBodyLevel {
    buffering: Option<bool>,
    buffer_size: Option<u64>,
    in_file_only: Option<InFileOnly>,
    temp_path: Option<TempPath>,
}

impl RequestBodyLevel {
    /// Reads `d` if it is one of these directives; `Ok(false)` if not.
    pub(crate) fn apply(&mut self, d: &Directive, prefix: &Path) -> Result<bool, ConfigError> {
        let arg = d.arg(0);
        match d.name.as_str() {
            "proxy_request_buffering" => set_once(&mut self.buffering, flag(d)?, d)?,
            "client_body_buffer_size" => set_once(&mut self.buffer_size, size(d, arg)?, d)?,
            "client_body_in_file_only" => {
                let mode = match arg {
                    "off" => InFileOnly::Off,
                    "clean" => InFileOnly::Clean,
                    "on" => InFileOnly::On,
                    _ => return Err(err(d, format!("invalid value \"{arg}\""))),
                };
                set_once(&mut self.in_file_only, mode, d)?;
            }
            "client_body_temp_path" => {
                check_noop(d, Check::TempPath)?;
                let levels = d.args[1..]
                    .iter()
                    .map(|l| l.parse::<u8>().unwrap_or(1))
                    .collect();
                let path = TempPath {
                    dir: prefix.join(arg),
                    levels,
                };
                if self.temp_path.is_some() {
                    return Err(crate::values::directive_err(d, "is duplicate"));
                }
                self.temp_path = Some(path);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(crate) fn inherit(&self, outer: &RequestBodyLevel) -> RequestBodyLevel {
        RequestBodyLevel {
            buffering: self.buffering.or(outer.buffering),
            buffer_size: self.buffer_size.or(outer.buffer_size),
            in_file_only: self.in_file_only.or(outer.in_file_only),
            temp_path: self.temp_path.clone().or_else(|| outer.temp_path.clone()),
        }
    }

    /// `http11`: `proxy_http_version 1.1` is written for the location.
    pub(crate) fn finish(self, prefix: &Path, http11: bool) -> RequestBody {
        let d = RequestBody::defaults(prefix);
        RequestBody {
            buffering: self.buffering.unwrap_or(d.buffering),
            buffer_size: self.buffer_size.unwrap_or(d.buffer_size),
            in_file_only: self.in_file_only.unwrap_or(d.in_file_only),
            temp_path: self.temp_path.unwrap_or(d.temp_path),
            chunked_streams: http11,
        }
    }
}
