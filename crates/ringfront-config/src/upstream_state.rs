//! `state FILE` in an upstream (nginx Plus): the group's servers are kept in a file of
//! `server ...;` lines, read when the configuration loads (start and reload) and rewritten
//! by the API after each change (ringfront-proxy's upstream_state.rs). The block itself
//! may not have `server` lines, and the group needs a `zone`, as in nginx Plus. A file
//! that does not exist yet is an empty group.

use std::path::{Path, PathBuf};

use crate::directives::{for_each, UPSTREAM};
use crate::error::{os_failure, ConfigError};
use crate::host::Host;
use crate::model::UpstreamServer;
use crate::tree::{Directive, Reader};
use crate::values::err;

/// The checks of a `state` line `st` in upstream block `up`.
pub(crate) fn check(
    up: &Directive,
    st: &Directive,
    servers: &[UpstreamServer],
    zoned: bool,
) -> Result<(), ConfigError> {
    if !servers.is_empty() {
        return Err(err(
            st,
            "\"state\" directive is incompatible with \"server\"",
        ));
    }
    if !zoned {
        return Err(err(
            st,
            format!(
                "\"state\" requires upstream \"{}\" to be in shared memory",
                up.arg(0)
            ),
        ));
    }
    Ok(())
}

/// The servers of the state file that `st` names, each read by `server` as a `server`
/// line of the block is.
pub(crate) fn load(
    st: &Directive,
    host: &dyn Host,
    server: impl Fn(&Directive) -> Result<UpstreamServer, ConfigError>,
) -> Result<Vec<UpstreamServer>, ConfigError> {
    let path = PathBuf::from(st.arg(0));
    let text = match host.read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(err(st, os_failure("open()", &path, &e))),
    };
    let folder = path.parent().unwrap_or(Path::new("/"));
    let lines = Reader::new(host, folder).parse_main(&text, &path)?;
    let mut servers = Vec::new();
    for_each(&lines, UPSTREAM, |c| {
        if c.name != "server" {
            return Err(err(
                c,
                format!("\"{}\" directive is not allowed here", c.name),
            ));
        }
        servers.push(server(c)?);
        Ok(())
    })?;
    Ok(servers)
}
