//! `split_clients` against real nginx: 400 keys of every length 0..40 land in the same
//! bucket (MurmurHash2 and nginx's percent bounds), with fractional percents and `*`.

mod common;

use common::fill;
use ringfront_testkit::Client;

fn config(p: u16) -> String {
    fill(
        "worker_processes 1;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:{PORT};
        location / { return 200 \"$variant|$partial\\n\"; }
    }
    split_clients \"${arg_k}salt\" $variant {
        0.5%  tiny;
        10%   ten;
        33.3% third;
        *     rest;
    }
    split_clients $arg_k $partial {
        50% half;
    }
}
",
        &[("PORT", p.to_string())],
    )
}

fn keys() -> Vec<String> {
    (0..400)
        .map(|i| {
            let len = i % 41;
            (0..len)
                .map(|j| char::from(b'a' + ((i * 7 + j * 13) % 26) as u8))
                .collect()
        })
        .collect()
}

fn answers(p: u16) -> Vec<String> {
    let mut c = Client::connect(("127.0.0.1", p));
    keys()
        .iter()
        .map(|k| {
            c.request("GET", &format!("/?k={k}"), &[("Host", "a")], b"")
                .text()
        })
        .collect()
}

#[test]
fn split_clients_buckets_match_nginx() {
    let (_n, _r, np, rp) = common::nginx_and_ringfront(config);
    let n = answers(np);
    let r = answers(rp);
    let differ: Vec<_> = keys()
        .into_iter()
        .zip(n.iter().zip(&r))
        .filter(|(_, (a, b))| a != b)
        .collect();
    assert!(
        differ.is_empty(),
        "{} keys differ, e.g. {:?}",
        differ.len(),
        &differ[..differ.len().min(5)]
    );
    // Every bucket was reached (so the bounds were really compared).
    for word in ["ten|", "third|", "rest|", "|half", "|\n"] {
        assert!(
            n.iter().any(|a| a.contains(word)),
            "no answer with {word:?}"
        );
    }
}
