//! The field names the proxy acts on, recognised once, when a head is parsed (nginx looks
//! each field up in its `headers_in` hash as it reads it). Every later question about a
//! field (framing, hop-by-hop, hidden by default, rewritten) is then a compare of one byte,
//! where it was a chain of case-insensitive name compares at each place that asked.

/// A field name the proxy acts on; `Other` for the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Known {
    #[default]
    Other,
    // The RFC 9110 7.6.1 hop-by-hop set.
    Te,
    Trailer,
    Upgrade,
    Connection,
    KeepAlive,
    ProxyConnection,
    TransferEncoding,
    // Framing and routing.
    ContentLength,
    ContentType,
    Host,
    Expect,
    // nginx's `proxy_hide_header` defaults: `Date`, `Server`, `X-Pad` and five `X-Accel-*`.
    Date,
    Server,
    XPad,
    XAccelExpires,
    XAccelRedirect,
    XAccelLimitRate,
    XAccelBuffering,
    XAccelCharset,
    // What `expires`, `proxy_redirect` and `proxy_cookie_*` change.
    Expires,
    CacheControl,
    Location,
    Refresh,
    SetCookie,
}

impl Known {
    /// The name's kind, ASCII case-insensitive: sorted out by length, then compared as at
    /// most three words of eight bytes, not byte by byte.
    pub fn of(name: &[u8]) -> Known {
        let n = name.len();
        if !(2..=18).contains(&n) {
            return Known::Other;
        }
        let w = Words::of(name);
        let is = |t: &Target| t.matches(&w);
        match n {
            2 if is(&TE) => Known::Te,
            4 if is(&HOST) => Known::Host,
            4 if is(&DATE) => Known::Date,
            5 if is(&X_PAD) => Known::XPad,
            6 if is(&SERVER) => Known::Server,
            6 if is(&EXPECT) => Known::Expect,
            7 if is(&UPGRADE) => Known::Upgrade,
            7 if is(&TRAILER) => Known::Trailer,
            7 if is(&EXPIRES) => Known::Expires,
            7 if is(&REFRESH) => Known::Refresh,
            8 if is(&LOCATION) => Known::Location,
            10 if is(&CONNECTION) => Known::Connection,
            10 if is(&KEEP_ALIVE) => Known::KeepAlive,
            10 if is(&SET_COOKIE) => Known::SetCookie,
            12 if is(&CONTENT_TYPE) => Known::ContentType,
            13 if is(&CACHE_CONTROL) => Known::CacheControl,
            14 if is(&CONTENT_LENGTH) => Known::ContentLength,
            15 if is(&X_ACCEL_CHARSET) => Known::XAccelCharset,
            15 if is(&X_ACCEL_EXPIRES) => Known::XAccelExpires,
            16 if is(&PROXY_CONNECTION) => Known::ProxyConnection,
            16 if is(&X_ACCEL_REDIRECT) => Known::XAccelRedirect,
            17 if is(&TRANSFER_ENCODING) => Known::TransferEncoding,
            17 if is(&X_ACCEL_BUFFERING) => Known::XAccelBuffering,
            18 if is(&X_ACCEL_LIMIT_RATE) => Known::XAccelLimitRate,
            _ => Known::Other,
        }
    }

    /// RFC 9110 7.6.1 hop-by-hop by its name (fields a `Connection` value lists are too:
    /// [`crate::ConnectionList`]).
    pub fn hop_by_hop(self) -> bool {
        matches!(
            self,
            Known::Te
                | Known::Trailer
                | Known::Upgrade
                | Known::Connection
                | Known::KeepAlive
                | Known::ProxyConnection
                | Known::TransferEncoding
        )
    }

    /// In nginx's default `proxy_hide_header` list: the upstream's `Date` and `Server`
    /// (replaced by ours), `X-Pad` and the `X-Accel-*` controls.
    pub fn hidden_by_default(self) -> bool {
        matches!(
            self,
            Known::Date
                | Known::Server
                | Known::XPad
                | Known::XAccelExpires
                | Known::XAccelRedirect
                | Known::XAccelLimitRate
                | Known::XAccelBuffering
                | Known::XAccelCharset
        )
    }
}

/// A name of 2 to 18 bytes as words, as it came: its first eight bytes, its last eight
/// (overlapping the first, or the same word when the name is shorter) and its bytes 8..16
/// (the last word again when the name has 16 bytes or fewer).
struct Words([u64; 3]);

impl Words {
    #[inline]
    fn of(name: &[u8]) -> Words {
        let n = name.len();
        if n < 8 {
            return Words([short(name); 3]);
        }
        let last = le(name, n - 8);
        let middle = match n > 16 {
            true => le(name, 8),
            false => last,
        };
        Words([le(name, 0), last, middle])
    }
}

/// A lower-case name's words, and per word the case bit (0x20) where the name has a
/// letter. A name's word equals the target's, ignoring ASCII case, exactly when it does
/// once that bit is set in it: only `A`..=`Z` and the letter itself become a lower-case
/// letter that way, and where the target has no letter (`-`, the zeros past a short
/// name) the bytes must be equal as they are.
struct Target {
    words: [u64; 3],
    case: [u64; 3],
}

impl Target {
    const fn of(s: &[u8]) -> Target {
        let n = s.len();
        let at = if n < 8 {
            [(0, n); 3]
        } else if n > 16 {
            [(0, 8), (n - 8, 8), (8, 8)]
        } else {
            [(0, 8), (n - 8, 8), (n - 8, 8)]
        };
        let mut t = Target {
            words: [0; 3],
            case: [0; 3],
        };
        let mut i = 0;
        while i < 3 {
            let (from, len) = at[i];
            let mut k = len;
            while k > 0 {
                k -= 1;
                let b = s[from + k];
                t.words[i] = (t.words[i] << 8) | b as u64;
                let bit = if b.is_ascii_lowercase() { 0x20 } else { 0 };
                t.case[i] = (t.case[i] << 8) | bit;
            }
            i += 1;
        }
        t
    }

    #[inline]
    fn matches(&self, w: &Words) -> bool {
        (w.0[0] | self.case[0]) == self.words[0]
            && (w.0[1] | self.case[1]) == self.words[1]
            && (w.0[2] | self.case[2]) == self.words[2]
    }
}

/// Eight bytes of `s` from `at`, little-endian; 0 past the end (never, as called).
#[inline]
fn le(s: &[u8], at: usize) -> u64 {
    s.get(at..at + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Two to seven bytes, little-endian, zero above them: two overlapping loads (the bytes
/// both hold are the same, so or-ing them loses nothing).
#[inline]
fn short(s: &[u8]) -> u64 {
    let n = s.len();
    let two = |at: usize| {
        s.get(at..at + 2)
            .and_then(|w| <[u8; 2]>::try_from(w).ok())
            .map_or(0, |w| u64::from(u16::from_le_bytes(w)))
    };
    let four = |at: usize| {
        s.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map_or(0, |w| u64::from(u32::from_le_bytes(w)))
    };
    match n {
        0..=1 => s.first().map_or(0, |&b| u64::from(b)),
        2..=3 => two(0) | (two(n - 2) << (8 * (n - 2))),
        _ => four(0) | (four(n - 4) << (8 * (n - 4))),
    }
}

const TE: Target = Target::of(b"te");
const HOST: Target = Target::of(b"host");
const DATE: Target = Target::of(b"date");
const X_PAD: Target = Target::of(b"x-pad");
const SERVER: Target = Target::of(b"server");
const EXPECT: Target = Target::of(b"expect");
const UPGRADE: Target = Target::of(b"upgrade");
const TRAILER: Target = Target::of(b"trailer");
const EXPIRES: Target = Target::of(b"expires");
const REFRESH: Target = Target::of(b"refresh");
const LOCATION: Target = Target::of(b"location");
const CONNECTION: Target = Target::of(b"connection");
const KEEP_ALIVE: Target = Target::of(b"keep-alive");
const SET_COOKIE: Target = Target::of(b"set-cookie");
const CONTENT_TYPE: Target = Target::of(b"content-type");
const CACHE_CONTROL: Target = Target::of(b"cache-control");
const CONTENT_LENGTH: Target = Target::of(b"content-length");
const X_ACCEL_CHARSET: Target = Target::of(b"x-accel-charset");
const X_ACCEL_EXPIRES: Target = Target::of(b"x-accel-expires");
const PROXY_CONNECTION: Target = Target::of(b"proxy-connection");
const X_ACCEL_REDIRECT: Target = Target::of(b"x-accel-redirect");
const TRANSFER_ENCODING: Target = Target::of(b"transfer-encoding");
const X_ACCEL_BUFFERING: Target = Target::of(b"x-accel-buffering");
const X_ACCEL_LIMIT_RATE: Target = Target::of(b"x-accel-limit-rate");

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [(&str, Known); 24] = [
        ("te", Known::Te),
        ("trailer", Known::Trailer),
        ("upgrade", Known::Upgrade),
        ("connection", Known::Connection),
        ("keep-alive", Known::KeepAlive),
        ("proxy-connection", Known::ProxyConnection),
        ("transfer-encoding", Known::TransferEncoding),
        ("content-length", Known::ContentLength),
        ("content-type", Known::ContentType),
        ("host", Known::Host),
        ("expect", Known::Expect),
        ("date", Known::Date),
        ("server", Known::Server),
        ("x-pad", Known::XPad),
        ("x-accel-expires", Known::XAccelExpires),
        ("x-accel-redirect", Known::XAccelRedirect),
        ("x-accel-limit-rate", Known::XAccelLimitRate),
        ("x-accel-buffering", Known::XAccelBuffering),
        ("x-accel-charset", Known::XAccelCharset),
        ("expires", Known::Expires),
        ("cache-control", Known::CacheControl),
        ("location", Known::Location),
        ("refresh", Known::Refresh),
        ("set-cookie", Known::SetCookie),
    ];

    #[test]
    fn every_known_name_in_any_case() {
        for (name, kind) in NAMES {
            assert_eq!(Known::of(name.as_bytes()), kind, "{name}");
            let upper = name.to_ascii_uppercase();
            assert_eq!(Known::of(upper.as_bytes()), kind, "{upper}");
        }
    }

    #[test]
    fn near_misses_are_other() {
        let names = [
            "",
            "t",
            "tf",
            "hosts",
            "hos",
            "dat",
            "servers",
            "upgrad",
            "upgrades",
            "trailers",
            "connectio",
            "keep_alive",
            "set-cookie2",
            "x-accel-",
            "x-accel-foo",
            "x-accel-xxxxxxxx",
            "proxy-authorization",
            "content-typf",
            "contentlength",
            "location2",
            "referer",
            "x-forwarded-for",
            "transfer-encodinh",
            "x-accel-bufferinh",
            "refresg",
        ];
        for n in names {
            assert_eq!(Known::of(n.as_bytes()), Known::Other, "{n}");
        }
    }

    #[test]
    fn agrees_with_a_byte_at_a_time_compare() {
        // Every name of the known lengths made of the known names' bytes in both cases, a
        // byte off, and bytes that only match with a careless lower-casing (`\r` | 0x20 is
        // `-`, `@` | 0x20 is a backtick).
        let odd = [b'\r', b'@', b'[', b'_', b'^', 0xc4, 0xe4];
        for (name, kind) in NAMES {
            let name = name.as_bytes();
            for i in 0..name.len() {
                for b in odd
                    .iter()
                    .copied()
                    .chain([name[i] ^ 1, name[i].to_ascii_uppercase()])
                {
                    let mut m = name.to_vec();
                    m[i] = b;
                    let want = match m.eq_ignore_ascii_case(name) {
                        true => kind,
                        false => Known::Other,
                    };
                    assert_eq!(Known::of(&m), want, "{:?}", String::from_utf8_lossy(&m));
                }
            }
        }
    }

    #[test]
    fn hop_by_hop_and_hidden_sets() {
        let hop = NAMES.iter().filter(|(_, k)| k.hop_by_hop()).count();
        assert_eq!(hop, 7);
        let hidden = NAMES.iter().filter(|(_, k)| k.hidden_by_default()).count();
        assert_eq!(hidden, 8);
        assert!(!Known::Other.hop_by_hop() && !Known::Other.hidden_by_default());
    }
}
