//! The access log: one line per request, in each of the location's `access_log` formats,
//! gathered by the worker and handed to the log writer thread (log_batch.rs).

use crate::req::{Cx, Reply};
use crate::vars;

/// Writes the request's access-log lines.
pub fn write(cx: &Cx<'_>, reply: &Reply) {
    let (snap, loc) = (cx.snap, cx.loc);
    if loc.access_logs.is_empty() {
        return;
    }
    let proxy_host = loc
        .upstream
        .and_then(|u| snap.groups.get(u))
        .map_or("", |g| g.proxy_host.as_str());
    let v = cx.req.vars(proxy_host, Some(reply), Some(snap));
    for log in &loc.access_logs {
        let Some((t, escape)) = snap.log_formats.get(log.format) else {
            continue;
        };
        if let Some(c) = &log.condition {
            if !holds(c, &v) {
                continue;
            }
        }
        cx.w.log_lines.push(&log.sink, |out| {
            vars::render_log(out, t, &v, *escape);
            out.push(b'\n');
        });
        cx.w.logged.set(cx.w.logged.get() + 1);
    }
}

/// nginx's `if=`: the condition holds unless it evaluates to `""` or `"0"`.
fn holds(c: &ringfront_config::Template, v: &vars::Vars<'_>) -> bool {
    let mut value = Vec::new();
    vars::render(&mut value, c, v, false);
    !(value.is_empty() || value == b"0")
}
