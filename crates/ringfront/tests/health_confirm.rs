//! `passive_health confirm` against nginx's passive accounting, on article 000's complaint: a
//! tenant's slow request times out on a healthy backend with `max_fails=1`. nginx (and
//! ringfront's default `passive_health nginx`, compared request by request with real nginx)
//! takes the backend out for `fail_timeout`; `confirm` probes it, finds it healthy and keeps
//! it in. A backend whose port is really closed is still ejected in `confirm` mode.

mod common;

use common::health::{
    count, hc_config, lines_after, requests_to, tried, wait_state, wait_until, Load,
};
use common::{differential, port, proxy_config, servers, Run};
use ringfront_testkit::{Backend, Canned, Mode, Ringfront};

/// One request longer than `proxy_read_timeout`; `timeout` is not in `proxy_next_upstream`,
/// so it ends with the 504 of its first peer.
const LOC: &str = "proxy_read_timeout 1s; proxy_next_upstream error;";

fn article_000_servers(a: &Backend, b: &Backend) -> Vec<String> {
    servers(&[a, b], &["max_fails=1", "max_fails=1"])
}

#[test]
fn nginx_takes_a_healthy_peer_out_after_a_slow_request_and_ringfront_agrees() {
    let (a, b) = (Backend::start(), Backend::start());
    let srv = article_000_servers(&a, &b);
    let nginx = differential(
        "article 000: max_fails=1 and one slow request",
        &[&a, &b],
        1.0,
        |p| proxy_config(p, &srv, "", LOC),
        |run: &mut Run| {
            run.get("/slow?sleep=2");
            for _ in 0..6 {
                run.get("/");
            }
            run.counts("after");
        },
    );
    // What nginx did (and ringfront with it): the healthy b0 is out, b1 serves everything.
    assert_eq!(nginx[0], "GET /slow?sleep=2 -> 504 - ~1s");
    assert!(
        nginx[1..7].iter().all(|l| l == "GET / -> 200 b1 ~0s"),
        "{nginx:?}"
    );
    assert_eq!(nginx[7], "counts after: b0=1 b1=6");
}

fn slow_request_then_spread(
    mode: &str,
    checks: &str,
) -> (Ringfront, Backend, Backend, Load, Vec<u16>) {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &article_000_servers(&a, &b),
        &format!("passive_health {mode};"),
        &format!("{LOC} {checks}"),
        "",
    ));
    let mut load = Load::new(p);
    assert_eq!(load.get("/slow?sleep=2"), (504, 0));
    assert_eq!(requests_to(&a, "/slow"), 1);
    // Wait for the checker's verdict on a before the normal requests.
    let verdict = if mode == "confirm" {
        "kept up"
    } else {
        "marked down"
    };
    wait_state(&rf, &a, verdict);
    let served = load.spread(8);
    (rf, a, b, load, served)
}

#[test]
fn nginx_mode_keeps_the_peer_out_although_its_probes_pass() {
    let (rf, a, b, mut load, served) =
        slow_request_then_spread("nginx", "health_check interval=200ms uri=/health;");
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains("marked down: 1 passive failures (timeout) reached max_fails=1, out for fail_timeout=10s"),
        "{down}"
    );
    assert_eq!(count(&served, &b), 8, "{served:?}");
    // The active checks pass meanwhile; nginx's accounting does not care.
    let probes = requests_to(&a, "/health");
    wait_until("two more passing probes of a", || {
        requests_to(&a, "/health") >= probes + 2
    });
    let served = load.spread(8);
    assert_eq!(count(&served, &b), 8, "{served:?}");
}

#[test]
fn confirm_mode_keeps_a_healthy_peer_in() {
    let (rf, a, b, _, served) =
        slow_request_then_spread("confirm", "health_check interval=5s uri=/health;");
    let kept = wait_state(&rf, &a, "kept up");
    assert!(
        kept.contains(
            "kept up: 1 passive failures (timeout) not confirmed: probe passed (HTTP 200), \
             failures blamed on the requests"
        ),
        "{kept}"
    );
    assert!(
        (3..=5).contains(&count(&served, &a)) && count(&served, &b) >= 3,
        "a and b still alternate: {served:?}"
    );
    assert!(!common::health::has_state(&rf, &a, "marked down"));
}

#[test]
fn confirm_mode_without_active_checks_probes_with_a_connect() {
    let (rf, a, _, _, served) = slow_request_then_spread("confirm", "");
    let kept = wait_state(&rf, &a, "kept up");
    assert!(
        kept.contains("not confirmed: probe passed (connected)"),
        "{kept}"
    );
    assert!((3..=5).contains(&count(&served, &a)), "{served:?}");
}

#[test]
fn confirm_mode_ejects_a_refusing_peer_until_it_listens_again() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Refuse);
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &servers(&[&a, &b], &["max_fails=1 fail_timeout=1s", "max_fails=1"]),
        "passive_health confirm;",
        "",
        "",
    ));
    let mut load = Load::new(p);
    // The first request tries a (refused), then b.
    assert_eq!(load.get("/"), (200, b.port()));
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains(
            "marked down: 1 passive failures (refused) confirmed by failed probe (connect refused)"
        ),
        "{down}"
    );
    // ringfront said ready only once the checker held the peers' states, so the first
    // request's failure was not undone by the checker's first configuration.
    assert!(
        !common::health::has_state(&rf, &a, "marked up: configuration loaded"),
        "{:?}",
        rf.stderr_lines()
    );
    let served = load.spread(10);
    assert_eq!(count(&served, &b), 10, "{served:?}");
    let late = tried(&lines_after(&rf, &down), &a);
    assert!(late.is_empty(), "a was tried while down: {late:?}");

    // Re-probed (a connect every fail_timeout) until it listens again.
    a.set_mode(Mode::Ok);
    let up = wait_state(&rf, &a, "marked up");
    assert!(up.contains("marked up: probe passed (connected)"), "{up}");
    let served = load.spread(10);
    assert!(count(&served, &a) >= 4, "{served:?}");
}

/// The other half of article 000: a tenant's request that the backend answers with 504
/// (`proxy_next_upstream ... http_504`, so it counts as a failure of the peer and is retried
/// on the next one). nginx mode takes the healthy peer out; confirm mode keeps it in.
#[test]
fn a_tenants_504_takes_the_peer_out_only_in_nginx_mode() {
    for mode in ["nginx", "confirm"] {
        let (a, b) = (Backend::start(), Backend::start());
        let p = port();
        let rf = Ringfront::start(&hc_config(
            p,
            &article_000_servers(&a, &b),
            &format!("passive_health {mode};"),
            "proxy_next_upstream error timeout http_504; health_check interval=5s uri=/health;",
            "",
        ));
        // Only a's tenant endpoint answers 504; b answers it normally.
        a.set_route("/tenant", Canned::status(504, "tenant timed out"));
        let mut load = Load::new(p);
        // Round robin: the first or the second request meets a, fails there (504) and is
        // retried on b, so the client sees b's 200 either way.
        for _ in 0..2 {
            assert_eq!(load.get("/tenant").0, 200, "{mode}");
        }
        assert_eq!(requests_to(&a, "/tenant"), 1, "{mode}");
        let verdict = if mode == "confirm" {
            "kept up"
        } else {
            "marked down"
        };
        let line = wait_state(&rf, &a, verdict);
        assert!(
            line.contains("passive failures (http_5xx)"),
            "{mode}: {line}"
        );
        let served = load.spread(8);
        if mode == "confirm" {
            assert!((3..=5).contains(&count(&served, &a)), "{mode}: {served:?}");
        } else {
            // a is out for fail_timeout; b (never failed) serves everything.
            assert_eq!(count(&served, &b), 8, "{mode}: {served:?}");
        }
    }
}
