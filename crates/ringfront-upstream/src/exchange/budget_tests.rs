//! `proxy_next_upstream_budget` in the exchange: injected loads, scripted events.

use std::cell::RefCell;
use std::time::Duration;

use super::*;
use crate::budget::{Load, RetryBudget, Slot};
use crate::testutil::{peer, topo, NO_KEY};
use crate::{Board, PeerSpec, Topology, WorkerPeers};

struct World {
    t: Topology,
    b: Board,
    ws: RefCell<WorkerPeers>,
    load: Load,
}

impl World {
    fn new() -> World {
        // max_fails=0: failures never take a peer out, so only the budget decides.
        let peers = (0..3)
            .map(|i| PeerSpec {
                max_fails: 0,
                ..peer(9000 + i, 1)
            })
            .collect();
        let t = topo(peers, Vec::new());
        World {
            b: Board::new(t.peer_count),
            ws: RefCell::new(WorkerPeers::new(&t, 7)),
            t,
            load: Load::default(),
        }
    }

    fn exchange(&self, policy: Policy, budget: Option<RetryBudget>) -> Exchange<'_> {
        let peers = Peers {
            topo: &self.t,
            board: &self.b,
            worker: &self.ws,
        };
        let mut ex = Exchange::new(peers, 0, policy, NO_KEY);
        if let Some(b) = budget {
            ex.budget(Slot::new(&self.load, b));
        }
        ex
    }
}

fn at() -> Duration {
    Duration::from_secs(1_000_000)
}

fn connected(ex: &mut Exchange<'_>) {
    let c = Event::Connected {
        reused: false,
        requests: 0,
    };
    assert_eq!(ex.on(c, at()).action, Action::Send);
    assert_eq!(ex.on(Event::Sent, at()).action, Action::ReadHead);
}

fn refused() -> Event {
    Event::Failed(Failure::new(Phase::Connect, Cause::Os(ECONNREFUSED)))
}

const NONE: RetryBudget = RetryBudget { percent: 0, min: 0 };

#[test]
fn without_a_budget_every_peer_is_tried() {
    let w = World::new();
    let mut ex = w.exchange(Policy::new(b"GET"), None);
    ex.start(at());
    assert!(matches!(ex.on(refused(), at()).action, Action::Connect(_)));
    assert!(matches!(ex.on(refused(), at()).action, Action::Connect(_)));
    assert_eq!(ex.on(refused(), at()).action, Action::Respond(502));
    assert!(ex.take_denied().is_none());
}

#[test]
fn a_spent_budget_returns_the_failure_as_it_is() {
    let w = World::new();
    let mut ex = w.exchange(Policy::new(b"GET"), Some(NONE));
    ex.start(at());
    let s = ex.on(refused(), at());
    assert_eq!(s.action, Action::Respond(502));
    assert!(s.freed.is_some());
    assert!(ex.take_denied().is_some());
    assert!(ex.take_denied().is_none(), "reported once");
    assert_eq!(ex.tries().len(), 1);
}

#[test]
fn a_listed_status_over_budget_is_relayed() {
    let w = World::new();
    let mut pol = Policy::new(b"GET");
    pol.next.http_502 = true;
    let mut ex = w.exchange(pol, Some(NONE));
    ex.start(at());
    connected(&mut ex);
    let h = Event::Head(Head {
        status: 502,
        close: false,
        until_close: false,
    });
    assert_eq!(ex.on(h, at()).action, Action::Relay);
    assert!(ex.take_denied().is_some());
}

#[test]
fn the_minimum_lets_retries_through_and_drop_gives_them_back() {
    let w = World::new();
    let b = RetryBudget { percent: 0, min: 1 };
    let mut first = w.exchange(Policy::new(b"GET"), Some(b));
    let mut second = w.exchange(Policy::new(b"GET"), Some(b));
    first.start(at());
    second.start(at());
    assert!(matches!(
        first.on(refused(), at()).action,
        Action::Connect(_)
    ));
    assert_eq!(w.load.retries(), 1);
    // The one retry slot is taken: the second request gets its failure.
    assert_eq!(second.on(refused(), at()).action, Action::Respond(502));
    // The first keeps its slot for its next retry.
    assert!(matches!(
        first.on(refused(), at()).action,
        Action::Connect(_)
    ));
    assert_eq!(w.load.active(), 2);
    drop((first, second));
    assert_eq!((w.load.active(), w.load.retries()), (0, 0));
}

#[test]
fn a_given_back_try_does_not_use_the_budget() {
    let w = World::new();
    let mut ex = w.exchange(Policy::new(b"GET"), Some(NONE));
    ex.start(at());
    let reused = Event::Connected {
        reused: true,
        requests: 3,
    };
    assert_eq!(ex.on(reused, at()).action, Action::Send);
    let reset = Event::Failed(Failure::new(Phase::SendRequest, Cause::Os(104)));
    assert!(matches!(ex.on(reset, at()).action, Action::Connect(_)));
    assert!(ex.take_denied().is_none());
}
