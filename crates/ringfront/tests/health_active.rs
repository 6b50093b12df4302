//! nginx Plus `health_check` / `match`: a failing probe takes a peer out of every request's
//! way within `fails` probes, `passes` passing probes bring it back; `match` tests on status,
//! headers and body; `port=` probes another port.

mod common;

use common::health::{
    count, has_state, hc_config, requests_to, state_lines, user_requests, wait_state, wait_until,
    Load,
};
use common::{addr, port};
use ringfront_testkit::{Backend, Canned, Ringfront};

#[test]
fn failing_health_uri_takes_peer_out_until_passes() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_route("/health", Canned::status(500, "broken"));
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        "",
        "health_check interval=200ms fails=2 passes=3 uri=/health;",
        "",
    ));
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains(
            "marked down: 2 failed active checks (HTTP 500: not 2xx or 3xx; \
             http GET /health every 200ms fails=2 passes=3)"
        ),
        "{down}"
    );
    // Two probes made the verdict, and every probe is the documented request.
    assert!(requests_to(&a, "/health") >= 2);
    let probe = &a.requests()[0];
    assert_eq!(
        (
            probe.method.as_str(),
            probe.target.as_str(),
            probe.version.as_str()
        ),
        ("GET", "/health", "HTTP/1.1")
    );
    assert_eq!(probe.header("host"), Some("backend"));
    assert_eq!(probe.header("connection"), Some("close"));

    // Out: no user request reaches a.
    let users_before = user_requests(&a, "/health");
    let mut load = Load::new(p);
    let served = load.spread(20);
    assert_eq!(count(&served, &b), 20, "{served:?}");
    assert_eq!(user_requests(&a, "/health"), users_before);

    // Fixed: back after exactly `passes` passing probes (the count is in the line).
    let probes_at_fix = requests_to(&a, "/health");
    a.clear_route("/health");
    let up = wait_state(&rf, &a, "marked up");
    assert!(
        up.contains("marked up: 3 passed active checks (HTTP 200; "),
        "{up}"
    );
    assert!(requests_to(&a, "/health") >= probes_at_fix + 3);
    let served = load.spread(20);
    assert!(
        (8..=12).contains(&count(&served, &a)),
        "a back in rotation: {served:?}"
    );
    assert!(
        state_lines(&rf, &b).is_empty(),
        "{:?}",
        state_lines(&rf, &b)
    );
}

fn json(status: u16, body: &str) -> Canned {
    Canned {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    }
}

#[test]
fn match_block_tests_status_headers_and_body() {
    // One healthy peer and one peer failing each test of the match block.
    let cases: Vec<(Canned, Option<&str>)> = vec![
        (json(200, "status=up"), None),
        (
            json(503, "status=up"),
            Some("HTTP 503: match failed on status"),
        ),
        (
            Canned::status(200, "status=up"),
            Some("HTTP 200: match failed on header Content-Type"),
        ),
        (
            json(200, "status=up").header("X-Maintenance", "1"),
            Some("HTTP 200: match failed on header X-Maintenance"),
        ),
        (
            json(200, "status=down"),
            Some("HTTP 200: match failed on body ~ \"status=up\""),
        ),
        (
            json(200, "status=up, degraded"),
            Some("HTTP 200: match failed on body !~ \"degraded\""),
        ),
    ];
    let bs: Vec<Backend> = cases.iter().map(|_| Backend::start()).collect();
    for (b, (answer, _)) in bs.iter().zip(&cases) {
        b.set_route("/health", answer.clone());
    }
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &bs.iter().map(addr).collect::<Vec<_>>(),
        "",
        "health_check interval=200ms uri=/health match=healthy;",
        "match healthy {
            status 200-299;
            header Content-Type ~ \"json\";
            header ! X-Maintenance;
            body ~ \"status=up\";
            body !~ \"degraded\";
        }",
    ));
    for (b, (_, why)) in bs.iter().zip(&cases) {
        if let Some(why) = why {
            let line = wait_state(&rf, b, "marked down");
            assert!(
                line.contains(&format!("1 failed active checks ({why}; ")),
                "{line}"
            );
        }
    }
    // The passing peer was probed several times and never changed state.
    let good = &bs[0];
    wait_until("three probes of the passing peer", || {
        requests_to(good, "/health") >= 3
    });
    assert!(
        state_lines(&rf, good).is_empty(),
        "{:?}",
        state_lines(&rf, good)
    );
    let served = Load::new(p).spread(12);
    assert_eq!(count(&served, good), 12, "{served:?}");
    for b in &bs[1..] {
        assert_eq!(user_requests(b, "/health"), 0);
    }
}

#[test]
fn port_parameter_probes_another_port() {
    // a and b answer their own /health with 500; the checks ask h's port instead.
    let (a, b, h) = (Backend::start(), Backend::start(), Backend::start());
    a.set_route("/health", Canned::status(500, "not me"));
    b.set_route("/health", Canned::status(500, "not me"));
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        "",
        &format!("health_check interval=200ms uri=/health port={};", h.port()),
        "",
    ));
    // Two rounds of probes (both peers) reached h, none reached a or b.
    wait_until("four probes on the health port", || {
        requests_to(&h, "/health") >= 4
    });
    assert_eq!(requests_to(&a, "/health") + requests_to(&b, "/health"), 0);
    assert!(!has_state(&rf, &a, "marked") && !has_state(&rf, &b, "marked"));
    let served = Load::new(p).spread(10);
    assert_eq!(
        (count(&served, &a), count(&served, &b)),
        (5, 5),
        "{served:?}"
    );

    // The health port fails: both peers go, although their own ports are fine.
    h.set_route("/health", Canned::status(503, "down"));
    for peer in [&a, &b] {
        let line = wait_state(&rf, peer, "marked down");
        assert!(
            line.contains(&format!(
                "HTTP 503: not 2xx or 3xx; http GET /health every 200ms fails=1 passes=1 port={})",
                h.port()
            )),
            "{line}"
        );
    }
    assert_eq!(requests_to(&a, "/health") + requests_to(&b, "/health"), 0);
    let users = user_requests(&a, "/health") + user_requests(&b, "/health");
    let served = Load::new(p).spread(4);
    assert_eq!(served, [0, 0, 0, 0], "no peer may serve");
    assert_eq!(
        user_requests(&a, "/health") + user_requests(&b, "/health"),
        users
    );
}
