//! Invariants of the configuration loader under arbitrary text, shared by the cargo-fuzz
//! target (`fuzz/fuzz_targets/config.rs`) and the stable corpus replay test
//! (`crates/ringfront-config/tests/fuzz_corpus.rs`), both of which include this file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

/// The main file the text poses as; its folder does not exist, so relative includes fail
/// with an error instead of reading files.
const MAIN_FILE: &str = "/nonexistent-ringfront-fuzz/conf/nginx.conf";

/// Never DNS: `fail*` hosts fail, `none*` hosts resolve to nothing, every other name
/// resolves to 127.0.0.1 and 127.0.0.2 on the given port.
fn resolver(host_port: &str) -> std::io::Result<Vec<SocketAddr>> {
    let (host, port) = host_port.rsplit_once(':').unwrap_or((host_port, "80"));
    let port: u16 = port
        .parse()
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad port"))?;
    if host.starts_with("fail") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "host not found",
        ));
    }
    if host.starts_with("none") {
        return Ok(Vec::new());
    }
    Ok(vec![
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), port),
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), port),
    ])
}

/// Would an `include` in this text reach files that are not small config files
/// (`/dev/stdin`, `/proc/...`) or glob the whole filesystem? Such inputs are skipped: the
/// loader reads what it is told to include, which is not a parser bug. Only the words
/// after each `include` up to the next `;`, `{` or `}` are looked at (a shipped config's
/// `access_log /dev/stdout` is fine); backslashes anywhere could spell `include`
/// differently, so text with both is skipped too.
fn reaches_outside(text: &str) -> bool {
    const RISKY: [&str; 7] = ["dev", "proc", "sys", "*", "?", "[", "\\"];
    if text.contains('\\') && text.contains("inc") {
        return true;
    }
    text.match_indices("include").any(|(at, _)| {
        let rest = &text[at..];
        let end = rest.find([';', '{', '}']).unwrap_or(rest.len());
        RISKY.iter().any(|risky| rest[..end].contains(risky))
    })
}

/// `parse_str_with` on arbitrary bytes (lossily made UTF-8): never panics; an error with a
/// line has a line >= 1 and a file, and its message is not empty; parsing twice gives the
/// same error (the loader is deterministic).
pub fn check_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if reaches_outside(&text) {
        return;
    }
    let path = Path::new(MAIN_FILE);
    match ringfront_config::parse_str_with(&text, path, &resolver) {
        Ok(config) => {
            let _ = format!("{config:?}");
        }
        Err(e) => {
            assert!(!e.message.is_empty(), "empty error message");
            if let Some(line) = e.line {
                assert!(line >= 1, "error at line {line}: {e}");
                assert!(e.file.is_some(), "error with a line but no file: {e:?}");
            }
            let _ = e.to_string();
            let again = ringfront_config::parse_str_with(&text, path, &resolver);
            assert_eq!(again.err(), Some(e), "second parse gives another error");
        }
    }
}
