//! The static module against real nginx on the same configuration and the same files:
//! `root`, `alias` (prefix and regex locations), `index`, `types` / `default_type` (with
//! Debian's mime.types), directories with and without their slash, missing files, methods,
//! URIs that need decoding and normalising; status, the head's fields and their order, body.

mod common;
mod static_common;

use ringfront_testkit::Client;

use static_common::{compare, config, files};

const REQUESTS: &[&str] = &[
    "/",
    "/a.txt",
    "/style.css",
    "/UPPER.HTML",
    "/empty.txt",
    "/noext",
    "/big.bin",
    "/missing",
    "/dir",
    "/dir?x=1",
    "/dir/",
    "/noindex/",
    "/nodir/",
    "/a.txt/",
    "HEAD /a.txt",
    "HEAD /missing",
    "POST /a.txt",
    "POST /missing",
    "POST /noindex/",
    "PUT /a.txt",
    "DELETE /dir/",
    "/i/pic.gif",
    "/one",
    "/any.regex",
    "/idx/",
    "/hdr/a.txt",
    "/hdr/missing",
    "/ctypes/f.cust",
    "/plain/f.html",
    "/a%2etxt",
    "/sub/../a.txt",
    "/sub/./../a.txt",
    "//a.txt",
    "/space%20name.txt",
    "/idx2/?k=v",
    "/abs/",
    "/own/a.txt",
    "/varidx/?name=index",
    "/varidx/?name=none",
];

#[test]
fn static_files_match_nginx() {
    let requests: Vec<(&str, &[(&str, &str)])> = REQUESTS.iter().map(|r| (*r, &[][..])).collect();
    let n = compare(config, &requests);
    let has = |want: &str| n.iter().any(|a| a.contains(want));
    for want in [
        "200 /style.css",
        "Content-Type=text/css",
        "301 /dir ",
        "403 /noindex/",
        "405 PUT",
        "Content-Type=text/x-custom",
        "sum=",
        "exact index uri=/idx2/index.html args=k=v",
    ] {
        assert!(has(want), "{want}: {n:?}");
    }
}

/// Refused URIs: a `..` above the root and a broken escape are 400s.
#[test]
fn uris_nginx_refuses() {
    let requests: Vec<(&str, &[(&str, &str)])> =
        vec![("/../a.txt", &[]), ("/sub/../../a.txt", &[]), ("/%zz", &[])];
    compare(config, &requests);
}

/// nginx's error-log lines for a missing file, a directory without index and a missing
/// directory.
#[test]
fn error_log_lines_read_as_nginx() {
    let p = common::port();
    let dir = files();
    let cfg = config(p).replace("events {", "error_log stderr info;\nevents {");
    let rf = ringfront_testkit::Ringfront::start(&cfg);
    let www = dir.join("www").display().to_string();
    for (path, line) in [
        (
            "/missing",
            format!("open() \"{www}/missing\" failed (2: No such file or directory)"),
        ),
        (
            "/noindex/",
            format!("directory index of \"{www}/noindex/\" is forbidden"),
        ),
        (
            "/nodir/",
            format!("\"{www}/nodir\" is not found (2: No such file or directory)"),
        ),
    ] {
        let mut c = Client::connect(("127.0.0.1", p));
        c.request("GET", path, &[], b"");
        let want = format!(
            "{line}, client: 127.0.0.1, server: localhost, request: \"GET {path} HTTP/1.1\", host: \"127.0.0.1:{p}\""
        );
        assert!(
            rf.wait_for_stderr(&want, std::time::Duration::from_secs(5)),
            "{want}"
        );
    }
}
