//! `geo` against real nginx: the client address and an address from a variable, the
//! longest prefix, a bare host, `delete`, an address that does not parse, IPv6, and
//! `ranges` mode.

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
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"$client|$net|$range\\n\"; }
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
];

fn answers(p: u16) -> Vec<String> {
    let mut c = Client::connect(("127.0.0.1", p));
    IPS.iter()
        .map(|ip| {
            c.request("GET", &format!("/?ip={ip}"), &[("Host", "a")], b"")
                .text()
        })
        .collect()
}

#[test]
fn geo_matches_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = answers(np);
    let r = answers(rp);
    for (ip, (a, b)) in IPS.iter().zip(n.iter().zip(&r)) {
        println!("{ip:>14}: nginx {a:?} rf {b:?}");
    }
    assert_eq!(r, n);
    assert!(n[0].contains("|host|") && n[3].contains("|ten|"), "{n:?}");
}
