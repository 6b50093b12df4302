//! `etag on|off` and `max_ranges N` on static files against real nginx: without an ETag
//! `If-None-Match` never gives 304, `If-Match` always fails (412) and a quoted `If-Range`
//! serves the whole file; more ranges than `max_ranges` serve the whole file, and
//! `max_ranges 0` turns ranges off, `Accept-Ranges` included.

mod common;

use common::fill;
use ringfront_testkit::{Client, Nginx, Ringfront, TempDir};

fn config(port: u16, dir: &str) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location /a/ { alias {DIR}/; }
        location /noetag/ { alias {DIR}/; etag off; }
        location /two/ { alias {DIR}/; max_ranges 2; }
        location /none/ { alias {DIR}/; max_ranges 0; }
    }
}
",
        &[("PORT", port.to_string()), ("DIR", dir.to_string())],
    )
}

fn observed(port: u16) -> Vec<String> {
    let get = |path: &str, headers: &[(&str, &str)]| {
        let mut h = vec![("Host", "a")];
        h.extend_from_slice(headers);
        Client::connect(("127.0.0.1", port)).request("GET", path, &h, b"")
    };
    let first = get("/a/f.txt", &[]);
    let etag = first.header("etag").unwrap_or("\"none\"").to_string();
    let e = etag.as_str();
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("/a/f.txt", vec![]),
        ("/a/f.txt", vec![("If-None-Match", e)]),
        ("/a/f.txt", vec![("Range", "bytes=0-1"), ("If-Range", e)]),
        ("/noetag/f.txt", vec![]),
        ("/noetag/f.txt", vec![("If-None-Match", e)]),
        ("/noetag/f.txt", vec![("If-Match", e)]),
        ("/noetag/f.txt", vec![("If-Match", "*")]),
        ("/noetag/f.txt", vec![("If-None-Match", "*")]),
        (
            "/noetag/f.txt",
            vec![("Range", "bytes=0-1"), ("If-Range", e)],
        ),
        ("/noetag/f.txt", vec![("Range", "bytes=0-1")]),
        ("/two/f.txt", vec![("Range", "bytes=0-1,3-4")]),
        ("/two/f.txt", vec![("Range", "bytes=0-1,3-4,6-7")]),
        ("/two/f.txt", vec![("Range", "bytes=0-1")]),
        ("/none/f.txt", vec![("Range", "bytes=0-1")]),
        ("/none/f.txt", vec![]),
    ];
    let mut out = Vec::new();
    for (path, headers) in cases {
        let r = get(path, &headers);
        let multipart = r
            .header("content-type")
            .is_some_and(|t| t.starts_with("multipart/"));
        out.push(format!(
            "{path} {headers:?} -> {} etag={:?} accept-ranges={:?} content-range={:?} len={}",
            r.status,
            r.header("etag"),
            r.header("accept-ranges"),
            r.header("content-range"),
            // Error pages differ in their server line (a documented deviation).
            match (multipart, r.status >= 400) {
                (true, _) => "multipart".to_string(),
                (_, true) => "error page".to_string(),
                _ => r.body.len().to_string(),
            },
        ));
    }
    out
}

#[test]
fn etag_and_max_ranges_match_nginx() {
    let dir = TempDir::new("rf-etag-ranges");
    std::fs::write(dir.path().join("f.txt"), b"0123456789abcdef").unwrap();
    let d = dir.path().display().to_string();
    let n = {
        let port = common::port();
        let _n = Nginx::start(&config(port, &d), port);
        observed(port)
    };
    let r = {
        let port = common::port();
        let _r = Ringfront::start(&config(port, &d));
        observed(port)
    };
    common::assert_same("etag / max_ranges", &n, &r);
    assert!(n[1].contains("-> 304"), "{}", n[1]);
    assert!(n[3].contains("-> 200 etag=None"), "{}", n[3]);
    assert!(n[5].contains("-> 412"), "{}", n[5]);
    assert!(
        n[10].contains("-> 206") && n[10].ends_with("len=multipart"),
        "{}",
        n[10]
    );
    assert!(
        n[11].contains("-> 200") && n[11].contains("accept-ranges=Some"),
        "{}",
        n[11]
    );
    assert!(
        n[13].contains("-> 200") && n[13].contains("accept-ranges=None"),
        "{}",
        n[13]
    );
}
