//! Reload (SIGHUP) with health checks: a surviving peer keeps its health state and its
//! consecutive pass/fail counts; a peer new in the reloaded config starts UP, or held out
//! when a mandatory check covers it.

mod common;

use common::health::{
    count, has_state, hc_config, requests_to, state_lines, user_requests, wait_state, wait_until,
    Load, WAIT,
};
use common::{addr, port};
use ringfront_testkit::{Backend, Canned, Ringfront, SIGHUP};

fn reload(rf: &Ringfront, generation: u32) {
    rf.signal(SIGHUP);
    assert!(rf.wait_for_stderr(&format!("reconfigured (generation {generation})"), WAIT));
}

#[test]
fn down_peer_stays_down_across_reload_until_its_passes() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_route("/health", Canned::status(500, "sick"));
    let p = port();
    let conf = hc_config(
        p,
        &[addr(&a), addr(&b)],
        "",
        "health_check interval=400ms passes=3 uri=/health;",
        "",
    );
    let rf = Ringfront::start(&conf);
    wait_state(&rf, &a, "marked down");
    // Fixed, and at once reloaded with the same config: a needs 3 passes (>= 0.8 s), so
    // right after the reload it must still be out.
    a.clear_route("/health");
    reload(&rf, 2);
    let users = user_requests(&a, "/health");
    let burst = Load::new(p).spread(20);
    assert!(
        !has_state(&rf, &a, "marked up"),
        "inconclusive: a came back before the burst ended"
    );
    assert_eq!(count(&burst, &b), 20, "{burst:?}");
    assert_eq!(user_requests(&a, "/health"), users);
    let up = wait_state(&rf, &a, "marked up");
    assert!(
        up.contains("marked up: 3 passed active checks (HTTP 200; "),
        "{up}"
    );
    let served = Load::new(p).spread(10);
    assert!(count(&served, &a) >= 4, "{served:?}");
}

#[test]
fn consecutive_failures_survive_a_reload() {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        "",
        "health_check interval=1s fails=3 uri=/health;",
        "",
    ));
    // One passing probe, then two failing ones before the reload...
    wait_until("a first probe of a", || requests_to(&a, "/health") >= 1);
    a.set_route("/health", Canned::status(503, "sick"));
    let at_switch = requests_to(&a, "/health");
    wait_until("two failing probes of a", || {
        requests_to(&a, "/health") >= at_switch + 2
    });
    reload(&rf, 2);
    assert!(
        !has_state(&rf, &a, "marked down"),
        "inconclusive: the third failing probe came before the reload"
    );
    // ... and the first probe after it is the third failure in a row.
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains("marked down: 3 failed active checks (HTTP 503"),
        "{down}"
    );
    assert_eq!(
        requests_to(&a, "/health") - at_switch,
        3,
        "a was taken out by its third failing probe"
    );
    let served = Load::new(p).spread(6);
    assert_eq!(count(&served, &b), 6, "{served:?}");
}

#[test]
fn new_peer_starts_up_without_mandatory() {
    let (a, b, c) = (Backend::start(), Backend::start(), Backend::start());
    let p = port();
    let check = "health_check interval=200ms uri=/health;";
    let rf = Ringfront::start(&hc_config(p, &[addr(&a), addr(&b)], "", check, ""));
    rf.write_config(&hc_config(
        p,
        &[addr(&a), addr(&b), addr(&c)],
        "",
        check,
        "",
    ));
    reload(&rf, 2);
    let served = Load::new(p).spread(9);
    assert_eq!(count(&served, &c), 3, "{served:?}");
    assert!(
        state_lines(&rf, &c).is_empty(),
        "{:?}",
        state_lines(&rf, &c)
    );
}

#[test]
fn new_peer_is_held_out_with_mandatory_while_survivors_persist() {
    let (a, c) = (Backend::start(), Backend::start());
    c.set_route("/health", Canned::status(500, "not yet"));
    let p = port();
    let check = "health_check interval=200ms uri=/health mandatory persistent;";
    let rf = Ringfront::start(&hc_config(p, &[addr(&a)], "", check, ""));
    wait_state(&rf, &a, "marked up: first active check passed");
    rf.write_config(&hc_config(p, &[addr(&a), addr(&c)], "", check, ""));
    reload(&rf, 2);
    // Right after the reload: a (up, persistent) serves everything, c is held out from
    // the start, then its first probe fails and keeps it out.
    let mut load = Load::new(p);
    let burst = load.spread(10);
    assert_eq!(count(&burst, &a), 10, "{burst:?}");
    let down = wait_state(&rf, &c, "marked down");
    assert!(
        down.contains("first active check failed (HTTP 500: not 2xx or 3xx; "),
        "{down}"
    );
    let served = load.spread(10);
    assert_eq!(count(&served, &a), 10, "{served:?}");
    assert_eq!(user_requests(&c, "/health"), 0);
    // c fixed: its first pass brings it in.
    c.clear_route("/health");
    wait_state(&rf, &c, "marked up");
    let served = load.spread(10);
    assert_eq!(count(&served, &c), 5, "{served:?}");
}
