//! Choosing the virtual server against real nginx: the most specific leading and trailing
//! wildcard wins whatever the order written, a request without `Host` goes to the server
//! named `""`, `$server_name` of `.example.com` is `example.com`, and PCRE's `\Q...\E` in a
//! regex name.

mod common;

use common::fill;
use ringfront_testkit::Client;

fn config(p: u16) -> String {
    fill(
        r#"worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server { listen 127.0.0.1:{PORT}; server_name localhost;
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name *.wc.example.com;
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name *.pref.wc.example.com;
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name wc2.example.*;
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name wc2.example.com.*;
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name .dot.example.com;
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name "";
             location / { return 200 "[$server_name]"; } }
    server { listen 127.0.0.1:{PORT}; server_name ~^(?P<name>[a-z]+)\Q.q.example.com\E$;
             location / { return 200 "[$server_name|$name]"; } }
}
"#,
        &[("PORT", p.to_string())],
    )
}

const HOSTS: &[Option<&str>] = &[
    Some("xxx"),
    None,
    Some("www.wc.example.com"),
    Some("www.pref.wc.example.com"),
    Some("wc2.example.net"),
    Some("wc2.example.com.pref"),
    Some("www.dot.example.com"),
    Some("dot.example.com"),
    Some("abc.q.example.com"),
    Some("abcxqxexample.com"),
];

fn answers(p: u16) -> Vec<String> {
    HOSTS
        .iter()
        .map(|h| {
            let mut c = Client::connect(("127.0.0.1", p));
            let host = h.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
            c.send_raw(format!("GET / HTTP/1.0\r\n{host}\r\n").as_bytes());
            c.read_response().text()
        })
        .collect()
}

#[test]
fn server_choice_matches_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = answers(np);
    let r = answers(rp);
    for (h, (a, b)) in HOSTS.iter().zip(n.iter().zip(&r)) {
        println!("{h:?}: nginx {a:?} rf {b:?}");
    }
    assert_eq!(r, n);
    assert_eq!(n[1], "[]", "no Host: the server named \"\"");
    assert_eq!(n[3], "[*.pref.wc.example.com]");
}
