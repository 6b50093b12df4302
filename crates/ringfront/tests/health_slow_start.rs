//! `slow_start=`: a peer coming back from DOWN ramps its weight from ~0 to full over the
//! slow-start time. Measured as the peer's share of sequential requests in successive time
//! windows after its `marked up` line, with slack for a noisy machine. Also article 001
//! (a backend warming up: port open, nothing answered): a mandatory check keeps it out
//! until it answers, then it ramps up.

mod common;

use std::time::{Duration, Instant};

use common::health::{count, has_state, hc_config, requests_to, user_requests, wait_state, Load};
use common::{addr, port};
use ringfront_testkit::{Backend, Canned, Mode, Ringfront};

/// Sends requests back to back for `n` windows of `width` from now; per window, the share
/// of them `b` served (panics on a window with too few requests to tell).
fn shares(load: &mut Load, b: &Backend, n: usize, width: Duration) -> Vec<f64> {
    let t0 = Instant::now();
    let mut hits = vec![(0usize, 0usize); n];
    loop {
        let w = (t0.elapsed().as_secs_f64() / width.as_secs_f64()) as usize;
        if w >= n {
            break;
        }
        let (status, by) = load.get("/");
        assert_eq!(status, 200);
        hits[w].1 += 1;
        if by == b.port() {
            hits[w].0 += 1;
        }
    }
    assert!(
        hits.iter().all(|&(_, total)| total >= 20),
        "too few requests per window to measure: {hits:?}"
    );
    hits.iter()
        .map(|&(mine, total)| mine as f64 / total as f64)
        .collect()
}

/// Small at first, growing (each window at most 0.1 below the one before), about half at
/// the end.
fn assert_ramp(s: &[f64]) {
    let last = s[s.len() - 1];
    assert!(s[0] < 0.25, "first window too large: {s:?}");
    assert!(
        (0.38..=0.62).contains(&last),
        "not about half at the end: {s:?}"
    );
    assert!(last > s[0] + 0.2, "no growth: {s:?}");
    for w in s.windows(2) {
        assert!(w[1] >= w[0] - 0.1, "share fell: {s:?}");
    }
}

#[test]
fn slow_start_ramps_a_recovered_peer() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_route("/health", Canned::status(500, "sick"));
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[
            format!("{} slow_start=3s", addr(&a)),
            format!("{} slow_start=3s", addr(&b)),
        ],
        "",
        "health_check interval=200ms fails=3 uri=/health;",
        "",
    ));
    wait_state(&rf, &a, "marked down");
    a.clear_route("/health");
    let up = wait_state(&rf, &a, "marked up");
    assert!(
        up.contains("1 passed active checks (HTTP 200; http GET /health every 200ms fails=3 passes=1), slow start over 3000ms"),
        "{up}"
    );
    // Windows of 0.75 s: four over the ramp, one after it.
    let s = shares(&mut Load::new(p), &a, 5, Duration::from_millis(750));
    println!("shares of the recovering peer: {s:?}");
    assert_ramp(&s);
}

#[test]
fn article_001_warming_backend_held_out_then_ramped() {
    // w accepts connections but answers nothing while it "warms its cache".
    let (w, b) = (Backend::start(), Backend::start());
    w.set_mode(Mode::Hang);
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[
            format!("{} slow_start=3s", addr(&w)),
            format!("{} slow_start=3s", addr(&b)),
        ],
        "",
        // fails=3 and a 1 s read timeout: b is not taken out by a slow probe on a loaded
        // machine (w's first failure counts at once: the check is mandatory).
        "health_check interval=200ms fails=3 uri=/health mandatory; proxy_read_timeout 1s;",
        "",
    ));
    let mut load = Load::new(p);
    // Until two of w's probes went unanswered, every request is b's (or, before b's first
    // probe passed, nobody's: 502).
    let mut served = Vec::new();
    while requests_to(&w, "/health") < 2 || !has_state(&rf, &b, "marked up") {
        served.extend(load.spread(2));
        assert!(served.len() < 50_000, "no probes of w");
    }
    let down = wait_state(&rf, &w, "marked down");
    assert!(
        down.contains("first active check failed (timed out; "),
        "{down}"
    );
    assert_eq!(count(&served, &w), 0, "{served:?}");
    assert_eq!(user_requests(&w, "/health"), 0);

    // Warmed up: the next probe passes, and w ramps in from a small share.
    w.set_mode(Mode::Ok);
    let up = wait_state(&rf, &w, "marked up");
    assert!(
        up.contains("1 passed active checks (HTTP 200; ") && up.contains("slow start over 3000ms"),
        "{up}"
    );
    let s = shares(&mut load, &w, 5, Duration::from_millis(750));
    println!("shares of the warmed-up peer: {s:?}");
    assert_ramp(&s);
}

/// The passive path: in nginx mode a peer failed out by `max_fails` returns when a request
/// succeeds after its `fail_timeout`; that return starts the slow-start ramp too.
#[test]
fn slow_start_ramps_a_peer_back_after_its_fail_timeout() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Close);
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[
            format!("{} max_fails=1 fail_timeout=1s slow_start=3s", addr(&a)),
            format!("{} slow_start=3s", addr(&b)),
        ],
        "",
        "",
        "",
    ));
    let mut load = Load::new(p);
    // Round robin meets a within two requests; its failure is retried on b.
    for _ in 0..2 {
        assert_eq!(load.get("/"), (200, b.port()));
    }
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains("reached max_fails=1, out for fail_timeout=1s"),
        "{down}"
    );
    a.set_mode(Mode::Ok);
    // After fail_timeout one request probes a, succeeds, and the ramp begins.
    let mut sent = 0;
    while !has_state(&rf, &a, "marked up") {
        assert_eq!(load.get("/").0, 200);
        sent += 1;
        assert!(sent < 100_000, "a never came back");
    }
    let up = wait_state(&rf, &a, "marked up");
    assert!(
        up.contains("answered a request after its failed-out period, slow start over 3000ms"),
        "{up}"
    );
    let s = shares(&mut load, &a, 5, Duration::from_millis(750));
    println!("shares of the returning peer: {s:?}");
    assert_ramp(&s);
}
