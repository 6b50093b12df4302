//! Field-value helpers shared by requests and responses: OWS trimming, comma-separated
//! lists, `Connection` tokens and the RFC 9110 7.6.1 hop-by-hop set.

use crate::ascii::eq_ignore_case;
use crate::known::Known;

/// Remove optional whitespace (SP / HTAB, RFC 9110 5.6.3) from both ends.
pub fn trim_ows(value: &[u8]) -> &[u8] {
    let start = value
        .iter()
        .position(|b| !is_ows(*b))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ows(*b))
        .map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or_default()
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// RFC 9110 5.6.2 `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Non-empty elements of a comma-separated list (RFC 9110 5.6.1), each OWS-trimmed.
pub fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|b| *b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// Calls `f` with each element of a comma-separated list, as [`list_elements`]; a value
/// without a comma (nearly every `Connection` value: `close`, `keep-alive`) is one element,
/// trimmed, without the splitting iterator's cost.
fn each_element(value: &[u8], mut f: impl FnMut(&[u8])) {
    if !value.contains(&b',') {
        let e = trim_ows(value);
        if !e.is_empty() {
            f(e);
        }
        return;
    }
    list_elements(value).for_each(f);
}

/// Does the comma-separated Connection header value list this header name
/// (case-insensitive token match)?
pub fn connection_lists(connection_value: &[u8], name: &[u8]) -> bool {
    list_elements(connection_value).any(|e| eq_ignore_case(e, name))
}

/// RFC 9110 7.6.1 hop-by-hop: connection, keep-alive, proxy-connection, te, trailer,
/// transfer-encoding, upgrade (case-insensitive). Headers listed in `Connection` are
/// hop-by-hop as well; check those with [`connection_lists`].
pub fn is_hop_by_hop(name: &[u8]) -> bool {
    Known::of(name).hop_by_hop()
}

/// A message's `Connection` value, looked at once: whether it lists a field name other than
/// `close` and the hop-by-hop names (nearly every message lists only `close`, `keep-alive` or
/// `upgrade`), so that asking about each of the message's fields costs nothing then.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionList<'a> {
    value: &'a [u8],
    names_fields: bool,
    close: bool,
}

impl<'a> ConnectionList<'a> {
    pub fn new(value: &'a [u8]) -> Self {
        let mut list = ConnectionList {
            value,
            names_fields: false,
            close: false,
        };
        // The values nearly every message has (none, `keep-alive`, `close`) without the
        // list's scan.
        if value.is_empty() || eq_ignore_case(value, b"keep-alive") {
            return list;
        }
        if eq_ignore_case(value, b"close") {
            list.close = true;
            return list;
        }
        each_element(value, |t| {
            if eq_ignore_case(t, b"close") {
                list.close = true;
            } else if !is_hop_by_hop(t) {
                list.names_fields = true;
            }
        });
        list
    }

    /// Whether the field `name`, of the kind `known` (as parsed), is hop-by-hop in this
    /// message: by its name ([`Known::hop_by_hop`]) or listed in this value
    /// ([`connection_lists`]).
    #[inline]
    pub fn hop_by_hop(&self, known: Known, name: &[u8]) -> bool {
        known.hop_by_hop()
            || match self.names_fields {
                true => connection_lists(self.value, name),
                false => self.close && eq_ignore_case(name, b"close"),
            }
    }
}

/// Tokens of interest collected from every `Connection` header of a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectionTokens {
    pub close: bool,
    pub keep_alive: bool,
    pub upgrade: bool,
}

impl ConnectionTokens {
    pub(crate) fn add(&mut self, value: &[u8]) {
        each_element(value, |token| {
            if eq_ignore_case(token, b"close") {
                self.close = true;
            } else if eq_ignore_case(token, b"keep-alive") {
                self.keep_alive = true;
            } else if eq_ignore_case(token, b"upgrade") {
                self.upgrade = true;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_element_is_list_elements() {
        let values: [&[u8]; 9] = [
            b"",
            b" \t ",
            b"keep-alive",
            b" close\t",
            b"x-secret",
            b"a,b",
            b", ,a ,, b,",
            b",",
            b"Upgrade, Keep-Alive",
        ];
        for v in values {
            let mut seen = Vec::new();
            each_element(v, |e| seen.push(e.to_vec()));
            let want: Vec<Vec<u8>> = list_elements(v).map(<[u8]>::to_vec).collect();
            assert_eq!(seen, want, "{v:?}");
        }
    }

    #[test]
    fn connection_list_answers_as_the_plain_checks() {
        let values: [&[u8]; 9] = [
            b"",
            b"keep-alive",
            b"close",
            b"Upgrade, Keep-Alive",
            b"close, x-secret",
            b" , X-Secret ,te",
            b"CLOSE",
            b" x-secret ",
            b"\tclose",
        ];
        let names: [&[u8]; 10] = [
            b"x-secret",
            b"X-SECRET",
            b"close",
            b"Close",
            b"te",
            b"Keep-Alive",
            b"content-type",
            b"upgrade",
            b"Transfer-Encoding",
            b"proxy-connectio",
        ];
        for v in values {
            let list = ConnectionList::new(v);
            for n in names {
                let plain = is_hop_by_hop(n) || connection_lists(v, n);
                assert_eq!(list.hop_by_hop(Known::of(n), n), plain, "{v:?} {n:?}");
            }
        }
    }

    #[test]
    fn hop_by_hop_names_by_length() {
        for n in [
            &b"Connection"[..],
            b"keep-alive",
            b"Proxy-Connection",
            b"TE",
            b"trailer",
            b"Transfer-Encoding",
            b"UPGRADE",
        ] {
            assert!(is_hop_by_hop(n), "{n:?}");
        }
        for n in [
            &b"t"[..],
            b"tee",
            b"trailers",
            b"upgrades",
            b"connectio",
            b"",
            b"host",
        ] {
            assert!(!is_hop_by_hop(n), "{n:?}");
        }
    }

    #[test]
    fn trims_ows_only() {
        assert_eq!(trim_ows(b"  a b\t "), b"a b");
        assert_eq!(trim_ows(b""), b"");
        assert_eq!(trim_ows(b" \t "), b"");
        assert_eq!(trim_ows(b"x"), b"x");
        assert_eq!(trim_ows(b"\r x\n"), b"\r x\n");
    }

    #[test]
    fn list_skips_empty_elements() {
        let v: Vec<&[u8]> = list_elements(b" a, ,b ,,\tc\t,").collect();
        assert_eq!(v, vec![&b"a"[..], b"b", b"c"]);
        assert_eq!(list_elements(b"").count(), 0);
        assert_eq!(list_elements(b" , ,").count(), 0);
    }

    #[test]
    fn connection_lists_matches_tokens() {
        assert!(connection_lists(b"keep-alive, Upgrade", b"upgrade"));
        assert!(connection_lists(b"X-Foo", b"x-foo"));
        assert!(!connection_lists(b"x-foobar", b"x-foo"));
        assert!(!connection_lists(b"", b"close"));
        assert!(!connection_lists(b"close", b""));
    }

    #[test]
    fn hop_by_hop_set() {
        for name in [
            "Connection",
            "KEEP-ALIVE",
            "proxy-connection",
            "TE",
            "Trailer",
            "transfer-encoding",
            "Upgrade",
        ] {
            assert!(is_hop_by_hop(name.as_bytes()), "{name}");
        }
        for name in ["trailers", "host", "content-length", "", "x-upgrade"] {
            assert!(!is_hop_by_hop(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn connection_tokens_accumulate() {
        let mut t = ConnectionTokens::default();
        t.add(b"Keep-Alive");
        t.add(b"foo, UPGRADE");
        assert_eq!(
            t,
            ConnectionTokens {
                close: false,
                keep_alive: true,
                upgrade: true
            }
        );
        t.add(b"close");
        assert!(t.close);
    }

    #[test]
    fn tchar_set() {
        assert!(is_tchar(b'a') && is_tchar(b'Z') && is_tchar(b'9') && is_tchar(b'~'));
        assert!(!is_tchar(b' ') && !is_tchar(b':') && !is_tchar(b'"') && !is_tchar(0x80));
    }
}
