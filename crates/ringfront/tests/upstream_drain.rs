//! `server ... drain` (nginx 1.29.6; nginx 1.22 has no such parameter, so no differential
//! run): put in by a reload, a draining server takes no new request from the balancer, a
//! `sticky` session bound to it still goes there, and a request in flight on it when the
//! reload came finishes there. The API shows the peer `draining`. nginx's own
//! `upstream_sticky_drain.t` runs the same steps against the binary.

mod common;

use std::time::Duration;

use common::{addr, fill, port, served_by};
use ringfront_testkit::{http, Backend, Mode, Ringfront, SIGHUP};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(15);

// One worker: round robin counts are exact (each worker balances on its own).
const CONFIG: &str = "worker_processes 1;
error_log stderr info;
events { worker_connections 256; }
http {
    access_log off;
    upstream u {
        server {B1} route=1{DRAIN};
        server {B2} route=2;
        server {B3} route=3;
        sticky route $arg_s;
    }
    server {
        listen 127.0.0.1:{PORT};
        location / { proxy_pass http://u; }
        location /api/ { api; }
    }
}
";

fn config(p: u16, bs: &[Backend; 3], drain: bool) -> String {
    let drain = if drain { " drain" } else { "" };
    fill(
        CONFIG,
        &[
            ("PORT", p.to_string()),
            ("B1", addr(&bs[0])),
            ("B2", addr(&bs[1])),
            ("B3", addr(&bs[2])),
            ("DRAIN", drain.to_string()),
        ],
    )
}

/// The backends of `n` requests to `path`, each on its own connection.
fn served(p: u16, path: &str, n: usize) -> Vec<u16> {
    (0..n)
        .map(|_| {
            let r = http::get(("127.0.0.1", p), path);
            assert_eq!(r.status, 200, "{path}");
            served_by(&r)
        })
        .collect()
}

/// The API's `state` of the peer at `server`.
fn peer_state(p: u16, server: &str) -> String {
    let r = http::get(("127.0.0.1", p), "/api/9/http/upstreams/u");
    let v: Value = serde_json::from_slice(&r.body).expect("API JSON");
    let peers = v["peers"].as_array().expect("peers");
    let peer = peers.iter().find(|q| q["server"] == server).expect("peer");
    peer["state"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_reload_drains_a_server_but_keeps_its_sticky_sessions() {
    let bs = [Backend::start(), Backend::start(), Backend::start()];
    let p = port();
    let rf = Ringfront::start(&config(p, &bs, false));
    let all: Vec<u16> = bs.iter().map(Backend::port).collect();
    assert_eq!(served(p, "/", 3).len(), 3);
    assert_eq!(peer_state(p, &addr(&bs[0])), "up");

    // A session request to b1 is held there while the reload drains b1.
    bs[0].set_mode(Mode::Hold);
    let before = bs[0].hits();
    let in_flight = std::thread::spawn(move || http::get(("127.0.0.1", p), "/?s=1"));
    assert!(
        bs[0].wait_hits(before + 1, WAIT),
        "the session request reached b1"
    );
    rf.write_config(&config(p, &bs, true));
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured (generation 2)", WAIT));
    assert_eq!(peer_state(p, &addr(&bs[0])), "draining");
    bs[0].set_mode(Mode::Ok);
    let r = in_flight.join().expect("in-flight client");
    assert_eq!(
        (r.status, served_by(&r)),
        (200, all[0]),
        "in flight finished"
    );

    // New requests: round robin over b2 and b3 only, b1's own counter does not move.
    let hits = bs[0].hits();
    let rr = served(p, "/", 12);
    assert_eq!(rr.iter().filter(|&&b| b == all[1]).count(), 6, "{rr:?}");
    assert_eq!(rr.iter().filter(|&&b| b == all[2]).count(), 6, "{rr:?}");
    assert_eq!(bs[0].hits(), hits);
    // A session bound to b1 still goes there; one bound to b2 to b2.
    assert_eq!(served(p, "/?s=1", 4), vec![all[0]; 4]);
    assert_eq!(bs[0].hits(), hits + 4);
    assert_eq!(served(p, "/?s=2", 2), vec![all[1]; 2]);

    // A reload without `drain` puts b1 back in rotation.
    rf.write_config(&config(p, &bs, false));
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured (generation 3)", WAIT));
    assert_eq!(peer_state(p, &addr(&bs[0])), "up");
    let rr = served(p, "/", 12);
    assert_eq!(rr.iter().filter(|&&b| b == all[0]).count(), 4, "{rr:?}");
}
