//! `check_status prometheus`: the Prometheus text exposition format, version 0.0.4. Each
//! family gets its `# HELP` and `# TYPE` once, followed by all of its samples.

use std::fmt::Write;

use super::view::{PeerState, PeerView, StatusView, UpstreamView};
use super::Group;

/// Appends `v` as a label value: `\`, `"` and newline escaped.
fn label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value or `le` bound as Prometheus writes floats.
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// `name{upstream="..",peer=".."` (the caller adds more labels and the closing `}`).
fn peer_head(out: &mut String, name: &str, up: &UpstreamView, p: &PeerView) {
    out.push_str(name);
    out.push_str("{upstream=\"");
    label(out, &up.name);
    out.push_str("\",peer=\"");
    label(out, &p.name);
    out.push('"');
}

/// One gauge or counter family with one sample per peer.
fn per_peer(
    out: &mut String,
    groups: &[Group<'_>],
    name: &str,
    kind: &str,
    help: &str,
    value: impl Fn(&PeerView) -> u64,
) {
    family(out, name, kind, help);
    for g in groups {
        for p in &g.peers {
            peer_head(out, name, g.up, p);
            let _ = writeln!(out, "}} {}", value(p));
        }
    }
}

pub(crate) fn render(view: &StatusView, groups: &[Group<'_>]) -> String {
    let mut out = String::with_capacity(4096);
    let o = &mut out;

    family(
        o,
        "ringfront_generation",
        "gauge",
        "Configuration generation (reloads since start).",
    );
    let _ = writeln!(o, "ringfront_generation {}", view.generation);
    family(
        o,
        "ringfront_start_time_seconds",
        "gauge",
        "Start time of the server since the Unix epoch in seconds.",
    );
    let _ = writeln!(
        o,
        "ringfront_start_time_seconds {}",
        float(view.started_unix_ms as f64 / 1000.0)
    );

    let name = "ringfront_upstream_peer_state";
    family(
        o,
        name,
        "gauge",
        "Peer state: 1 for the current state, 0 for the others.",
    );
    for g in groups {
        for p in &g.peers {
            for s in PeerState::ALL {
                peer_head(o, name, g.up, p);
                let _ = writeln!(o, ",state=\"{}\"}} {}", s.as_str(), u8::from(p.state == s));
            }
        }
    }
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_backup",
        "gauge",
        "1 for a backup server.",
        |p| u64::from(p.backup),
    );
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_weight",
        "gauge",
        "Configured weight.",
        |p| u64::from(p.weight),
    );
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_effective_weight",
        "gauge",
        "Weight after the slow-start ramp.",
        |p| u64::from(p.effective_weight),
    );
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_max_conns",
        "gauge",
        "Configured max_conns (0: unlimited).",
        |p| u64::from(p.max_conns),
    );
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_active_connections",
        "gauge",
        "Upstream connections in use.",
        |p| u64::from(p.active_conns),
    );
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_fails",
        "gauge",
        "Current passive failure count within fail_timeout.",
        |p| u64::from(p.fails),
    );
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_requests_total",
        "counter",
        "Requests sent to the peer.",
        |p| p.requests,
    );

    let name = "ringfront_upstream_peer_responses_total";
    family(
        o,
        name,
        "counter",
        "Responses from the peer by status class.",
    );
    for g in groups {
        for p in &g.peers {
            for (class, n) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().zip(p.responses) {
                peer_head(o, name, g.up, p);
                let _ = writeln!(o, ",code=\"{class}\"}} {n}");
            }
        }
    }

    let name = "ringfront_upstream_peer_failures_total";
    family(
        o,
        name,
        "counter",
        "Failed attempts by kind (error, timeout, invalid_header, http_5xx, ...).",
    );
    for g in groups {
        for p in &g.peers {
            for (kind, n) in &p.failures {
                peer_head(o, name, g.up, p);
                o.push_str(",kind=\"");
                label(o, kind);
                let _ = writeln!(o, "\"}} {n}");
            }
        }
    }
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_unavail_total",
        "counter",
        "Times the peer was failed out passively.",
        |p| p.unavail,
    );

    let name = "ringfront_upstream_peer_health_checks_total";
    family(o, name, "counter", "Active health checks by result.");
    for g in groups {
        for p in &g.peers {
            let fail = p.checks_failed.min(p.checks_total);
            for (result, n) in [("pass", p.checks_total - fail), ("fail", fail)] {
                peer_head(o, name, g.up, p);
                let _ = writeln!(o, ",result=\"{result}\"}} {n}");
            }
        }
    }
    per_peer(
        o,
        groups,
        "ringfront_upstream_peer_unhealthy_total",
        "counter",
        "Times active checks turned the peer down.",
        |p| p.unhealthy,
    );

    let name = "ringfront_upstream_peer_downtime_seconds_total";
    family(
        o,
        name,
        "counter",
        "Time spent in a state other than up, seconds.",
    );
    for g in groups {
        for p in &g.peers {
            peer_head(o, name, g.up, p);
            let _ = writeln!(o, "}} {}", float(p.downtime_ms as f64 / 1000.0));
        }
    }

    let name = "ringfront_upstream_peer_response_time_seconds";
    family(o, name, "histogram", "Upstream response time, seconds.");
    for g in groups {
        for p in &g.peers {
            histogram(o, name, g.up, p);
        }
    }

    let name = "ringfront_worker_connections";
    family(o, name, "gauge", "Client connections open on the worker.");
    for w in &view.workers {
        let _ = writeln!(o, "{name}{{worker=\"{}\"}} {}", w.id, w.connections);
    }
    let name = "ringfront_worker_requests_total";
    family(o, name, "counter", "Client requests handled by the worker.");
    for w in &view.workers {
        let _ = writeln!(o, "{name}{{worker=\"{}\"}} {}", w.id, w.requests);
    }
    out
}

/// Cumulative `_bucket{le=..}` samples (ascending bounds, ending at `+Inf`), `_sum`,
/// `_count`. `+Inf` and `_count` are the larger of `rt_count` and the bucket total, so the
/// series stays consistent even if the caller's counters raced.
fn histogram(o: &mut String, name: &str, up: &UpstreamView, p: &PeerView) {
    let mut buckets: Vec<(f64, u64)> = p
        .rt_buckets
        .iter()
        .copied()
        .filter(|(le, _)| !le.is_nan())
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut cumulative = 0u64;
    let bucket = format!("{name}_bucket");
    let mut i = 0;
    while i < buckets.len() {
        let le = buckets[i].0;
        // Merge equal bounds; a +Inf bound joins the final +Inf bucket.
        while i < buckets.len() && buckets[i].0 == le {
            cumulative = cumulative.saturating_add(buckets[i].1);
            i += 1;
        }
        if le == f64::INFINITY {
            break;
        }
        peer_head(o, &bucket, up, p);
        let _ = writeln!(o, ",le=\"{}\"}} {cumulative}", float(le));
    }
    for b in &buckets[i..] {
        cumulative = cumulative.saturating_add(b.1);
    }
    let count = cumulative.max(p.rt_count);
    peer_head(o, &bucket, up, p);
    let _ = writeln!(o, ",le=\"+Inf\"}} {count}");
    peer_head(o, &format!("{name}_sum"), up, p);
    let _ = writeln!(o, "}} {}", float(p.rt_sum_s));
    peer_head(o, &format!("{name}_count"), up, p);
    let _ = writeln!(o, "}} {count}");
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap, HashSet};

    use super::super::testdata::{sample, NASTY_CAUSE};
    use super::super::view::PeerView;
    use super::super::{render as render_status, Query, StatusFormat};
    use super::*;

    #[derive(Debug)]
    struct Sample {
        name: String,
        labels: Vec<(String, String)>,
        value: f64,
    }

    fn is_name(s: &str) -> bool {
        let mut c = s.chars();
        matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
    }

    /// Parses `name{l="v",...} value` strictly; returns the sample.
    fn parse_sample(line: &str) -> Sample {
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => panic!("no value: {line}"),
        };
        assert!(is_name(name), "bad name in {line}");
        let mut labels = Vec::new();
        let mut rest = rest;
        if let Some(r) = rest.strip_prefix('{') {
            let mut chars = r.char_indices();
            loop {
                // label name
                let start = chars.clone().next().map(|(i, _)| i).unwrap();
                let mut end = start;
                for (i, c) in chars.by_ref() {
                    if c == '=' {
                        end = i;
                        break;
                    }
                }
                let lname = &r[start..end];
                assert!(is_name(lname), "bad label name {lname:?} in {line}");
                assert_eq!(chars.next().map(|x| x.1), Some('"'), "{line}");
                let mut value = String::new();
                loop {
                    match chars.next().map(|x| x.1) {
                        Some('\\') => match chars.next().map(|x| x.1) {
                            Some('\\') => value.push('\\'),
                            Some('"') => value.push('"'),
                            Some('n') => value.push('\n'),
                            other => panic!("bad escape {other:?} in {line}"),
                        },
                        Some('"') => break,
                        Some('\n') | None => panic!("unterminated label in {line}"),
                        Some(c) => value.push(c),
                    }
                }
                labels.push((lname.to_string(), value));
                match chars.next() {
                    Some((_, ',')) => continue,
                    Some((i, '}')) => {
                        rest = &r[i + 1..];
                        break;
                    }
                    other => panic!("bad label separator {other:?} in {line}"),
                }
            }
        }
        let v = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("no space: {line}"));
        let value = match v {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        Sample {
            name: name.to_string(),
            labels,
            value,
        }
    }

    /// Checks the whole exposition: HELP then TYPE once per family, before its samples; every
    /// sample belongs to the family declared last; histograms are cumulative and end at +Inf
    /// equal to _count. Returns the samples.
    fn check(text: &str) -> Vec<Sample> {
        assert!(text.ends_with('\n'));
        let mut types: HashMap<String, String> = HashMap::new();
        let mut helped = HashSet::new();
        let mut current: Option<(String, String)> = None;
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("# HELP ") {
                let name = h.split(' ').next().unwrap();
                assert!(helped.insert(name.to_string()), "HELP twice: {name}");
            } else if let Some(t) = line.strip_prefix("# TYPE ") {
                let (name, kind) = t.split_once(' ').unwrap();
                assert!(helped.contains(name), "TYPE before HELP: {name}");
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                    "{line}"
                );
                assert!(
                    types.insert(name.into(), kind.into()).is_none(),
                    "TYPE twice: {name}"
                );
                current = Some((name.into(), kind.into()));
            } else {
                assert!(
                    !line.starts_with('#') && !line.is_empty(),
                    "stray line {line:?}"
                );
                let s = parse_sample(line);
                let (fam, kind) = current.as_ref().expect("sample before any TYPE");
                let ok = if kind == "histogram" {
                    [
                        format!("{fam}_bucket"),
                        format!("{fam}_sum"),
                        format!("{fam}_count"),
                    ]
                    .contains(&s.name)
                } else {
                    &s.name == fam
                };
                assert!(ok, "sample {} under family {fam}", s.name);
                if kind == "counter" {
                    assert!(s.name.ends_with("_total"), "{}", s.name);
                }
                samples.push(s);
            }
        }
        // Histograms: per series, buckets ascending and cumulative, ending at +Inf == _count.
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut counts: BTreeMap<String, f64> = BTreeMap::new();
        for s in &samples {
            let key = |s: &Sample| {
                s.labels
                    .iter()
                    .filter(|(k, _)| k != "le")
                    .map(|(k, v)| format!("{k}={v:?}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            if let Some(base) = s.name.strip_suffix("_bucket") {
                let le = &s.labels.iter().find(|(k, _)| k == "le").expect("no le").1;
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                series
                    .entry(format!("{base}|{}", key(s)))
                    .or_default()
                    .push((le, s.value));
            } else if let Some(base) = s.name.strip_suffix("_count") {
                counts.insert(format!("{base}|{}", key(s)), s.value);
            }
        }
        assert!(!series.is_empty());
        for (k, b) in &series {
            assert!(
                b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
                "{k}: {b:?}"
            );
            let last = b.last().unwrap();
            assert_eq!(last.0, f64::INFINITY, "{k}");
            assert_eq!(Some(&last.1), counts.get(k), "{k}");
        }
        assert_eq!(series.len(), counts.len());
        samples
    }

    fn find<'a>(samples: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> &'a Sample {
        samples
            .iter()
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .unwrap_or_else(|| panic!("no {name} {labels:?}"))
    }

    fn text(q: &str) -> String {
        let r = render_status(
            &sample(),
            StatusFormat::Prometheus,
            &Query::parse(q).unwrap(),
        );
        String::from_utf8(r.body).unwrap()
    }

    #[test]
    fn exposition_is_valid() {
        let t = text("");
        let s = check(&t);
        let b = [("upstream", "backend"), ("peer", "127.0.0.1:8081")];
        assert_eq!(
            find(&s, "ringfront_upstream_peer_requests_total", &b).value,
            120.0
        );
        let timeout = [b[0], b[1], ("kind", "timeout")];
        assert_eq!(
            find(&s, "ringfront_upstream_peer_failures_total", &timeout).value,
            2.0
        );
        assert_eq!(
            find(
                &s,
                "ringfront_upstream_peer_state",
                &[b[0], b[1], ("state", "up")]
            )
            .value,
            1.0
        );
        assert_eq!(
            find(
                &s,
                "ringfront_upstream_peer_state",
                &[b[0], b[1], ("state", "down")]
            )
            .value,
            0.0
        );
        assert_eq!(
            find(&s, "ringfront_upstream_peer_effective_weight", &b).value,
            3.0
        );
        assert_eq!(
            find(&s, "ringfront_upstream_peer_active_connections", &b).value,
            2.0
        );
        assert_eq!(
            find(
                &s,
                "ringfront_upstream_peer_health_checks_total",
                &[b[0], b[1], ("result", "pass")]
            )
            .value,
            39.0
        );
        assert_eq!(
            find(
                &s,
                "ringfront_upstream_peer_health_checks_total",
                &[b[0], b[1], ("result", "fail")]
            )
            .value,
            1.0
        );
        assert_eq!(
            find(
                &s,
                "ringfront_upstream_peer_responses_total",
                &[b[0], b[1], ("code", "5xx")]
            )
            .value,
            5.0
        );
        let h = "ringfront_upstream_peer_response_time_seconds";
        assert_eq!(
            find(&s, &format!("{h}_bucket"), &[b[0], b[1], ("le", "0.01")]).value,
            50.0
        );
        assert_eq!(
            find(&s, &format!("{h}_bucket"), &[b[0], b[1], ("le", "1")]).value,
            115.0
        );
        assert_eq!(
            find(&s, &format!("{h}_bucket"), &[b[0], b[1], ("le", "+Inf")]).value,
            120.0
        );
        assert_eq!(find(&s, &format!("{h}_sum"), &b).value, 1.5);
        assert_eq!(
            find(&s, "ringfront_worker_connections", &[("worker", "1")]).value,
            1.0
        );
        assert_eq!(
            find(&s, "ringfront_worker_requests_total", &[("worker", "0")]).value,
            100.0
        );
        assert_eq!(find(&s, "ringfront_generation", &[]).value, 4.0);
        // Label values are escaped and parse back.
        assert!(t.contains("upstream=\"api \\\"v2\\\"\""));
        let api = [("upstream", "api \"v2\""), ("peer", "10.0.0.1:80")];
        assert_eq!(
            find(
                &s,
                "ringfront_upstream_peer_state",
                &[api[0], api[1], ("state", "unavail")]
            )
            .value,
            1.0
        );
        assert_eq!(
            find(&s, "ringfront_upstream_peer_downtime_seconds_total", &api).value,
            0.5
        );
        // One series per state per peer.
        let states = s
            .iter()
            .filter(|x| x.name == "ringfront_upstream_peer_state")
            .count();
        assert_eq!(states, 6 * PeerState::ALL.len());
    }

    #[test]
    fn label_escaping() {
        let mut o = String::new();
        label(&mut o, NASTY_CAUSE);
        label(&mut o, "a\\b");
        assert!(!o.contains('\n'));
        assert!(o.ends_with("a\\\\b"));
        assert!(o.contains("alert(\\\"x\\\")"));
    }

    #[test]
    fn odd_histograms() {
        let mut v = sample();
        let p: &mut PeerView = &mut v.upstreams[0].peers[0];
        // Unsorted, a duplicate bound, an explicit +Inf bucket, a NaN bound, a count that
        // lags the buckets.
        p.rt_buckets = vec![
            (1.0, 1),
            (0.1, 2),
            (0.1, 3),
            (f64::INFINITY, 4),
            (f64::NAN, 9),
        ];
        p.rt_count = 3;
        v.upstreams[0].peers[1].rt_buckets.clear();
        let r = render_status(&v, StatusFormat::Prometheus, &Query::default());
        let s = check(std::str::from_utf8(&r.body).unwrap());
        let b = [("upstream", "backend"), ("peer", "127.0.0.1:8081")];
        let h = "ringfront_upstream_peer_response_time_seconds";
        assert_eq!(
            find(&s, &format!("{h}_bucket"), &[b[0], b[1], ("le", "0.1")]).value,
            5.0
        );
        assert_eq!(
            find(&s, &format!("{h}_bucket"), &[b[0], b[1], ("le", "+Inf")]).value,
            10.0
        );
        assert_eq!(find(&s, &format!("{h}_count"), &b).value, 10.0);
        let d = [("upstream", "backend"), ("peer", "127.0.0.1:8082")];
        assert_eq!(
            find(&s, &format!("{h}_bucket"), &[d[0], d[1], ("le", "+Inf")]).value,
            4.0
        );
    }

    #[test]
    fn filtered() {
        let s = check(&text("status=down&upstream=backend"));
        let peers: HashSet<&str> = s
            .iter()
            .flat_map(|x| {
                x.labels
                    .iter()
                    .filter(|(k, _)| k == "peer")
                    .map(|(_, v)| v.as_str())
            })
            .collect();
        assert_eq!(peers, HashSet::from(["127.0.0.1:8082", "127.0.0.1:8083"]));
    }
}
