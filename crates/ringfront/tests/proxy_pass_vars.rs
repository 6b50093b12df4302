//! `proxy_pass` with variables against real nginx on the same configuration: the evaluated
//! URL names an `upstream` block (by name, case-insensitively, only without a port), an
//! implicit group of another `proxy_pass` (by host and port), or a literal address; the URI
//! part, when the value has one, is the whole URI sent; a name needing DNS is a 502 (no
//! resolver), a bad value a 500. Compared: status, which backend answered, the target and
//! `Host` it received.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn config(p: u16, b1: u16, b2: u16) -> String {
    fill(
        r#"worker_processes 1;
error_log stderr info;
events { worker_connections 64; }
http {
    access_log off;
    upstream u {
        server 127.0.0.1:{B1};
    }
    server {
        listen 127.0.0.1:{PORT};
        location /implicit/ {
            proxy_pass http://127.0.0.1:{B2};
        }
        location /v/ {
            proxy_pass http://$arg_to;
        }
        location /w/ {
            proxy_pass http://$arg_to/base$uri?x=1;
        }
        location ~ ^/re/ {
            proxy_pass http://$arg_to/r;
        }
        location /q/ {
            proxy_pass http://$arg_to?only=args;
        }
        location /scheme/ {
            proxy_pass $arg_s://u;
        }
        location /closed/ {
            proxy_pass http://127.0.0.1:$arg_p;
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("B1", b1.to_string()),
            ("B2", b2.to_string()),
        ],
    )
}

/// Status, the backend that got the request (`b1`, `b2`, `-`), its target and `Host`.
fn answers(p: u16, b1: &Backend, b2: &Backend, requests: &[String]) -> Vec<String> {
    requests
        .iter()
        .map(|path| {
            // nginx closes the connection after a 500.
            let mut c = Client::connect(("127.0.0.1", p));
            let (n1, n2) = (b1.requests().len(), b2.requests().len());
            let r = c.request("GET", path, &[("Host", "localhost")], b"");
            let got = |b: &Backend, before: usize| b.requests().get(before..).map(<[_]>::to_vec);
            let seen = match (got(b1, n1).as_deref(), got(b2, n2).as_deref()) {
                (Some([one]), Some([])) => Some(("b1", one.clone())),
                (Some([]), Some([one])) => Some(("b2", one.clone())),
                _ => None,
            };
            match seen {
                Some((who, req)) => format!(
                    "{} {who} {} host={}",
                    r.status,
                    req.target,
                    req.header("Host").unwrap_or("-")
                ),
                None => format!("{} -", r.status),
            }
        })
        .collect()
}

#[test]
fn proxy_pass_with_variables_matches_nginx() {
    let (b1, b2) = (Backend::start(), Backend::start());
    let (p1, p2) = (b1.port(), b2.port());
    // A port nothing listens on: the literal address is tried and refused.
    let closed = common::port();
    let requests: Vec<String> = [
        "/v/a?to=u&k=1".to_string(),
        "/v/a?to=U".into(),
        "/v/a?to=u:80".into(),
        format!("/v/a?to=127.0.0.1:{p1}"),
        format!("/v/a?to=127.0.0.1:{p2}"),
        format!("/v/a%20b?to=127.0.0.1:{p2}"),
        "/v/?to=nosuch.test".into(),
        "/v/?to=127.0.0.1:0".into(),
        "/v/?to=:81".into(),
        "/w/x?to=u&k=1".into(),
        format!("/w/y?to=127.0.0.1:{p1}"),
        "/re/z?to=u".into(),
        "/q/z?to=u".into(),
        "/scheme/?s=http".into(),
        "/scheme/?s=ftp".into(),
        format!("/closed/?p={closed}"),
        "/implicit/i".into(),
    ]
    .into();
    let (nginx, rf, np, rp) = common::nginx_and_ringfront(|p| config(p, p1, p2));
    let n = answers(np, &b1, &b2, &requests);
    let r = answers(rp, &b1, &b2, &requests);
    common::assert_same("proxy_pass_vars", &n, &r);
    // The oracle exercised the cases.
    for want in [
        "200 b1 /v/a?to=u&k=1 host=u",
        &format!("200 b2 /v/a?to=127.0.0.1:{p2} host=127.0.0.1:{p2}"),
        "200 b1 /base/w/x?x=1 host=u",
        "200 b1 /r host=u",
        "200 b1 /?only=args host=u",
        "502 -",
        "500 -",
    ] {
        assert!(n.iter().any(|a| a == want), "{want}: {n:?}");
    }
    let second = std::time::Duration::from_secs(5);
    for line in [
        "no resolver defined to resolve nosuch.test",
        "invalid URL prefix in \"ftp://u\"",
        "invalid port in upstream \"127.0.0.1:0\"",
    ] {
        assert!(rf.wait_for_stderr(line, second), "ringfront: {line}");
        assert!(nginx_logged(&nginx, line), "nginx: {line}");
    }
}

/// nginx wrote `line` to its error log (stderr here, or the harness's file).
fn nginx_logged(n: &ringfront_testkit::Nginx, line: &str) -> bool {
    n.error_log_contents().contains(line) || n.stderr_lines().iter().any(|l| l.contains(line))
}

/// A literal address gets a group of its own for the request, without keepalive: each
/// request opens a connection and asks to close it, as nginx (which keeps connections only
/// for `upstream` blocks with `keepalive`). (`b` is no group's server here: one that is
/// would be reached through its group, pooled.)
#[test]
fn a_literal_address_is_not_kept_alive() {
    let (b, other) = (Backend::start(), Backend::start());
    let p = common::port();
    let rf = ringfront_testkit::Ringfront::start(&config(p, other.port(), other.port()));
    let mut c = Client::connect(("127.0.0.1", p));
    for _ in 0..3 {
        let path = format!("/v/?to=127.0.0.1:{}", b.port());
        assert_eq!(c.request("GET", &path, &[], b"").status, 200);
    }
    assert_eq!(b.accepted(), 3, "one connection per request");
    let reqs = b.requests();
    assert!(reqs.iter().all(|r| r.header("Connection") == Some("close")));
    drop(rf);
}
