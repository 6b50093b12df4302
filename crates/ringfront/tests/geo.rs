//! `geo` against real nginx: the client address and an address from a variable, the
//! longest prefix, a bare host, `delete`, an address that does not parse, IPv6, and
//! `ranges` mode (pieces inserted inside, before and after others, across /16 blocks,
//! deleted), and `proxy` / `proxy_recursive` with `X-Forwarded-For`.

mod common;

use common::fill;
use ringfront_testkit::Client;

fn config(p: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    geo $client {
        default    other;
        127.0.0.0/8 loopback;
    }
    geo $arg_ip $net {
        default          def;
        10.0.0.0/8       ten;
        10.1.0.0/16      ten-one;
        10.1.2.3         host;
        10.9.0.0/16      gone;
        delete           10.9.0.0/16;
        255.255.255.255  broadcast;
        2001:db8::/32    doc6;
    }
    geo $arg_ip $range {
        ranges;
        default              none;
        192.0.2.0-192.0.2.99 low;
        192.0.2.100-192.0.2.255 high;
    }
    geo $arg_ip $ins {
        ranges;
        default                 none;
        192.0.2.0-192.0.2.255   wide;
        192.0.2.10-192.0.2.20   mid;
        192.0.2.15-192.0.2.15   one;
        192.0.2.0-192.0.2.4     front;
        192.0.2.250-192.0.2.255 back;
        10.10.3.0-10.11.2.255   two16;
        10.12.3.0-10.13.2.255   other16;
        delete                  10.12.3.0-10.13.2.255;
    }
    geo $xff {
        default       def;
        proxy         127.0.0.1;
        127.0.0.0/8   lo;
        192.0.2.0/24  test;
    }
    geo $xffr {
        proxy_recursive;
        default       def;
        proxy         127.0.0.1;
        127.0.0.0/8   lo;
        192.0.2.0/24  test;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"$client|$net|$range|$ins|$xff|$xffr\\n\"; }
    }
}
",
        &[("PORT", p.to_string())],
    )
}

const IPS: &[&str] = &[
    "10.1.2.3",
    "10.1.9.9",
    "10.7.0.1",
    "10.9.1.1",
    "8.8.8.8",
    "junk",
    "",
    "2001:db8::1",
    "192.0.2.5",
    "192.0.2.150",
    "198.51.100.1",
    "192.0.2.3",
    "192.0.2.12",
    "192.0.2.15",
    "192.0.2.21",
    "192.0.2.252",
    "10.11.2.1",
    "10.10.2.255",
    "10.13.2.1",
];

/// `X-Forwarded-For` fields (each request may carry several).
const XFF: &[&[&str]] = &[
    &["192.0.2.1"],
    &["10.0.0.1"],
    &["10.0.0.1, 192.0.2.1"],
    &["192.0.2.1, 127.0.0.1"],
    &["192.0.2.1", "127.0.0.1"],
    &["junk"],
    &["192.0.2.1:8080"],
];

fn answers(p: u16) -> Vec<String> {
    let mut c = Client::connect(("127.0.0.1", p));
    let mut out: Vec<String> = IPS
        .iter()
        .map(|ip| {
            c.request("GET", &format!("/?ip={ip}"), &[("Host", "a")], b"")
                .text()
        })
        .collect();
    for fields in XFF {
        let mut h = vec![("Host", "a")];
        h.extend(fields.iter().map(|f| ("X-Forwarded-For", *f)));
        out.push(c.request("GET", "/", &h, b"").text());
    }
    out
}

#[test]
fn geo_matches_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = answers(np);
    let r = answers(rp);
    for (i, (a, b)) in n.iter().zip(&r).enumerate() {
        println!("{i:>3}: nginx {a:?} rf {b:?}");
    }
    assert_eq!(r, n);
    assert!(n[0].contains("|host|") && n[3].contains("|ten|"), "{n:?}");
    assert!(
        n[13].contains("|one|") && n[IPS.len()].ends_with("|test|test\n"),
        "{n:?}"
    );
}
