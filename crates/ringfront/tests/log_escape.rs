//! `log_format ... escape=default|json|none` against real nginx: the same requests (quotes,
//! backslashes, a tab, UTF-8 and a variable that is not found) logged in each mode, the
//! lines compared byte for byte.

mod common;

use common::fill;
use ringfront_testkit::{Client, TempDir};

fn config(p: u16, dir: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    log_format d escape=default '$request_uri|$http_x_v|$cookie_none|$arg_a';
    log_format j escape=json '{"u":"$request_uri","v":"$http_x_v","c":"$cookie_none","a":"$arg_a"}';
    log_format n escape=none '$request_uri|$http_x_v|$cookie_none|$arg_a';
    server {
        listen 127.0.0.1:{PORT};
        access_log {DIR}/d.log d;
        access_log {DIR}/j.log j;
        access_log {DIR}/n.log n;
        location / { return 204; }
    }
}
"#,
        &[("PORT", p.to_string()), ("DIR", dir.display().to_string())],
    )
}

const REQUESTS: &[(&str, &str)] = &[
    ("/plain?a=1", "simple"),
    ("/q?a=%22x%22", "say \"hi\" \\ back\tslash"),
    ("/u?a=", "caf\u{e9} \u{2603}"),
];

fn lines(p: u16, dir: &std::path::Path) -> Vec<Vec<String>> {
    for (target, v) in REQUESTS {
        let mut c = Client::connect(("127.0.0.1", p));
        let r = c.request("GET", target, &[("Host", "a"), ("X-V", v)], b"");
        assert_eq!(r.status, 204);
    }
    ["d", "j", "n"]
        .iter()
        .map(|f| common::log_lines(&dir.join(format!("{f}.log")), REQUESTS.len()))
        .collect()
}

#[test]
fn log_escaping_matches_nginx() {
    let (nd, rd) = (TempDir::new("nginx-logs"), TempDir::new("rf-logs"));
    let (np, rp) = (common::port(), common::port());
    let _n = ringfront_testkit::Nginx::start(&config(np, nd.path()), np);
    let _r = ringfront_testkit::Ringfront::start(&config(rp, rd.path()));
    let n = lines(np, nd.path());
    let r = lines(rp, rd.path());
    for (a, b) in n.iter().flatten().zip(r.iter().flatten()) {
        println!("nginx {a}\n   rf {b}");
    }
    assert_eq!(r, n);
    assert!(
        n[1][1].contains(r#""v":"say \"hi\" \\ back\tslash""#),
        "{n:?}"
    );
    // Not found: `-` with escape=default, nothing with json and none.
    assert_eq!(n[0][0], "/plain?a=1|simple|-|1");
    assert_eq!(n[2][0], "/plain?a=1|simple||1");
}
