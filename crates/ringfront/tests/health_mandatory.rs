//! `health_check ... mandatory [persistent]`: a mandatory check holds a peer out until its
//! first probe passes; after a reload, `persistent` keeps an up peer serving, while a plain
//! `mandatory` check re-checks it (and a failing probe keeps it out).

mod common;

use common::health::{
    count, has_state, hc_config, requests_to, user_requests, wait_state, wait_state_nth,
    wait_until, Load, WAIT,
};
use common::{addr, port};
use ringfront_testkit::{Backend, Canned, Mode, Ringfront, SIGHUP};

fn hanging_peer(mandatory: &str) -> (Ringfront, Backend, Backend, u16) {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Hang);
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        "",
        // fails=2 and a 1 s read timeout: one slow probe of b on a loaded machine does
        // not take b out.
        &format!(
            "health_check interval=200ms fails=2 uri=/health {mandatory}; proxy_read_timeout 1s;"
        ),
        "",
    ));
    (rf, a, b, p)
}

#[test]
fn mandatory_peer_whose_probe_hangs_never_gets_a_request() {
    let (rf, a, b, p) = hanging_peer("mandatory");
    let mut load = Load::new(p);
    // From the first instant (both peers held out: 502) until well after a's first probe
    // timed out and b's passed.
    let mut served = Vec::new();
    while !(has_state(&rf, &a, "marked down") && has_state(&rf, &b, "marked up")) {
        served.extend(load.spread(2));
        assert!(served.len() < 20_000, "no verdicts");
    }
    served.extend(load.spread(10));
    assert_eq!(count(&served, &a), 0, "{served:?}");
    assert_eq!(served[served.len() - 10..], [b.port(); 10]);
    assert_eq!(user_requests(&a, "/health"), 0);
    assert!(requests_to(&a, "/health") >= 1);
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains("first active check failed (timed out; http GET /health every 200ms fails=2 passes=1 mandatory)"),
        "{down}"
    );
    let up = wait_state(&rf, &b, "marked up");
    assert!(up.contains("first active check passed (HTTP 200; "), "{up}");
}

#[test]
fn non_mandatory_peer_gets_requests_before_its_first_probe() {
    let (rf, a, b, p) = hanging_peer("");
    let mut load = Load::new(p);
    let early: Vec<(u16, u16)> = (0..2).map(|_| load.get("/")).collect();
    // The request a got timed out there and went on to b.
    assert_eq!(early, [(200, b.port()), (200, b.port())]);
    assert_eq!(user_requests(&a, "/health"), 1, "a was in rotation at once");
    // The timed-out request counts as a passive failure (max_fails=1) ...
    let passive = wait_state(&rf, &a, "marked down");
    assert!(
        passive.contains("1 passive failures (timeout) reached max_fails=1"),
        "{passive}"
    );
    // ... and the probe, which times out too, takes it out for the active check.
    let down = wait_state(&rf, &a, "marked down: 2 failed active checks (timed out; ");
    assert!(down.contains("every 200ms fails=2 passes=1)"), "{down}");
    let before = user_requests(&a, "/health");
    let served = load.spread(10);
    assert_eq!(count(&served, &b), 10);
    assert_eq!(user_requests(&a, "/health"), before);
}

/// Both peers up by a mandatory check with `fails=50` (so failing probes do not take a peer
/// out by themselves); then a's /health starts failing and the config is reloaded unchanged.
fn reload_with_failing_probe(flags: &str) -> (Ringfront, Backend, Backend, u16) {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        "",
        &format!("health_check interval=200ms fails=50 uri=/health {flags};"),
        "",
    ));
    wait_state(&rf, &a, "marked up: first active check passed");
    wait_state(&rf, &b, "marked up: first active check passed");
    a.set_route("/health", Canned::status(500, "sick"));
    let probes = requests_to(&a, "/health");
    wait_until("a failing probe of a", || {
        requests_to(&a, "/health") > probes
    });
    assert!(!has_state(&rf, &a, "marked down"));
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr("reconfigured", WAIT));
    (rf, a, b, p)
}

#[test]
fn mandatory_persistent_keeps_an_up_peer_serving_across_reload() {
    let (rf, a, b, p) = reload_with_failing_probe("mandatory persistent");
    let mut load = Load::new(p);
    let served = load.spread(10);
    assert_eq!(
        (count(&served, &a), count(&served, &b)),
        (5, 5),
        "{served:?}"
    );
    // Still probed (and still failing) after the reload, still up, never held out.
    let probes = requests_to(&a, "/health");
    wait_until("two more probes of a", || {
        requests_to(&a, "/health") >= probes + 2
    });
    let served = load.spread(10);
    assert_eq!(count(&served, &a), 5, "{served:?}");
    for peer in [&a, &b] {
        assert!(!has_state(&rf, peer, "held out"));
        assert!(!has_state(&rf, peer, "marked down"));
    }
}

#[test]
fn mandatory_without_persistent_rechecks_after_reload() {
    let (rf, a, b, p) = reload_with_failing_probe("mandatory");
    // Held out from the reload on, before any probe: no request reaches a.
    let burst = Load::new(p).spread(5);
    assert_eq!(count(&burst, &a), 0, "{burst:?}");
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains("first active check failed (HTTP 500: not 2xx or 3xx; "),
        "{down}"
    );
    // b is re-checked too; it passes.
    wait_state_nth(&rf, &b, "marked up: first active check passed", 2);
    let users = user_requests(&a, "/health");
    let served = Load::new(p).spread(10);
    assert_eq!(count(&served, &b), 10, "{served:?}");
    assert_eq!(user_requests(&a, "/health"), users);
}
