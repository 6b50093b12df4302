//! `try_files` against real nginx on the same configuration and files: the single-page-app
//! fallback (`$uri $uri/ /index.html`), `=404`, a maintenance file first, arguments kept
//! or dropped by the fallback URI, a fallback into a proxied location (the URI sent
//! upstream), a fallback cycle (500), named locations (`@name`, proxied or answering), and
//! `try_files` at server level.

mod common;
mod static_common;

use common::fill;
use ringfront_testkit::Backend;
use static_common::{answers, files};

fn config(p: u16, backend: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server_tokens off;
    include /etc/nginx/mime.types;
    server {
        listen 127.0.0.1:{PORT};
        server_name localhost;
        root {DIR}/www;
        location /app/ {
            try_files $uri $uri/ /index.html;
        }
        location /strict/ {
            try_files $uri =404;
        }
        location /maint/ {
            try_files /maintenance.html $uri /a.txt;
        }
        location /down/ {
            try_files /maintenance.html =503;
        }
        location /fb/ {
            try_files $uri /landing?from=fb;
        }
        location /keep/ {
            try_files $uri /landing?$args;
        }
        location /drop/ {
            try_files $uri /landing;
        }
        location = /landing {
            return 200 "landing uri=$uri args=$args request=$request_uri\n";
        }
        location /api/ {
            try_files /none /backend$uri;
        }
        location /backend/ {
            internal;
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /cycle/ {
            try_files /none /cycle/x;
        }
        location /dirs/ {
            try_files $uri/ =404;
        }
        location ~ /re-alias\.txt$ {
            alias {DIR}/www/sub;
            try_files $uri =404;
        }
        location /named/ {
            try_files $uri @back;
        }
        location @back {
            proxy_pass http://127.0.0.1:{BACKEND};
        }
        location /named2/ {
            try_files /none @answer;
        }
        location @answer {
            return 200 "named uri=$uri args=$args\n";
        }
        location /nonamed/ {
            try_files /none @missing;
        }
        location /nest/ {
            alias {DIR}/www/;
            location ~ \.css$ {
                try_files $uri =404;
            }
        }
    }
    server {
        listen 127.0.0.1:{PORT};
        server_name srv;
        root {DIR}/www;
        try_files $uri /a.txt;
    }
}
"#,
        &[
            ("PORT", p.to_string()),
            ("BACKEND", backend.to_string()),
            ("DIR", files().display().to_string()),
        ],
    )
}

const REQUESTS: &[(&str, &[(&str, &str)])] = &[
    ("/app/", &[]),
    ("/app/route/deep?x=1", &[]),
    ("/a.txt", &[]),
    ("/strict/missing", &[]),
    ("/strict/", &[]),
    ("/maint/x", &[]),
    ("/down/x", &[]),
    ("/fb/x?k=1", &[]),
    ("/keep/x?k=1", &[]),
    ("/drop/x?k=1", &[]),
    ("/api/v1/items?id=3", &[]),
    ("/cycle/y", &[]),
    ("/dirs/", &[]),
    ("/dir", &[]),
    ("/app/dir", &[]),
    ("/app/dir/", &[]),
    ("/re-alias.txt", &[]),
    ("/named/x?q=1", &[]),
    ("/named2/y?k=2", &[]),
    ("/nonamed/z", &[]),
    ("/@answer", &[]),
    ("/nest/style.css", &[]),
    ("/nest/none.css", &[]),
    ("/missing", &[("Host", "srv")]),
    ("/style.css", &[("Host", "srv")]),
    ("/dir", &[("Host", "srv")]),
    ("/dir/", &[("Host", "srv")]),
];

#[test]
fn try_files_matches_nginx() {
    let b = Backend::start();
    let bp = b.port();
    let (_n, _r, np, rp) = common::nginx_and_ringfront(|p| config(p, bp));
    let targets = |p: u16| {
        let before = b.requests().len();
        // Relayed heads keep the upstream's field order (a documented deviation).
        let a = answers(p, REQUESTS, p == rp)
            .into_iter()
            .map(|a| match a.contains("body=\"backend ") {
                true => a.split_once(" [").map_or(a.clone(), |(s, r)| {
                    format!("{s}{}", r.split_once(']').map_or("", |x| x.1))
                }),
                false => a,
            })
            .collect::<Vec<_>>();
        let t: Vec<String> = b.requests()[before..]
            .iter()
            .map(|r| r.target.clone())
            .collect();
        (a, t)
    };
    let (n, nt) = targets(np);
    let (r, rt) = targets(rp);
    let mut same = true;
    for (i, (a, x)) in n.iter().zip(&r).enumerate() {
        if a != x {
            same = false;
            println!("! {:?}\n  nginx: {a}\n     rf: {x}", REQUESTS[i]);
        }
    }
    assert!(same, "answers differ (above)");
    if std::env::var_os("SHOW").is_some() {
        println!("{}\n{nt:?}", n.join("\n"));
    }
    assert_eq!(rt, nt, "targets the backend received");
    assert!(!nt.is_empty());
    for want in [
        "landing uri=/landing args=from=fb",
        "500 /cycle/y",
        "503 /down/x",
        "named uri=/named2/y args=k=2",
        "body=\"re alias\\n\"",
        "body=\"body{}\\n\"",
    ] {
        assert!(n.iter().any(|a| a.contains(want)), "{want}: {n:?}");
    }
}
