//! Differential tests: the same configuration and request sequence through real nginx
//! (Debian's package, the oracle) and through ringfront, against the same backends. Compared:
//! status, which backend answered, and how many requests each backend received.

mod common;

use common::{addr, port, proxy_config, served_by};
use ringfront_testkit::{http, Backend, Mode, Nginx, Ringfront};

/// (status, serving backend port) per request, and hits per backend.
type Trace = (Vec<(u16, u16)>, Vec<usize>);

fn replay(port: u16, backends: &[&Backend], paths: &[&str]) -> Trace {
    let seq = paths
        .iter()
        .map(|path| {
            let r = http::get(("127.0.0.1", port), path);
            (r.status, served_by(&r))
        })
        .collect();
    (seq, backends.iter().map(|b| b.hits()).collect())
}

/// Runs `paths` through nginx, then through ringfront, on `config(port)`.
fn both(backends: &[&Backend], config: impl Fn(u16) -> String, paths: &[&str]) -> (Trace, Trace) {
    let np = port();
    let nginx_trace = {
        let _n = Nginx::start(&config(np), np);
        backends.iter().for_each(|b| b.reset_hits());
        replay(np, backends, paths)
    };
    let rp = port();
    let rf_trace = {
        let _r = Ringfront::start(&config(rp));
        backends.iter().for_each(|b| b.reset_hits());
        replay(rp, backends, paths)
    };
    (nginx_trace, rf_trace)
}

#[test]
fn weighted_round_robin_matches_nginx() {
    let (a, b, c) = (Backend::start(), Backend::start(), Backend::start());
    let servers = vec![
        format!("{} weight=3", addr(&a)),
        format!("{} weight=2", addr(&b)),
        format!("{} weight=1", addr(&c)),
    ];
    let paths = ["/"; 18];
    let (n, r) = both(&[&a, &b, &c], |p| proxy_config(p, &servers, "", ""), &paths);
    assert_eq!(n, r);
    assert_eq!(n.1, [9, 6, 3]);
}

#[test]
fn article_000_two_alive_two_refusing_matches_nginx() {
    let bs: Vec<Backend> = (0..4).map(|_| Backend::start()).collect();
    bs[1].set_mode(Mode::Refuse);
    bs[3].set_mode(Mode::Refuse);
    let servers: Vec<String> = bs
        .iter()
        .map(|b| format!("{} max_fails=0", addr(b)))
        .collect();
    let refs: Vec<&Backend> = bs.iter().collect();
    let paths = ["/"; 8];
    for next in ["error timeout", "error", "off"] {
        let loc = format!("proxy_next_upstream {next}; proxy_read_timeout 2;");
        let (n, r) = both(&refs, |p| proxy_config(p, &servers, "", &loc), &paths);
        assert_eq!(n, r, "proxy_next_upstream {next}");
    }
}

#[test]
fn max_fails_with_a_refusing_server_matches_nginx() {
    let bs: Vec<Backend> = (0..3).map(|_| Backend::start()).collect();
    bs[0].set_mode(Mode::Refuse);
    let servers: Vec<String> = bs
        .iter()
        .map(|b| format!("{} max_fails=1 fail_timeout=30s", addr(b)))
        .collect();
    let refs: Vec<&Backend> = bs.iter().collect();
    let paths = ["/"; 10];
    let (n, r) = both(&refs, |p| proxy_config(p, &servers, "", ""), &paths);
    assert_eq!(n, r);
    assert!(n.0.iter().all(|(s, _)| *s == 200));
}

#[test]
fn http_504_next_upstream_matches_nginx() {
    // Article 000's `error http_504` run: a backend 504 is passed on to the next peer; the
    // last try's 504 goes to the client.
    let bs: Vec<Backend> = (0..3).map(|_| Backend::start()).collect();
    let servers: Vec<String> = bs
        .iter()
        .map(|b| format!("{} max_fails=0", addr(b)))
        .collect();
    let refs: Vec<&Backend> = bs.iter().collect();
    let paths = ["/?code=504", "/", "/?code=504", "/?code=500"];
    let loc = "proxy_next_upstream error http_504;";
    let (n, r) = both(&refs, |p| proxy_config(p, &servers, "", loc), &paths);
    assert_eq!(n, r);
    assert_eq!(n.0[0].0, 504);
}
