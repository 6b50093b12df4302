//! The browser facts nginx reads from the first `User-Agent` field while parsing the head
//! (`ngx_http_process_user_agent`): old MSIE (`msie6`, for `gzip_disable msie6` and
//! `keepalive_disable msie6`) and Safari on Mac OS X (`keepalive_disable safari`).

/// nginx's `r->headers_in.msie6`: `MSIE 4.`, `MSIE 5.`, or `MSIE 6.` without `SV1`
/// after it, unless the agent also says `Opera`.
pub fn is_msie6(ua: &[u8]) -> bool {
    let Some(at) = msie(ua) else {
        return false;
    };
    if ua[at + 6] != b'.' {
        return false;
    }
    let old = match ua[at + 5] {
        b'4' | b'5' => true,
        b'6' => find(&ua[at + 8..], b"SV1").is_none(),
        _ => false,
    };
    old && find(ua, b"Opera").is_none()
}

/// nginx's `r->headers_in.safari`: neither MSIE nor Opera nor Gecko nor Chrome, and both
/// `Safari/` and `Mac OS X` present.
pub fn is_safari(ua: &[u8]) -> bool {
    let msie = msie(ua).is_some();
    let opera = find(ua, b"Opera").is_some();
    !msie
        && !opera
        && find(ua, b"Gecko/").is_none()
        && find(ua, b"Chrome/").is_none()
        && find(ua, b"Safari/").is_some()
        && find(ua, b"Mac OS X").is_some()
}

/// nginx's `keepalive_disable` test in `ngx_http_update_location_config`: old MSIE closes
/// after a POST, Safari after anything, each when listed. `ua` finds the `User-Agent`
/// only when the answer depends on it (not for a GET under the default `msie6`).
pub fn keepalive_disabled<'a>(
    set: ringfront_config::model::KeepaliveDisable,
    method: &[u8],
    ua: impl FnOnce() -> Option<&'a [u8]>,
) -> bool {
    let msie6 = set.msie6 && method == b"POST";
    if !msie6 && !set.safari {
        return false;
    }
    let Some(ua) = ua() else {
        return false;
    };
    (msie6 && is_msie6(ua)) || (set.safari && is_safari(ua))
}

/// Where `MSIE ` starts when the version digit and two more bytes follow it (nginx's
/// `msie + 7 < end`).
fn msie(ua: &[u8]) -> Option<usize> {
    find(ua, b"MSIE ").filter(|at| at + 7 < ua.len())
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msie6_as_nginx() {
        assert!(is_msie6(b"Mozilla/4.0 (compatible; MSIE 5.0; Windows)"));
        assert!(is_msie6(
            b"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"
        ));
        assert!(!is_msie6(
            b"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"
        ));
        assert!(!is_msie6(b"Mozilla/4.0 (compatible; MSIE 7.0; Windows)"));
        assert!(!is_msie6(b"MSIE 5.0; Opera"));
        assert!(!is_msie6(b"MSIE 5."), "needs a byte after the dot");
        assert!(is_msie6(b"MSIE 5.0"));
    }

    #[test]
    fn keepalive_disable_as_nginx() {
        use ringfront_config::model::KeepaliveDisable;
        let old = Some(&b"MSIE 5.0;"[..]);
        let safari = Some(&b"Mac OS X Safari/7534.48.3"[..]);
        let msie6 = KeepaliveDisable::MSIE6;
        assert!(keepalive_disabled(msie6, b"POST", || old));
        assert!(
            !keepalive_disabled(msie6, b"GET", || old),
            "msie6: POST only"
        );
        assert!(!keepalive_disabled(msie6, b"GET", || safari));
        let both = KeepaliveDisable {
            msie6: true,
            safari: true,
        };
        assert!(keepalive_disabled(both, b"GET", || safari));
        assert!(
            !keepalive_disabled(KeepaliveDisable::default(), b"POST", || old),
            "none"
        );
        assert!(!keepalive_disabled(both, b"POST", || None));
    }

    #[test]
    fn safari_as_nginx() {
        assert!(is_safari(b"Mac OS X Safari/7534.48.3"));
        assert!(!is_safari(b"Safari/7534.48.3"), "not on Mac OS X");
        assert!(!is_safari(b"Mac OS X Chrome/1 Safari/7534"));
        assert!(!is_safari(b"Mac OS X Gecko/2010 Safari/7534"));
        assert!(!is_safari(b"Mac OS X MSIE 5.0; Safari/7534"));
        assert!(!is_safari(b"Mac OS X Opera Safari/7534"));
    }
}
