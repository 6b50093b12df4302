//! Invariants of the configuration loader under arbitrary text, shared by the cargo-fuzz
//! target (`fuzz/fuzz_targets/config.rs`) and the stable corpus replay test
//! (`crates/ringfront-config/tests/fuzz_corpus.rs`), both of which include this file.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use ringfront_config::{GlobError, Host, MemoryHost};

/// The main file the text poses as, in the in-memory machine below.
const MAIN_FILE: &str = "/fuzz/conf/nginx.conf";

/// Files an `include` can reach: a glob, a block, a server and a cycle. Nothing else exists
/// (`/dev/stdin`, `/proc/...` included): the loader reads only through the host.
const FILES: [(&str, &str); 5] = [
    ("/fuzz/conf/events.conf", "events {}\n"),
    ("/fuzz/conf/conf.d/a.conf", "worker_processes 2;\n"),
    ("/fuzz/conf/conf.d/b.conf", "error_log stderr;\n"),
    (
        "/fuzz/conf/servers/one.conf",
        "server {\n    listen 8080;\n    location / { proxy_pass http://backend; }\n}\n",
    ),
    ("/fuzz/conf/self.conf", "include self.conf;\n"),
];

/// No disk and no DNS: files from [`FILES`]; `fail*` hosts fail, `none*` hosts resolve to
/// nothing, every other name resolves to 127.0.0.1 and 127.0.0.2 on the given port.
struct FuzzHost(MemoryHost);

impl FuzzHost {
    fn new() -> Self {
        FuzzHost(FILES.iter().fold(MemoryHost::new(), |host, (path, text)| {
            host.file(*path, *text)
        }))
    }
}

impl Host for FuzzHost {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.0.read(path)
    }

    fn glob(&self, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        self.0.glob(pattern)
    }

    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        if name.starts_with("fail") {
            return Err(io::Error::new(io::ErrorKind::NotFound, "host not found"));
        }
        if name.starts_with("none") {
            return Ok(Vec::new());
        }
        Ok(vec![
            SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), port),
            SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), port),
        ])
    }
}

/// `parse_str` on arbitrary bytes (lossily made UTF-8) with the in-memory [`FuzzHost`]:
/// never panics; an error with a line has a line >= 1 and a file, and its message is not
/// empty; parsing twice gives the same error (the loader is deterministic).
pub fn check_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let path = Path::new(MAIN_FILE);
    let host = FuzzHost::new();
    match ringfront_config::parse_str(&text, path, &host) {
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
            let again = ringfront_config::parse_str(&text, path, &host);
            assert_eq!(again.err(), Some(e), "second parse gives another error");
        }
    }
}
