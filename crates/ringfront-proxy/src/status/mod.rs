//! The health status page (`check_status`: HTML, CSV, JSON, Prometheus text) and the
//! read-only nginx-Plus-style API (`api`), as pure functions of a [`StatusView`] the caller
//! fills from the live counters. See docs/status.md for every format, field and error.

pub mod api;
pub mod api_servers;
mod collect;
mod csv;
mod html;
mod json;
mod prometheus;
pub mod query;
pub mod view;
pub use collect::collect;

pub use api::{api, ApiResponse, API_CONTENT_TYPE};
pub use query::{Query, QueryError, StatusFilter};
pub use ringfront_config::StatusFormat;
pub use view::{PeerState, PeerView, StatusView, UpstreamView, Verdict, WorkerView};

/// A status response ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// 200, 400 (bad query) or 404 (`upstream=` names no upstream).
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

pub const HTML_CONTENT_TYPE: &str = "text/html; charset=utf-8";
pub const CSV_CONTENT_TYPE: &str = "text/csv; charset=utf-8";
pub const JSON_CONTENT_TYPE: &str = "application/json";
/// The Prometheus text exposition format, version 0.0.4.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// One upstream and the peers the filters kept.
pub(crate) struct Group<'a> {
    pub up: &'a UpstreamView,
    pub peers: Vec<&'a PeerView>,
}

/// Applies `upstream=` and `status=`; `None` when `upstream=` names no upstream.
pub(crate) fn select<'a>(view: &'a StatusView, q: &Query) -> Option<Vec<Group<'a>>> {
    if let Some(name) = &q.upstream {
        if !view.upstreams.iter().any(|u| &u.name == name) {
            return None;
        }
    }
    let groups = view
        .upstreams
        .iter()
        .filter(|u| match &q.upstream {
            Some(n) => n == &u.name,
            None => true,
        })
        .map(|up| Group {
            up,
            peers: up
                .peers
                .iter()
                .filter(|p| match q.status {
                    None => true,
                    Some(StatusFilter::Up) => p.state.is_up(),
                    Some(StatusFilter::Down) => !p.state.is_up(),
                })
                .collect(),
        })
        .collect();
    Some(groups)
}

/// Renders the status of `view` in `query.format`, else `format` (the location's configured
/// default), keeping the upstreams and peers the query selects.
pub fn render(view: &StatusView, format: StatusFormat, query: &Query) -> Rendered {
    let Some(groups) = select(view, query) else {
        let name = query.upstream.as_deref().unwrap_or("");
        return text(404, format!("unknown upstream {name:?}\n"));
    };
    let format = query.format.unwrap_or(format);
    let (content_type, body) = match format {
        StatusFormat::Html => (HTML_CONTENT_TYPE, html::render(view, &groups)),
        StatusFormat::Csv => (CSV_CONTENT_TYPE, csv::render(&groups)),
        StatusFormat::Json => (JSON_CONTENT_TYPE, json::render(view, &groups)),
        StatusFormat::Prometheus => (PROMETHEUS_CONTENT_TYPE, prometheus::render(view, &groups)),
    };
    Rendered {
        status: 200,
        content_type,
        body: body.into_bytes(),
    }
}

/// Parses `raw_query` (the part after `?`, with or without it) and renders; a bad query is a
/// 400 with the reason as plain text.
pub fn render_query(view: &StatusView, format: StatusFormat, raw_query: &str) -> Rendered {
    match Query::parse(raw_query) {
        Ok(q) => render(view, format, &q),
        Err(e) => text(400, format!("{e}\n")),
    }
}

fn text(status: u16, body: String) -> Rendered {
    Rendered {
        status,
        content_type: TEXT_CONTENT_TYPE,
        body: body.into_bytes(),
    }
}

/// `2024-05-06T07:08:09.123Z` for milliseconds since the Unix epoch (proleptic Gregorian,
/// UTC).
pub(crate) fn iso8601(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

/// Year, month, day of the `days`th day after 1970-01-01 (the days-to-civil conversion on
/// 400-year eras, shifted so that years start on March 1).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// A short duration: `850ms`, `42s`, `5m07s`, `3h02m`, `12d04h`.
pub(crate) fn short_duration(ms: u64) -> String {
    let s = ms / 1000;
    if s == 0 {
        format!("{ms}ms")
    } else if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600)
    }
}

#[cfg(test)]
pub(crate) mod testdata;

#[cfg(test)]
mod tests {
    use super::testdata::sample;
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso8601(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
        // No overflow or panic at the end of the range.
        assert!(iso8601(u64::MAX).ends_with('Z'));
    }

    #[test]
    fn durations() {
        assert_eq!(short_duration(850), "850ms");
        assert_eq!(short_duration(42_000), "42s");
        assert_eq!(short_duration(307_000), "5m07s");
        assert_eq!(short_duration(10_920_000), "3h02m");
        assert_eq!(short_duration(1_051_200_000), "12d04h");
        assert!(!short_duration(u64::MAX).is_empty());
    }

    #[test]
    fn format_and_filters() {
        let v = sample();
        let r = render(&v, StatusFormat::Html, &Query::default());
        assert_eq!((r.status, r.content_type), (200, HTML_CONTENT_TYPE));
        let r = render_query(&v, StatusFormat::Html, "format=csv&status=up");
        assert_eq!((r.status, r.content_type), (200, CSV_CONTENT_TYPE));
        let body = String::from_utf8(r.body).unwrap();
        // Header + the two peers in state up.
        assert_eq!(body.lines().count(), 3, "{body}");
        assert!(body.lines().skip(1).all(|l| l.contains(",up,")), "{body}");
        let r = render_query(&v, StatusFormat::Json, "status=down&upstream=backend");
        assert_eq!((r.status, r.content_type), (200, JSON_CONTENT_TYPE));
        let doc: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let servers = doc["servers"]["server"].as_array().unwrap();
        assert_eq!(servers.len(), 2);
        assert!(servers.iter().all(|s| s["upstream"] == "backend"));
        assert!(servers.iter().all(|s| s["status"] == "down"));
        let r = render_query(&v, StatusFormat::Csv, "format=prometheus");
        assert_eq!(r.content_type, PROMETHEUS_CONTENT_TYPE);
    }

    #[test]
    fn errors() {
        let v = sample();
        let r = render_query(&v, StatusFormat::Html, "format=xml");
        assert_eq!((r.status, r.content_type), (400, TEXT_CONTENT_TYPE));
        assert!(String::from_utf8(r.body).unwrap().contains("xml"));
        let r = render_query(&v, StatusFormat::Html, "status=%zz");
        assert_eq!(r.status, 400);
        let r = render_query(&v, StatusFormat::Html, "upstream=nope");
        assert_eq!(r.status, 404);
        // An empty view renders in every format.
        let empty = StatusView::default();
        for f in [
            StatusFormat::Html,
            StatusFormat::Csv,
            StatusFormat::Json,
            StatusFormat::Prometheus,
        ] {
            assert_eq!(render(&empty, f, &Query::default()).status, 200);
        }
    }
}
