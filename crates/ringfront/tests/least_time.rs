//! `least_time` (nginx Plus syntax; nginx 1.22 has no oracle for it) and `fair` (the
//! articles' third-party balancer, mapped to `least_time header`): traffic goes to the peer
//! that answers faster.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{http, Backend, Ringfront};

/// A backend that takes 80 ms to answer every request.
fn slow_backend() -> u16 {
    let lst = ringfront_testkit::fresh_listener();
    let port = lst.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in lst.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while s.read(&mut buf).unwrap_or(0) > 0 {
                    std::thread::sleep(Duration::from_millis(80)); // the behaviour under test
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nX-Backend: {port}\r\nContent-Length: 0\r\n\r\n"
                    );
                    if s.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn share_of_fast(balancer: &str) -> usize {
    let fast = Backend::start();
    let slow = slow_backend();
    let p = port();
    let _rf = Ringfront::start(&proxy_config(
        p,
        &[format!("127.0.0.1:{slow}"), addr(&fast)],
        balancer,
        "",
    ));
    (0..20)
        .filter(|_| served_by(&http::get(("127.0.0.1", p), "/")) == fast.port())
        .count()
}

#[test]
fn least_time_header_prefers_the_faster_peer() {
    // Both peers start equal (round robin samples each once); then the slow one's
    // moving average keeps it out.
    assert!(share_of_fast("least_time header;") >= 18);
}

#[test]
fn least_time_last_byte_and_fair_prefer_the_faster_peer() {
    assert!(share_of_fast("least_time last_byte inflight;") >= 18);
    assert!(share_of_fast("fair;") >= 18);
}
