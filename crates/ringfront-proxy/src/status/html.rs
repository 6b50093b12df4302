//! `check_status html`: one self-contained page (inline CSS, no script, no external
//! resources). Every peer row is `<tr class="peer state-STATE" data-upstream=".."
//! data-peer="..">` with one classed `<td>` per column, so tests and scripts can find them.

use std::fmt::Write;

use super::view::{PeerView, StatusView, Verdict};
use super::{iso8601, short_duration, Group};

/// Appends `s` with `& < > " '` escaped, safe in text and in quoted attribute values.
pub(crate) fn escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape(&mut out, s);
    out
}

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}\
h1{font-size:1.3em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.5em 0 .2em}\
.summary{margin:0 0 1em;color:#444}.summary b{color:#000}\
.meta{color:#555;margin:0 0 .4em;font-size:.9em}\
table{border-collapse:collapse;width:100%;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;white-space:nowrap}\
th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}\
td.cause{white-space:normal;max-width:30em;word-break:break-word}\
tr.backup td.name::after{content:\" (backup)\";color:#777}\
td.state{font-weight:bold}\
tr.state-up td.state{background:#c8f0c8;color:#064}\
tr.state-down td.state{background:#f7c6c6;color:#900}\
tr.state-unavail td.state{background:#fbd9b0;color:#840}\
tr.state-checking td.state{background:#fff2a8;color:#660}\
tr.state-disabled td.state{background:#ddd;color:#555}\
tr.state-draining td.state{background:#dde8f7;color:#246}\
td.v-fail{color:#b00}td.v-pass{color:#070}td.v-unknown{color:#888}\
.empty{color:#777;font-style:italic}";

pub(crate) fn render(view: &StatusView, groups: &[Group<'_>]) -> String {
    let mut out = String::with_capacity(4096);
    let peers = groups.iter().flat_map(|g| g.peers.iter());
    let (up, total) = peers.fold((0usize, 0usize), |(u, t), p| {
        (u + usize::from(p.state.is_up()), t + 1)
    });
    let now = view.now_unix_ms;
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width\">");
    out.push_str("<title>ringfront upstream status</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>Upstream status</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"summary\" id=\"summary\" data-generation=\"{gen}\" data-upstreams=\"{ups}\" \
         data-peers=\"{total}\" data-up=\"{up}\" data-down=\"{down}\">\
         Generation <b>{gen}</b> &middot; <b>{ups}</b> upstreams &middot; \
         <b>{total}</b> peers: <b>{up}</b> up, <b>{down}</b> down &middot; \
         <time datetime=\"{t}\">{t}</time> &middot; up {uptime}</p>",
        gen = view.generation,
        ups = groups.len(),
        down = total - up,
        t = iso8601(now),
        uptime = short_duration(now.saturating_sub(view.started_unix_ms)),
    );
    for g in groups {
        let name = esc(&g.up.name);
        let _ = write!(
            out,
            "<section class=\"upstream\" data-upstream=\"{name}\">\n<h2>{name}</h2>\n\
             <p class=\"meta\">balancer {} &middot; passive {} &middot; ",
            esc(g.up.balancer),
            esc(g.up.passive)
        );
        if g.up.checks.is_empty() {
            out.push_str("no active checks");
        } else {
            out.push_str("checks: ");
            for (i, c) in g.up.checks.iter().enumerate() {
                if i > 0 {
                    out.push_str("; ");
                }
                let _ = write!(out, "<span class=\"check\">{}</span>", esc(c));
            }
        }
        out.push_str(
            "</p>\n<table>\n<thead><tr><th>#</th><th>Name</th><th>State</th>\
            <th>Active</th><th>Passive</th><th>Fails</th><th>Weight</th><th>Conns</th>\
            <th>Requests</th><th>5xx</th><th>Avg time</th><th>Last change</th>\
            <th>Cause</th></tr></thead>\n<tbody>\n",
        );
        if g.peers.is_empty() {
            out.push_str("<tr class=\"empty\"><td colspan=\"13\">no peers</td></tr>\n");
        }
        for p in &g.peers {
            row(&mut out, &name, p, now);
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }
    if groups.is_empty() {
        out.push_str("<p class=\"empty\">no upstreams</p>\n");
    }
    out.push_str("</body></html>\n");
    out
}

fn verdict_cell(out: &mut String, class: &str, v: Verdict) {
    let _ = write!(out, "<td class=\"{class} v-{s}\">{s}</td>", s = v.as_str());
}

fn row(out: &mut String, upstream: &str, p: &PeerView, now: u64) {
    let name = esc(&p.name);
    let state = p.state.as_str();
    let backup = if p.backup { " backup" } else { "" };
    let _ = write!(
        out,
        "<tr class=\"peer state-{state}{backup}\" id=\"peer-{upstream}-{id}\" \
         data-upstream=\"{upstream}\" data-peer=\"{name}\" data-index=\"{id}\" \
         data-state=\"{state}\"><td class=\"index num\">{id}</td>",
        id = p.id
    );
    let _ = write!(
        out,
        "<td class=\"name\" title=\"{}\">{name}</td>",
        esc(&p.server)
    );
    let _ = write!(out, "<td class=\"state\">{state}</td>");
    verdict_cell(out, "active", p.active);
    verdict_cell(out, "passive", p.passive);
    let _ = write!(
        out,
        "<td class=\"fails num\">{}/{}</td><td class=\"weight num\">{}/{}</td>\
         <td class=\"conns num\">{}</td><td class=\"requests num\">{}</td>\
         <td class=\"http5xx num\">{}</td>",
        p.fails,
        p.max_fails,
        p.weight,
        p.effective_weight,
        p.active_conns,
        p.requests,
        p.responses[4]
    );
    if p.response_time_ms > 0 {
        let _ = write!(out, "<td class=\"rt num\">{}ms</td>", p.response_time_ms);
    } else {
        out.push_str("<td class=\"rt num\">-</td>");
    }
    match p.last_change_unix_ms {
        Some(t) => {
            let _ = write!(
                out,
                "<td class=\"change\" title=\"{iso}\" data-unix-ms=\"{t}\">{} ago</td>",
                short_duration(now.saturating_sub(t)),
                iso = iso8601(t)
            );
        }
        None => out.push_str("<td class=\"change\">-</td>"),
    }
    out.push_str("<td class=\"cause\">");
    escape(out, p.last_change_cause.as_deref().unwrap_or(""));
    out.push_str("</td></tr>\n");
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;
    use super::super::{render as render_status, Query, StatusFormat};

    fn page(q: &str) -> String {
        let r = render_status(&sample(), StatusFormat::Html, &Query::parse(q).unwrap());
        String::from_utf8(r.body).unwrap()
    }

    #[test]
    fn page_structure() {
        let html = page("");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.ends_with("</html>\n"));
        assert!(html.contains("data-generation=\"4\" data-upstreams=\"2\" data-peers=\"6\" data-up=\"2\" data-down=\"4\""));
        assert!(html.contains(
            "<tr class=\"peer state-down\" id=\"peer-backend-1\" data-upstream=\"backend\" \
             data-peer=\"127.0.0.1:8082\""
        ));
        assert!(html.contains("<tr class=\"peer state-checking backup\""));
        assert!(html.contains("data-upstream=\"api &quot;v2&quot;\" data-peer=\"10.0.0.1:80\""));
        assert!(html.contains("<td class=\"state\">unavail</td>"));
        assert!(html.contains("<td class=\"active v-fail\">fail</td>"));
        assert!(html.contains("<td class=\"weight num\">5/3</td>"));
        assert!(html.contains("<td class=\"http5xx num\">5</td>"));
        assert!(html.contains("<td class=\"rt num\">12ms</td>"));
        assert!(html.contains(">1m05s ago</td>"));
        assert!(html.contains("<span class=\"check\">http GET / every 1s fails=1 passes=1</span>"));
        assert_eq!(html.matches("<tr class=\"peer ").count(), 6);
        // No external resources.
        assert!(!html.contains("src="));
        assert!(!html.contains("href="));
    }

    #[test]
    fn escapes_text() {
        let html = page("");
        assert!(!html.contains("<script>"));
        assert!(html.contains(
            "<td class=\"cause\">active check: &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;, status 503\nnext</td>"
        ));
        assert!(html.contains("<h2>api &quot;v2&quot;</h2>"));
    }

    #[test]
    fn filtered() {
        let html = page("status=up");
        assert_eq!(html.matches("<tr class=\"peer ").count(), 2);
        assert!(!html.contains("class=\"peer state-down"));
        let html = page("upstream=backend&status=down");
        assert_eq!(html.matches("<tr class=\"peer state-").count(), 2);
        assert!(!html.contains("api &quot;v2&quot;"));
    }
}
