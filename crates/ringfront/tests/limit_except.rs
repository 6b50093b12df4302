//! `limit_except` against real nginx on the same configuration: methods listed (GET brings
//! HEAD) keep the location's configuration, others get the block's (`deny`, `allow`, its
//! own `proxy_pass` without a URI part), nested locations do not inherit it, static ones,
//! and `error_page` for its 403; which backend answered and with which URI.

mod common;

use common::fill;
use ringfront_testkit::{Backend, Client};

fn config(p: u16, one: u16, two: u16, root: &std::path::Path) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    root {ROOT};
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;

        location = /page {
            return 200 "page m=$request_method\n";
        }
        location /lmt/ {
            proxy_pass http://127.0.0.1:{ONE};
            limit_except GET {
                deny all;
            }
        }
        location /allow/ {
            proxy_pass http://127.0.0.1:{ONE};
            limit_except GET POST {
                allow 127.0.0.1;
                deny all;
            }
        }
        location /refuse/ {
            proxy_pass http://127.0.0.1:{ONE};
            limit_except POST {
                deny 127.0.0.1;
            }
        }
        location /swap/ {
            proxy_pass http://127.0.0.1:{ONE}/replacement/;
            limit_except POST {
                proxy_pass http://127.0.0.1:{TWO};
            }
        }
        location /keep/ {
            proxy_pass http://127.0.0.1:{ONE}/replacement/;
            limit_except POST {
            }
        }
        location /nested/ {
            limit_except GET {
                deny all;
            }
            location /nested/inner/ {
                proxy_pass http://127.0.0.1:{ONE};
            }
        }
        location /static/ {
            limit_except GET {
                deny all;
            }
        }
        location /err/ {
            error_page 403 /page;
            proxy_pass http://127.0.0.1:{ONE};
            limit_except GET {
                deny all;
            }
        }
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("ONE", one.to_string()),
            ("TWO", two.to_string()),
            ("ROOT", root.display().to_string()),
        ],
    )
}

const REQUESTS: &[(&str, &str)] = &[
    ("GET", "/lmt/a"),
    ("HEAD", "/lmt/a"),
    ("POST", "/lmt/a"),
    ("DELETE", "/lmt/a"),
    ("PUT", "/allow/a"),
    ("GET", "/allow/a"),
    ("POST", "/refuse/a"),
    ("GET", "/refuse/a"),
    ("GET", "/swap/a?k=1"),
    ("POST", "/swap/a?k=1"),
    ("GET", "/keep/a"),
    ("POST", "/nested/inner/a"),
    ("GET", "/nested/inner/a"),
    ("POST", "/static/x"),
    ("GET", "/static/x"),
    ("POST", "/err/x"),
];

fn answers(p: u16, one: &Backend, two: &Backend) -> Vec<String> {
    REQUESTS
        .iter()
        .map(|(method, path)| {
            let (b1, b2) = (one.requests().len(), two.requests().len());
            let mut c = Client::connect(("127.0.0.1", p));
            let body: &[u8] = if *method == "POST" { b"x" } else { b"" };
            let r = c.request(method, path, &[("Host", "localhost")], body);
            let seen = |b: &Backend, from: usize, name: &str| {
                b.requests()
                    .get(from..)
                    .unwrap_or_default()
                    .iter()
                    .map(|q| format!("{name} {} {}", q.method, q.target))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let page = match r.status {
                200 if r.text().starts_with("page") => r.text(),
                _ => String::new(),
            };
            format!(
                "{} [{}] [{}] {}",
                r.status,
                seen(one, b1, "one"),
                seen(two, b2, "two"),
                page.trim_end()
            )
        })
        .collect()
}

#[test]
fn limit_except_matches_nginx() {
    let (one, two) = (Backend::start(), Backend::start());
    let root = std::env::temp_dir().join(format!("ringfront-lmt-{}", std::process::id()));
    std::fs::create_dir_all(root.join("static")).expect("test folder");
    let (n, r, np, rp) = common::nginx_and_ringfront(|p| config(p, one.port(), two.port(), &root));
    let nginx = answers(np, &one, &two);
    let ours = answers(rp, &one, &two);
    drop((n, r));
    common::assert_same("limit_except", &nginx, &ours);
    let has = |want: &str| nginx.iter().any(|a| a.contains(want));
    for want in [
        "403 [] []",
        "200 [one POST /nested/inner/a] []",
        "[] [two GET /swap/a?k=1]",
        "[one POST /replacement/a?k=1] []",
    ] {
        assert!(has(want), "{want}: {nginx:?}");
    }
    let _ = std::fs::remove_dir_all(&root);
}
