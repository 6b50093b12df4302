//! `add_header`, `add_trailer` and `server_tokens` (nginx's headers module and core): read with nginx's
//! checks and messages; what they do to a response is the proxy's business.

use crate::error::ConfigError;
use crate::model::{AddHeader, ServerTokens};
use crate::settings::Level;
use crate::tree::Directive;
use crate::values::{err, set_once, template};

/// `add_header | add_trailer NAME VALUE [always]`: every line at a level is kept, in order
/// (the same name twice sends it twice, as nginx does). A trailer replaces nothing.
pub(crate) fn add_header(level: &mut Level, d: &Directive) -> Result<(), ConfigError> {
    let name = d.arg(0);
    let always = match d.args.get(2).map(String::as_str) {
        None => false,
        // nginx compares with strcmp: `Always` is refused.
        Some("always") => true,
        Some(other) => return Err(err(d, format!("invalid parameter \"{other}\""))),
    };
    let header = AddHeader {
        name: name.to_string(),
        value: template(d, d.arg(1))?,
        always,
        replaces: d.name == "add_header"
            && (name.eq_ignore_ascii_case("etag") || name.eq_ignore_ascii_case("last-modified")),
    };
    let list = if d.name == "add_trailer" {
        &mut level.add_trailers
    } else {
        &mut level.add_headers
    };
    list.get_or_insert_with(Vec::new).push(header);
    Ok(())
}

/// `server_tokens on | off | build`, case-insensitive as nginx's enum slot.
pub(crate) fn server_tokens(level: &mut Level, d: &Directive) -> Result<(), ConfigError> {
    let arg = d.arg(0);
    let value = match arg.to_ascii_lowercase().as_str() {
        "on" => ServerTokens::On,
        "off" => ServerTokens::Off,
        "build" => ServerTokens::Build,
        _ => return Err(err(d, format!("invalid value \"{arg}\""))),
    };
    set_once(&mut level.server_tokens, value, d)
}
