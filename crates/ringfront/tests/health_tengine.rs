//! Tengine `check` syntax: `type=tcp` (a connect is the probe), `type=http` with
//! `check_http_send` and `check_http_expect_alive`, `rise`/`fall`, and `default_down`.

mod common;

use common::health::{
    count, has_state, hc_config, lines_after, requests_to, state_lines, user_requests, wait_state,
    wait_until, Load,
};
use common::{addr, port};
use ringfront_testkit::{Backend, Canned, Mode, Ringfront};

#[test]
fn tcp_check_takes_a_refusing_peer_out_and_back() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_mode(Mode::Refuse);
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        "check interval=200 rise=2 fall=1 timeout=500 type=tcp default_down=false;",
        "",
        "",
    ));
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains("1 failed active checks (connect refused; tcp connect every 200ms"),
        "{down}"
    );
    // Out: requests go straight to b, with no failed connect to a any more.
    let served = Load::new(p).spread(10);
    assert_eq!(count(&served, &b), 10, "{served:?}");
    let refused_a = format!("upstream: \"http://{}/", addr(&a));
    let late: Vec<String> = lines_after(&rf, &down)
        .into_iter()
        .filter(|l| l.contains("connect() failed") && l.contains(&refused_a))
        .collect();
    assert!(late.is_empty(), "a was still tried: {late:?}");

    // The port opens: `rise=2` connects bring a back.
    a.set_mode(Mode::Ok);
    let up = wait_state(&rf, &a, "marked up");
    assert!(up.contains("2 passed active checks (connected; "), "{up}");
    let served = Load::new(p).spread(10);
    assert!(count(&served, &a) >= 4, "{served:?}");
}

#[test]
fn http_check_with_send_and_expect_alive_rejects_a_redirect() {
    let (a, b) = (Backend::start(), Backend::start());
    a.set_route(
        "/status",
        Canned::status(302, "moved").header("Location", "/elsewhere"),
    );
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        r#"check interval=200 rise=1 fall=2 timeout=1000 type=http default_down=false;
        check_http_send "GET /status HTTP/1.0\r\n\r\n";
        check_http_expect_alive http_2xx;"#,
        "",
        "",
    ));
    let down = wait_state(&rf, &a, "marked down");
    assert!(
        down.contains(
            "2 failed active checks (HTTP 302: 3xx not expected; \
             http \"GET /status HTTP/1.0\" every 200ms"
        ),
        "{down}"
    );
    // The probe is exactly the configured bytes.
    let probe = a
        .requests()
        .into_iter()
        .find(|r| r.target == "/status")
        .expect("a probe");
    assert_eq!(probe.raw_head, b"GET /status HTTP/1.0\r\n\r\n");
    wait_until("two probes of b", || requests_to(&b, "/status") >= 2);
    assert!(!has_state(&rf, &b, "marked"), "{:?}", state_lines(&rf, &b));

    let users = user_requests(&a, "/status");
    let served = Load::new(p).spread(10);
    assert_eq!(count(&served, &b), 10, "{served:?}");
    assert_eq!(user_requests(&a, "/status"), users);

    a.set_route("/status", Canned::status(204, ""));
    let up = wait_state(&rf, &a, "marked up");
    assert!(up.contains("1 passed active checks (HTTP 204; "), "{up}");
    let served = Load::new(p).spread(10);
    assert!(count(&served, &a) >= 4, "{served:?}");
}

/// Both peers' probes take 2 s (`?sleep=2`); what do requests right after start get?
fn slow_first_probe(default_down: bool) -> (Ringfront, Backend, Backend, u16) {
    let (a, b) = (Backend::start(), Backend::start());
    let p = port();
    let rf = Ringfront::start(&hc_config(
        p,
        &[addr(&a), addr(&b)],
        &format!(
            r#"check interval=200 rise=1 fall=1 timeout=5000 type=http default_down={default_down};
        check_http_send "GET /status?sleep=2 HTTP/1.0\r\n\r\n";"#
        ),
        "",
        "",
    ));
    (rf, a, b, p)
}

#[test]
fn default_down_true_holds_traffic_until_the_first_pass() {
    let (rf, a, b, p) = slow_first_probe(true);
    let mut load = Load::new(p);
    let early: Vec<(u16, u16)> = (0..6).map(|_| load.get("/")).collect();
    assert!(
        !has_state(&rf, &a, "marked up") && !has_state(&rf, &b, "marked up"),
        "inconclusive: a probe passed before the early requests were done"
    );
    assert!(
        early.iter().all(|&(s, by)| (s, by) == (502, 0)),
        "{early:?}"
    );
    assert_eq!(
        user_requests(&a, "/status") + user_requests(&b, "/status"),
        0
    );
    for peer in [&a, &b] {
        let up = wait_state(&rf, peer, "marked up");
        assert!(up.contains("first active check passed (HTTP 200; "), "{up}");
    }
    let served = load.spread(10);
    assert_eq!(
        (count(&served, &a), count(&served, &b)),
        (5, 5),
        "{served:?}"
    );
}

#[test]
fn default_down_false_serves_at_once() {
    let (rf, a, b, p) = slow_first_probe(false);
    let served = Load::new(p).spread(6);
    assert!(
        requests_to(&a, "/status?sleep") + requests_to(&b, "/status?sleep") <= 2,
        "inconclusive: the first probes were already repeated"
    );
    assert_eq!(
        (count(&served, &a), count(&served, &b)),
        (3, 3),
        "{served:?}"
    );
    // Nothing changed state: the peers were up from the start.
    assert!(state_lines(&rf, &a).is_empty() && state_lines(&rf, &b).is_empty());
}
