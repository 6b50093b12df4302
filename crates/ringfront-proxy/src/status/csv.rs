//! `check_status csv`: a header line, then one line per peer (RFC 4180, CRLF line ends).

use std::fmt::Write;

use super::Group;

pub(crate) const HEADER: &str = "upstream,index,name,state,active,passive,fails,max_fails,weight,\
effective_weight,active_conns,requests,failures,response_time_ms,last_change_unix_ms,cause";

/// Appends `s` as one field, quoted (with `"` doubled) when it holds a comma, a quote, CR or
/// LF.
fn field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

pub(crate) fn render(groups: &[Group<'_>]) -> String {
    let mut out = String::with_capacity(256);
    out.push_str(HEADER);
    out.push_str("\r\n");
    for g in groups {
        for p in &g.peers {
            field(&mut out, &g.up.name);
            let _ = write!(out, ",{},", p.id);
            field(&mut out, &p.name);
            let _ = write!(
                out,
                ",{},{},{},{},{},{},{},{},{},{},{},",
                p.state.as_str(),
                p.active.as_str(),
                p.passive.as_str(),
                p.fails,
                p.max_fails,
                p.weight,
                p.effective_weight,
                p.active_conns,
                p.requests,
                p.failures_total(),
                p.response_time_ms,
            );
            if let Some(t) = p.last_change_unix_ms {
                let _ = write!(out, "{t}");
            }
            out.push(',');
            field(&mut out, p.last_change_cause.as_deref().unwrap_or(""));
            out.push_str("\r\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testdata::{sample, NASTY_CAUSE};
    use super::super::{render as render_status, Query, StatusFormat};
    use super::HEADER;

    /// A strict RFC 4180 reader: records end with CRLF; quoted fields may hold anything.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let mut row = Vec::new();
        let mut cur = String::new();
        let mut chars = text.chars().peekable();
        let mut quoted = false;
        let mut was_quoted = false;
        while let Some(c) = chars.next() {
            if quoted {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        cur.push('"');
                    } else {
                        quoted = false;
                    }
                } else {
                    cur.push(c);
                }
                continue;
            }
            match c {
                '"' => {
                    assert!(cur.is_empty() && !was_quoted, "quote inside a field");
                    quoted = true;
                    was_quoted = true;
                }
                ',' => {
                    row.push(std::mem::take(&mut cur));
                    was_quoted = false;
                }
                '\r' => {
                    assert_eq!(chars.next(), Some('\n'), "CR without LF");
                    row.push(std::mem::take(&mut cur));
                    rows.push(std::mem::take(&mut row));
                    was_quoted = false;
                }
                '\n' => panic!("bare LF outside quotes"),
                c => {
                    assert!(!was_quoted, "text after a closing quote");
                    cur.push(c);
                }
            }
        }
        assert!(!quoted && cur.is_empty() && row.is_empty(), "unterminated");
        rows
    }

    #[test]
    fn lines_and_quoting() {
        let r = render_status(&sample(), StatusFormat::Csv, &Query::default());
        let text = String::from_utf8(r.body).unwrap();
        let rows = parse(&text);
        let header: Vec<&str> = HEADER.split(',').collect();
        assert_eq!(rows[0], header);
        assert_eq!(rows.len(), 7);
        assert!(rows.iter().all(|r| r.len() == header.len()), "{rows:?}");
        assert_eq!(
            rows[1],
            [
                "backend",
                "0",
                "127.0.0.1:8081",
                "up",
                "pass",
                "pass",
                "0",
                "1",
                "5",
                "3",
                "2",
                "120",
                "8",
                "12",
                "1699999935000",
                "active check passed"
            ]
        );
        assert_eq!(rows[2][3], "down");
        assert_eq!(rows[2][15], NASTY_CAUSE);
        assert_eq!(rows[3][14], "");
        assert_eq!(rows[4][0], "api \"v2\"");
        assert_eq!(rows[4][3], "unavail");
        assert_eq!(rows[6][3], "disabled");
        assert!(text.contains("\"api \"\"v2\"\"\""));
    }

    #[test]
    fn filters() {
        let q = Query::parse("upstream=backend&status=down").unwrap();
        let r = render_status(&sample(), StatusFormat::Csv, &q);
        let rows = parse(std::str::from_utf8(&r.body).unwrap());
        let names: Vec<&str> = rows[1..].iter().map(|r| r[2].as_str()).collect();
        assert_eq!(names, ["127.0.0.1:8082", "127.0.0.1:8083"]);
    }
}
