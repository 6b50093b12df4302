//! The exchange's rules, driven with scripted events and injected time: no sockets.

use std::cell::RefCell;
use std::time::Duration;

use super::*;
use crate::testutil::{peer, topo, NO_KEY};
use crate::{Board, Topology, WorkerPeers};

struct World {
    t: Topology,
    b: Board,
    ws: RefCell<WorkerPeers>,
}

impl World {
    fn new(primaries: usize, backups: usize) -> World {
        let p = (0..primaries).map(|i| peer(9000 + i as u16, 1)).collect();
        let b = (0..backups).map(|i| peer(9100 + i as u16, 1)).collect();
        World::from(topo(p, b))
    }

    fn from(t: Topology) -> World {
        let b = Board::new(t.peer_count);
        let ws = RefCell::new(WorkerPeers::new(&t, 7));
        World { t, b, ws }
    }

    fn peers(&self) -> Peers<'_> {
        Peers {
            topo: &self.t,
            board: &self.b,
            worker: &self.ws,
        }
    }

    fn exchange(&self, policy: Policy) -> Exchange<'_> {
        Exchange::new(self.peers(), 0, policy, NO_KEY)
    }

    fn conns(&self) -> u32 {
        (0..self.t.peer_count).map(|id| self.b.conns(id)).sum()
    }

    fn fails(&self, id: PeerId) -> u32 {
        self.b.get(id).map_or(0, |h| h.fails())
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n) + Duration::from_secs(1_000_000)
}

fn get() -> Policy {
    Policy::new(b"GET")
}

fn head(status: u16) -> Event {
    Event::Head(Head {
        status,
        close: false,
        until_close: false,
    })
}

fn fail(phase: Phase, cause: Cause) -> Event {
    Event::Failed(Failure::new(phase, cause))
}

const REFUSED: Cause = Cause::Os(ECONNREFUSED);
const RESET: Cause = Cause::Os(104);

/// Connects (new connection) and sends, from a `Connect` action to `ReadHead`.
fn connect_send(ex: &mut Exchange<'_>, at: u64) {
    let s = ex.on(
        Event::Connected {
            reused: false,
            requests: 0,
        },
        ms(at),
    );
    assert_eq!(s.action, Action::Send);
    assert_eq!(ex.on(Event::Sent, ms(at)).action, Action::ReadHead);
}

fn peer_of(a: Action) -> PeerId {
    match a {
        Action::Connect(p) => p,
        other => panic!("expected Connect, got {other:?}"),
    }
}

#[test]
fn a_clean_exchange_relays_and_pools() {
    let w = World::new(2, 0);
    let mut pol = get();
    pol.keepalive = 8;
    let mut ex = w.exchange(pol);
    let p = peer_of(ex.start(ms(0)).action);
    assert_eq!(w.conns(), 1);
    connect_send(&mut ex, 2);
    assert_eq!(ex.on(head(200), ms(5)).action, Action::Relay);
    let s = ex.on(
        Event::Relayed {
            complete: true,
            clean: true,
        },
        ms(9),
    );
    assert_eq!(s.action, Action::Finish { pool: true });
    assert_eq!(s.freed.map(|f| f.peer), Some(p));
    assert_eq!(w.conns(), 0);
    let t = ex.tries()[0];
    assert_eq!(t.peer, TryPeer::Peer(p));
    assert_eq!(t.status, Some(200));
    assert_eq!(t.connect_time, Some(Duration::from_millis(2)));
    assert_eq!(t.header_time, Some(Duration::from_millis(5)));
    assert_eq!(t.response_time, Some(Duration::from_millis(9)));
}

#[test]
fn error_moves_on_and_counts_the_failure() {
    let w = World::new(2, 0);
    let mut ex = w.exchange(get());
    let first = peer_of(ex.start(ms(0)).action);
    let s = ex.on(fail(Phase::Connect, REFUSED), ms(1));
    let second = peer_of(s.action);
    assert_ne!(first, second);
    let freed = s.freed.unwrap();
    assert_eq!(freed.peer, first);
    assert!(freed.outcome.disabled, "max_fails=1 reached mid-request");
    assert_eq!(freed.failure.unwrap().kind(), FailKind::Refused);
    assert_eq!(w.fails(first), 1);
    assert_eq!(w.conns(), 1);
    connect_send(&mut ex, 2);
    assert_eq!(ex.on(head(200), ms(3)).action, Action::Relay);
    let tries = ex.tries();
    assert_eq!(tries.len(), 2);
    assert_eq!(tries[0].status, Some(502));
    assert_eq!(tries[0].connect_time, None);
}

#[test]
fn last_try_failure_answers_502_or_504() {
    for (cause, status) in [(REFUSED, 502), (Cause::TimedOut, 504)] {
        let w = World::new(2, 0);
        let mut ex = w.exchange(get());
        ex.start(ms(0));
        ex.on(fail(Phase::Connect, cause), ms(1));
        let s = ex.on(fail(Phase::Connect, cause), ms(2));
        assert_eq!(s.action, Action::Respond(status));
        assert_eq!(w.conns(), 0);
        assert_eq!(ex.tries().len(), 2);
    }
}

#[test]
fn unlisted_failures_do_not_move_on_but_still_count() {
    // invalid_header is not in the default list; `off` lists nothing.
    let w = World::new(2, 0);
    let mut ex = w.exchange(get());
    let p = peer_of(ex.start(ms(0)).action);
    connect_send(&mut ex, 1);
    let s = ex.on(fail(Phase::ReadHead, Cause::InvalidHeader), ms(2));
    assert_eq!(s.action, Action::Respond(502));
    assert_eq!(w.fails(p), 1);

    let w = World::new(2, 0);
    let mut pol = get();
    pol.next = NextUpstream {
        off: true,
        error: false,
        timeout: false,
        ..NextUpstream::default()
    };
    let mut ex = w.exchange(pol);
    let p = peer_of(ex.start(ms(0)).action);
    let s = ex.on(fail(Phase::Connect, REFUSED), ms(1));
    assert_eq!(s.action, Action::Respond(502));
    assert_eq!(w.fails(p), 1);
}

#[test]
fn each_failure_flag_governs_its_class() {
    let cases = [
        (Cause::Os(104), FailClass::Error),
        (Cause::Closed, FailClass::Error),
        (Cause::TimedOut, FailClass::Timeout),
        (Cause::InvalidHeader, FailClass::InvalidHeader),
        (Cause::TooBigHeader, FailClass::InvalidHeader),
        (Cause::NoValidHeader, FailClass::InvalidHeader),
    ];
    for (cause, class) in cases {
        for listed in [false, true] {
            let w = World::new(2, 0);
            let mut pol = get();
            pol.next = NextUpstream {
                error: listed && class == FailClass::Error,
                timeout: listed && class == FailClass::Timeout,
                invalid_header: listed && class == FailClass::InvalidHeader,
                ..NextUpstream::default()
            };
            let mut ex = w.exchange(pol);
            ex.start(ms(0));
            connect_send(&mut ex, 1);
            let s = ex.on(fail(Phase::ReadHead, cause), ms(2));
            assert_eq!(
                matches!(s.action, Action::Connect(_)),
                listed,
                "{cause:?} listed={listed}"
            );
        }
    }
}

#[test]
fn listed_statuses_move_on_and_403_404_are_not_failures() {
    for status in [500, 502, 503, 504, 429, 403, 404] {
        let w = World::new(2, 0);
        let mut pol = get();
        pol.next = NextUpstream {
            http_500: status == 500,
            http_502: status == 502,
            http_503: status == 503,
            http_504: status == 504,
            http_429: status == 429,
            http_403: status == 403,
            http_404: status == 404,
            ..NextUpstream::default()
        };
        let mut ex = w.exchange(pol);
        let first = peer_of(ex.start(ms(0)).action);
        connect_send(&mut ex, 1);
        let s = ex.on(head(status), ms(2));
        assert!(
            matches!(s.action, Action::Connect(p) if p != first),
            "{status}"
        );
        let counted = !matches!(status, 403 | 404);
        assert_eq!(w.fails(first), u32::from(counted), "{status}");
        assert_eq!(s.freed.unwrap().failure, None);
        assert_eq!(ex.tries()[0].status, Some(status));
        // The same status unlisted is relayed.
        let w = World::new(2, 0);
        let mut ex = w.exchange(get());
        ex.start(ms(0));
        connect_send(&mut ex, 1);
        assert_eq!(ex.on(head(status), ms(2)).action, Action::Relay);
    }
}

#[test]
fn listed_5xx_on_the_last_try_is_passed_through_as_a_success() {
    let w = World::new(2, 0);
    let mut pol = get();
    pol.next.http_503 = true;
    let mut ex = w.exchange(pol);
    let a = peer_of(ex.start(ms(0)).action);
    connect_send(&mut ex, 1);
    let b = peer_of(ex.on(head(503), ms(2)).action);
    connect_send(&mut ex, 3);
    assert_eq!(ex.on(head(503), ms(4)).action, Action::Relay);
    let s = ex.on(
        Event::Relayed {
            complete: true,
            clean: true,
        },
        ms(5),
    );
    assert_eq!(s.action, Action::Finish { pool: false });
    assert_eq!(w.fails(a), 1);
    assert_eq!(w.fails(b), 0, "the last try's 503 is freed as a success");
    assert_eq!(w.conns(), 0);
}

#[test]
fn tries_are_capped_by_proxy_next_upstream_tries() {
    let w = World::new(4, 0);
    let mut pol = get();
    pol.tries = 2;
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    assert!(matches!(
        ex.on(fail(Phase::Connect, REFUSED), ms(1)).action,
        Action::Connect(_)
    ));
    assert_eq!(
        ex.on(fail(Phase::Connect, REFUSED), ms(2)).action,
        Action::Respond(502)
    );
}

#[test]
fn next_upstream_timeout_stops_moving_on() {
    let w = World::new(3, 0);
    let mut pol = get();
    pol.timeout = Duration::from_millis(100);
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    assert!(matches!(
        ex.on(fail(Phase::Connect, Cause::TimedOut), ms(99)).action,
        Action::Connect(_)
    ));
    assert_eq!(
        ex.on(fail(Phase::Connect, Cause::TimedOut), ms(100)).action,
        Action::Respond(504)
    );
    // A listed status past the timeout is relayed, not retried.
    let w = World::new(3, 0);
    let mut pol = get();
    pol.timeout = Duration::from_millis(100);
    pol.next.http_502 = true;
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    connect_send(&mut ex, 50);
    assert_eq!(ex.on(head(502), ms(150)).action, Action::Relay);
}

#[test]
fn an_error_on_a_reused_connection_gives_the_try_back() {
    let w = World::new(2, 0);
    let mut ex = w.exchange(get());
    let a = peer_of(ex.start(ms(0)).action);
    let s = ex.on(
        Event::Connected {
            reused: true,
            requests: 3,
        },
        ms(0),
    );
    assert_eq!(s.action, Action::Send);
    ex.on(Event::Sent, ms(0));
    let s = ex.on(fail(Phase::ReadHead, Cause::Closed), ms(1));
    let b = peer_of(s.action);
    assert_ne!(a, b);
    assert_eq!(w.fails(a), 1, "still a failure of the peer");
    // The try was given back: a failure on b leaves one more try (a again is tried? no:
    // the tried bitmap forbids it, so the group has nothing left and answers NoLive).
    connect_send(&mut ex, 2);
    let s = ex.on(fail(Phase::ReadHead, RESET), ms(3));
    assert_eq!(s.action, Action::NoLive);
}

#[test]
fn a_timeout_on_a_reused_connection_uses_up_the_try() {
    let w = World::new(2, 0);
    let mut ex = w.exchange(get());
    ex.start(ms(0));
    ex.on(
        Event::Connected {
            reused: true,
            requests: 1,
        },
        ms(0),
    );
    ex.on(Event::Sent, ms(0));
    ex.on(fail(Phase::ReadHead, Cause::TimedOut), ms(1));
    connect_send(&mut ex, 2);
    let s = ex.on(fail(Phase::ReadHead, Cause::TimedOut), ms(3));
    assert_eq!(s.action, Action::Respond(504));
}

#[test]
fn post_and_patch_are_not_resent_once_sent() {
    for method in [&b"POST"[..], b"PATCH", b"LOCK"] {
        let w = World::new(2, 0);
        let mut ex = w.exchange(Policy::new(method));
        ex.start(ms(0));
        connect_send(&mut ex, 1);
        assert_eq!(
            ex.on(fail(Phase::ReadHead, RESET), ms(2)).action,
            Action::Respond(502)
        );
        // Not sent yet (the connect failed): moves on.
        let w = World::new(2, 0);
        let mut ex = w.exchange(Policy::new(method));
        ex.start(ms(0));
        assert!(matches!(
            ex.on(fail(Phase::Connect, REFUSED), ms(1)).action,
            Action::Connect(_)
        ));
        // With non_idempotent listed: moves on.
        let w = World::new(2, 0);
        let mut pol = Policy::new(method);
        pol.next.non_idempotent = true;
        let mut ex = w.exchange(pol);
        ex.start(ms(0));
        connect_send(&mut ex, 1);
        assert!(matches!(
            ex.on(fail(Phase::ReadHead, RESET), ms(2)).action,
            Action::Connect(_)
        ));
    }
    // A listed status is not retried for POST either.
    let w = World::new(2, 0);
    let mut pol = Policy::new(b"POST");
    pol.next.http_502 = true;
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    connect_send(&mut ex, 1);
    assert_eq!(ex.on(head(502), ms(2)).action, Action::Relay);
}

/// A failed TLS handshake (`proxy_pass https://`) is nginx's `error`: it counts against the
/// peer and moves on, even for POST (no request byte was sent); a slow one is `timeout`.
#[test]
fn a_failed_handshake_is_an_error_that_moves_on() {
    let bad = Cause::Ssl(SslFault::Verify(
        20,
        "unable to get local issuer certificate",
    ));
    let w = World::new(2, 0);
    let mut ex = w.exchange(Policy::new(b"POST"));
    let first = peer_of(ex.start(ms(0)).action);
    let s = ex.on(fail(Phase::Handshake, bad), ms(3));
    assert!(matches!(s.action, Action::Connect(p) if p != first));
    assert_eq!(s.freed.and_then(|f| f.failure).map(|f| f.cause), Some(bad));
    assert_eq!(w.fails(first), 1);
    assert_eq!(ex.tries()[0].status, Some(502));
    // `proxy_next_upstream timeout` alone does not list it.
    let w = World::new(2, 0);
    let mut pol = get();
    pol.next.error = false;
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    let s = ex.on(fail(Phase::Handshake, bad), ms(1));
    assert_eq!(s.action, Action::Respond(502));
    let w = World::new(2, 0);
    let mut ex = w.exchange(get());
    ex.start(ms(0));
    let s = ex.on(fail(Phase::Handshake, Cause::TimedOut), ms(1));
    assert!(matches!(s.action, Action::Connect(_)));
}

#[test]
fn backups_are_tried_when_primaries_fail() {
    let w = World::new(2, 1);
    let backup = w.t.upstreams[0].backup.base;
    let mut ex = w.exchange(get());
    ex.start(ms(0));
    ex.on(fail(Phase::Connect, REFUSED), ms(1));
    let s = ex.on(fail(Phase::Connect, REFUSED), ms(2));
    assert_eq!(s.action, Action::Connect(backup));
    connect_send(&mut ex, 3);
    assert_eq!(ex.on(head(200), ms(4)).action, Action::Relay);
}

#[test]
fn nothing_selectable_is_no_live_with_the_group_logged() {
    let w = World::new(1, 0);
    w.b.get(0)
        .unwrap()
        .state
        .store(crate::DOWN, std::sync::atomic::Ordering::Relaxed);
    let mut ex = w.exchange(get());
    assert_eq!(ex.start(ms(0)).action, Action::NoLive);
    assert_eq!(ex.tries()[0].peer, TryPeer::Group(0));
    assert_eq!(ex.tries()[0].status, Some(502));
}

#[test]
fn unexpected_101_is_an_invalid_header() {
    let w = World::new(2, 0);
    let mut pol = get();
    pol.next.invalid_header = true;
    let mut ex = w.exchange(pol);
    let a = peer_of(ex.start(ms(0)).action);
    connect_send(&mut ex, 1);
    let s = ex.on(head(101), ms(2));
    assert!(matches!(s.action, Action::Connect(_)));
    assert_eq!(
        s.freed.unwrap().failure,
        Some(Failure::new(Phase::ReadHead, Cause::Unexpected101))
    );
    assert_eq!(w.fails(a), 1);
    // Asked for: relayed (a tunnel), never pooled.
    let w = World::new(1, 0);
    let mut pol = get();
    pol.upgrade = true;
    pol.keepalive = 4;
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    connect_send(&mut ex, 1);
    assert_eq!(ex.on(head(101), ms(2)).action, Action::Relay);
    let s = ex.on(
        Event::Relayed {
            complete: true,
            clean: true,
        },
        ms(3),
    );
    assert_eq!(s.action, Action::Finish { pool: false });
}

#[test]
fn body_errors_are_not_failures_and_are_not_pooled() {
    let w = World::new(2, 0);
    let mut pol = get();
    pol.keepalive = 4;
    let mut ex = w.exchange(pol);
    let a = peer_of(ex.start(ms(0)).action);
    connect_send(&mut ex, 1);
    ex.on(head(200), ms(2));
    let s = ex.on(fail(Phase::ReadBody, Cause::Closed), ms(3));
    assert_eq!(s.action, Action::Finish { pool: false });
    assert_eq!(w.fails(a), 0);
    assert_eq!(w.conns(), 0);
}

#[test]
fn pool_eligibility() {
    let ok = Head {
        status: 200,
        close: false,
        until_close: false,
    };
    let cases: [(Head, bool, bool, usize, u64, bool); 8] = [
        (ok, true, false, 4, 0, true),
        (ok, false, false, 4, 0, false), // body incomplete
        (ok, true, true, 4, 0, false),   // http 1.0 upstream
        (ok, true, false, 0, 0, false),  // no keepalive cache
        (ok, true, false, 4, 99, false), // keepalive_requests (100) reached
        (ok, true, false, 4, 98, true),
        (Head { close: true, ..ok }, true, false, 4, 0, false),
        (
            Head {
                until_close: true,
                ..ok
            },
            true,
            false,
            4,
            0,
            false,
        ),
    ];
    for (i, (h, complete, http10, keepalive, requests, want)) in cases.into_iter().enumerate() {
        let w = World::new(1, 0);
        let mut pol = get();
        pol.keepalive = keepalive;
        pol.keepalive_requests = 100;
        pol.http10 = http10;
        let mut ex = w.exchange(pol);
        ex.start(ms(0));
        ex.on(
            Event::Connected {
                reused: requests > 0,
                requests,
            },
            ms(0),
        );
        ex.on(Event::Sent, ms(0));
        assert_eq!(ex.on(Event::Head(h), ms(1)).action, Action::Relay);
        let s = ex.on(
            Event::Relayed {
                complete,
                clean: true,
            },
            ms(2),
        );
        assert_eq!(s.action, Action::Finish { pool: want }, "case {i}");
    }
    // Bytes after the body: never pooled.
    let w = World::new(1, 0);
    let mut pol = get();
    pol.keepalive = 4;
    let mut ex = w.exchange(pol);
    ex.start(ms(0));
    connect_send(&mut ex, 0);
    ex.on(head(200), ms(1));
    let s = ex.on(
        Event::Relayed {
            complete: true,
            clean: false,
        },
        ms(2),
    );
    assert_eq!(s.action, Action::Finish { pool: false });
}

#[test]
fn a_dropped_exchange_frees_its_peer() {
    let w = World::new(2, 0);
    {
        let mut ex = w.exchange(get());
        ex.start(ms(0));
        connect_send(&mut ex, 1);
        assert_eq!(w.conns(), 1);
    }
    assert_eq!(w.conns(), 0, "the Pick guard freed the peer");
    assert_eq!(w.fails(0) + w.fails(1), 0, "as a success");
    let w = World::new(2, 0);
    let mut ex = w.exchange(get());
    ex.start(ms(0));
    let tries = ex.into_tries();
    assert_eq!(tries.len(), 1);
    assert_eq!(w.conns(), 0);
}

#[test]
fn least_time_gets_header_or_last_byte_time() {
    use crate::{Balancer, UpstreamSpec};
    for (last_byte, want_us) in [(false, 5_000), (true, 9_000)] {
        let t = Topology::new(vec![UpstreamSpec {
            name: "b".into(),
            primary: vec![peer(9000, 1)],
            backup: vec![],
            balancer: Balancer::LeastTime {
                last_byte,
                inflight: false,
            },
            revive: false,
        }]);
        let w = World::from(t);
        let mut pol = get();
        pol.least_time_last_byte = Some(last_byte);
        let mut ex = w.exchange(pol);
        ex.start(ms(0));
        connect_send(&mut ex, 1);
        ex.on(head(200), ms(5));
        ex.on(
            Event::Relayed {
                complete: true,
                clean: true,
            },
            ms(9),
        );
        assert_eq!(w.b.get(0).unwrap().response_time_us(), want_us);
    }
}

#[test]
fn a_client_gone_mid_body_frees_the_peer_without_a_failure_or_a_retry() {
    let w = World::new(2, 0);
    let mut ex = w.exchange(Policy::new(b"POST"));
    let p = peer_of(ex.start(ms(0)).action);
    let s = ex.on(
        Event::Connected {
            reused: false,
            requests: 0,
        },
        ms(1),
    );
    assert_eq!(s.action, Action::Send);
    let s = ex.abandon_streaming(ms(4));
    assert_eq!(s.action, Action::Finish { pool: false });
    let freed = s.freed.expect("the peer is freed");
    assert_eq!((freed.peer, freed.failure), (p, None));
    assert_eq!(w.conns(), 0);
    assert_eq!(w.fails(p), 0, "not the peer's failure");
    assert_eq!(ex.tries().len(), 1, "no other peer tried");
    assert_eq!(ex.tries()[0].response_time, Some(Duration::from_millis(4)));
    // Outside the sending step it changes nothing.
    assert_eq!(ex.abandon_streaming(ms(5)).freed, None);
}
