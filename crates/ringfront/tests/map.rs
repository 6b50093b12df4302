//! `map` against real nginx on the same configuration: the WebSocket snippet
//! (`$http_upgrade` -> `$connection_upgrade`), `hostnames` masks and their priority, regexes,
//! values with variables, a map used before it is defined, a map of a map, a `\default` key.

mod common;

use common::fill;
use ringfront_testkit::Client;

fn config(p: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    map $http_upgrade $connection_upgrade {
        default upgrade;
        ''      close;
    }
    map $http_host $pool {
        hostnames;
        default           d;
        exact.example.com exact;
        .example.com      dot;
        *.a.example.com   star;
        www.example.*     pre;
        ~^API             api-cs;
        ~*^mixed          mixed-ci;
        \\default         escaped;
    }
    map $arg_x $withvar {
        default \"x=$arg_x\";
        1       one;
        ONE     upper;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / {
            return 200 \"$connection_upgrade|$pool|$withvar|$later|$chained\\n\";
        }
    }
    map $uri $later {
        /a      A;
        default B;
    }
    map $later $chained {
        A       from-a;
        default \"other-$later\";
    }
}
",
        &[("PORT", p.to_string())],
    )
}

const REQUESTS: &[(&str, &[(&str, &str)])] = &[
    ("/", &[("Host", "exact.example.com")]),
    (
        "/a",
        &[("Host", "EXACT.Example.com."), ("Upgrade", "websocket")],
    ),
    ("/?x=1", &[("Host", "example.com")]),
    ("/?x=one", &[("Host", "q.a.example.com")]),
    ("/?x=zz", &[("Host", "a.example.com")]),
    ("/b", &[("Host", "www.example.org")]),
    ("/", &[("Host", "API.net")]),
    ("/", &[("Host", "api.net")]),
    ("/", &[("Host", "MIXED.net")]),
    ("/", &[("Host", "default")]),
    ("/", &[("Host", "nothing.net"), ("Upgrade", "")]),
];

fn bodies(p: u16) -> Vec<String> {
    let mut c = Client::connect(("127.0.0.1", p));
    REQUESTS
        .iter()
        .map(|(path, headers)| {
            let r = c.request("GET", path, headers, b"");
            format!("{} {}", r.status, r.text())
        })
        .collect()
}

#[test]
fn map_matches_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = bodies(np);
    let r = bodies(rp);
    for (i, (a, b)) in n.iter().zip(&r).enumerate() {
        println!("{:?}\n  nginx: {a:?}\n     rf: {b:?}", REQUESTS[i]);
    }
    assert_eq!(r, n);
    // The oracle really exercised the cases (not all defaults).
    assert!(n[0].contains("|exact|"), "{n:?}");
    assert!(n[3].contains("|star|"), "{n:?}");
}
