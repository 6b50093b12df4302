//! The Tengine-style JSON document (`check_status json`), and the small JSON writer it shares
//! with the API.

use std::fmt::Write;

use super::view::{PeerView, StatusView};
use super::{iso8601, Group};

/// Appends `s` as a JSON string literal. Besides the required escapes, `<`, `>` and `&` are
/// written as `\u00XX` so that the document is inert if a browser sniffs it as HTML.
pub(crate) fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number for `v`; `null` for NaN and infinities, which JSON cannot express.
pub(crate) fn push_f64(out: &mut String, v: f64) {
    if v.is_finite() {
        let _ = write!(out, "{v}");
    } else {
        out.push_str("null");
    }
}

/// Writes one JSON object or array, placing the commas.
pub(crate) struct Writer<'a> {
    out: &'a mut String,
    first: bool,
    close: char,
}

impl<'a> Writer<'a> {
    pub fn object(out: &'a mut String) -> Writer<'a> {
        out.push('{');
        Writer {
            out,
            first: true,
            close: '}',
        }
    }

    pub fn array(out: &'a mut String) -> Writer<'a> {
        out.push('[');
        Writer {
            out,
            first: true,
            close: ']',
        }
    }

    fn sep(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }

    /// Starts a member of an object: `"key":`; the value is written next, to the returned
    /// buffer.
    pub fn key(&mut self, k: &str) -> &mut String {
        self.sep();
        push_str(self.out, k);
        self.out.push(':');
        self.out
    }

    /// Starts an element of an array.
    pub fn item(&mut self) -> &mut String {
        self.sep();
        self.out
    }

    pub fn str(&mut self, k: &str, v: &str) {
        push_str(self.key(k), v);
    }

    pub fn num(&mut self, k: &str, v: u64) {
        let _ = write!(self.key(k), "{v}");
    }

    pub fn float(&mut self, k: &str, v: f64) {
        push_f64(self.key(k), v);
    }

    pub fn bool(&mut self, k: &str, v: bool) {
        self.key(k).push_str(if v { "true" } else { "false" });
    }

    pub fn opt_num(&mut self, k: &str, v: Option<u64>) {
        match v {
            Some(v) => self.num(k, v),
            None => self.key(k).push_str("null"),
        }
    }

    pub fn opt_str(&mut self, k: &str, v: Option<&str>) {
        match v {
            Some(v) => self.str(k, v),
            None => self.key(k).push_str("null"),
        }
    }

    pub fn end(self) {
        self.out.push(self.close);
    }
}

/// `{"servers":{"total":N,"generation":G,"server":[...]},"upstreams":[...],"workers":[...],
/// ...}`; see docs/status.md for the fields.
pub(crate) fn render(view: &StatusView, groups: &[Group<'_>]) -> String {
    let mut out = String::with_capacity(1024);
    let mut doc = Writer::object(&mut out);
    {
        let mut servers = Writer::object(doc.key("servers"));
        let total: usize = groups.iter().map(|g| g.peers.len()).sum();
        servers.num("total", total as u64);
        servers.num("generation", view.generation);
        let mut list = Writer::array(servers.key("server"));
        let mut index = 0u64;
        for g in groups {
            for p in &g.peers {
                let mut s = Writer::object(list.item());
                s.num("index", index);
                index += 1;
                s.str("upstream", &g.up.name);
                s.str("name", &p.name);
                s.str("status", if p.state.is_up() { "up" } else { "down" });
                s.num("rise", u64::from(p.rise));
                s.num("fall", u64::from(p.fall));
                s.str("type", g.up.check_type);
                peer_fields(&mut s, p);
                s.end();
            }
        }
        list.end();
        servers.end();
    }
    {
        let mut ups = Writer::array(doc.key("upstreams"));
        for g in groups {
            let mut u = Writer::object(ups.item());
            u.str("name", &g.up.name);
            u.str("balancer", g.up.balancer);
            u.str("type", g.up.check_type);
            u.str("passive", g.up.passive);
            let mut checks = Writer::array(u.key("checks"));
            for c in &g.up.checks {
                push_str(checks.item(), c);
            }
            checks.end();
            u.num("peers", g.peers.len() as u64);
            u.end();
        }
        ups.end();
    }
    {
        let mut ws = Writer::array(doc.key("workers"));
        for w in &view.workers {
            let mut o = Writer::object(ws.item());
            o.num("id", w.id as u64);
            o.num("connections", w.connections);
            o.num("requests", w.requests);
            o.end();
        }
        ws.end();
    }
    doc.num("now", view.now_unix_ms);
    doc.str("time", &iso8601(view.now_unix_ms));
    doc.num("started", view.started_unix_ms);
    doc.end();
    out.push('\n');
    out
}

/// Every [`PeerView`] field under its own name.
fn peer_fields(s: &mut Writer<'_>, p: &PeerView) {
    s.num("id", p.id as u64);
    s.str("server", &p.server);
    s.bool("backup", p.backup);
    s.bool("down_configured", p.down_configured);
    s.str("state", p.state.as_str());
    s.str("active", p.active.as_str());
    s.str("passive", p.passive.as_str());
    s.num("fails", u64::from(p.fails));
    s.num("max_fails", u64::from(p.max_fails));
    s.num("fail_timeout_s", p.fail_timeout_s);
    s.num("weight", u64::from(p.weight));
    s.num("effective_weight", u64::from(p.effective_weight));
    s.num("slow_start_s", p.slow_start_s);
    s.num("max_conns", u64::from(p.max_conns));
    s.num("active_conns", u64::from(p.active_conns));
    s.num("requests", p.requests);
    {
        let mut r = Writer::object(s.key("responses"));
        for (class, n) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().zip(p.responses) {
            r.num(class, n);
        }
        r.num("total", p.responses_total());
        r.end();
    }
    {
        let mut f = Writer::object(s.key("failures"));
        for (kind, n) in &p.failures {
            f.num(kind, *n);
        }
        f.end();
    }
    s.num("failures_total", p.failures_total());
    s.num("unavail", p.unavail);
    s.num("response_time_ms", p.response_time_ms);
    {
        let mut b = Writer::array(s.key("rt_buckets"));
        for (le, n) in &p.rt_buckets {
            let mut pair = Writer::array(b.item());
            push_f64(pair.item(), *le);
            let _ = write!(pair.item(), "{n}");
            pair.end();
        }
        b.end();
    }
    s.float("rt_sum_s", p.rt_sum_s);
    s.num("rt_count", p.rt_count);
    s.num("checks_total", p.checks_total);
    s.num("checks_failed", p.checks_failed);
    s.num("unhealthy", p.unhealthy);
    s.opt_num("last_change_unix_ms", p.last_change_unix_ms);
    s.opt_str("last_change_cause", p.last_change_cause.as_deref());
    s.opt_num("last_selected_unix_ms", p.last_selected_unix_ms);
    s.num("downtime_ms", p.downtime_ms);
}

#[cfg(test)]
mod tests {
    use super::super::testdata::{sample, NASTY_CAUSE};
    use super::super::{render, Query, StatusFormat};
    use super::*;
    use serde_json::Value;

    fn doc(q: &str) -> Value {
        let r = render(&sample(), StatusFormat::Json, &Query::parse(q).unwrap());
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn strings_escape() {
        let mut s = String::new();
        push_str(&mut s, "a\"b\\c\nd\u{1}<e>&\u{2028}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001\u003ce\u003e\u0026\u2028é""#);
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\nd\u{1}<e>&\u{2028}é");
        let mut f = String::new();
        push_f64(&mut f, f64::NAN);
        f.push(',');
        push_f64(&mut f, 1.0);
        f.push(',');
        push_f64(&mut f, 0.005);
        assert_eq!(f, "null,1,0.005");
    }

    #[test]
    fn tengine_document() {
        let d = doc("");
        let servers = &d["servers"];
        assert_eq!(servers["total"], 6);
        assert_eq!(servers["generation"], 4);
        let list = servers["server"].as_array().unwrap();
        assert_eq!(list.len(), 6);
        let indexes: Vec<u64> = list.iter().map(|s| s["index"].as_u64().unwrap()).collect();
        assert_eq!(indexes, [0, 1, 2, 3, 4, 5]);
        let first = &list[0];
        assert_eq!(first["upstream"], "backend");
        assert_eq!(first["name"], "127.0.0.1:8081");
        assert_eq!(first["status"], "up");
        assert_eq!(first["rise"], 5);
        assert_eq!(first["type"], "http");
        assert_eq!(first["weight"], 5);
        assert_eq!(first["effective_weight"], 3);
        assert_eq!(first["responses"]["5xx"], 5);
        assert_eq!(first["responses"]["total"], 120);
        assert_eq!(first["failures"]["timeout"], 2);
        assert_eq!(first["failures_total"], 8);
        assert_eq!(first["rt_buckets"][0][0], 0.005);
        assert_eq!(first["rt_buckets"][3][1], 5);
        assert_eq!(first["last_selected_unix_ms"], 1_699_999_999_990u64);
        let down = &list[1];
        assert_eq!(down["status"], "down");
        assert_eq!(down["state"], "down");
        assert_eq!(down["active"], "fail");
        assert_eq!(down["fall"], 3);
        assert_eq!(down["last_change_cause"], NASTY_CAUSE);
        assert_eq!(list[2]["backup"], true);
        assert_eq!(list[2]["server"], "backup.example:8083");
        assert_eq!(list[2]["last_change_cause"], Value::Null);
        assert_eq!(list[3]["upstream"], "api \"v2\"");
        assert_eq!(list[3]["state"], "unavail");
        assert_eq!(list[3]["type"], "none");
        assert_eq!(list[5]["down_configured"], true);
        assert_eq!(d["workers"][1]["requests"], 31);
        assert_eq!(d["upstreams"][1]["passive"], "confirm");
        assert_eq!(
            d["upstreams"][0]["checks"][0],
            "http GET / every 1s fails=1 passes=1"
        );
        assert_eq!(d["time"], "2023-11-14T22:13:20.000Z");
        // The raw text never holds the cause's markup.
        let raw = render(&sample(), StatusFormat::Json, &Query::default()).body;
        assert!(!String::from_utf8(raw).unwrap().contains("<script>"));
    }

    #[test]
    fn filtered() {
        let d = doc("status=up");
        assert_eq!(d["servers"]["total"], 2);
        let d = doc("upstream=api%20%22v2%22&status=down");
        let list = d["servers"]["server"].as_array().unwrap();
        let names: Vec<&str> = list.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["10.0.0.1:80", "10.0.0.3:80"]);
        assert_eq!(d["upstreams"].as_array().unwrap().len(), 1);
    }
}
