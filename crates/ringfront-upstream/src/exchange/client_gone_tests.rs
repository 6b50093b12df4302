//! A client that closes while the upstream is waited for (`Event::ClientGone`): nginx's
//! `ngx_http_upstream_check_broken_connection` ends the request with 499, frees the peer
//! as a success and keeps no connection. Scripted events, injected time.

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
    fn new(primaries: usize) -> World {
        let t = topo(
            (0..primaries).map(|i| peer(9000 + i as u16, 1)).collect(),
            Vec::new(),
        );
        World {
            b: Board::new(t.peer_count),
            ws: RefCell::new(WorkerPeers::new(&t, 7)),
            t,
        }
    }

    fn exchange(&self) -> Exchange<'_> {
        let peers = Peers {
            topo: &self.t,
            board: &self.b,
            worker: &self.ws,
        };
        let mut p = Policy::new(b"GET");
        p.keepalive = 8;
        Exchange::new(peers, 0, p, NO_KEY)
    }

    fn conns(&self) -> u32 {
        (0..self.t.peer_count).map(|id| self.b.conns(id)).sum()
    }

    fn fails(&self) -> u32 {
        (0..self.t.peer_count)
            .map(|id| self.b.get(id).map_or(0, |h| h.fails()))
            .sum()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n) + Duration::from_secs(1_000_000)
}

const CONNECTED: Event = Event::Connected {
    reused: false,
    requests: 0,
};

#[test]
fn gone_while_reading_the_head_abandons_the_try_as_a_success() {
    let w = World::new(2);
    let mut ex = w.exchange();
    let Action::Connect(p) = ex.start(ms(0)).action else {
        panic!("no peer");
    };
    ex.on(CONNECTED, ms(2));
    assert_eq!(ex.on(Event::Sent, ms(3)).action, Action::ReadHead);
    let s = ex.on(Event::ClientGone, ms(40));
    assert_eq!(s.action, Action::Abandon(Phase::ReadHead));
    let freed = s.freed.expect("the peer is freed");
    assert_eq!((freed.peer, freed.failure), (p, None));
    assert!(!freed.outcome.disabled);
    assert_eq!((w.conns(), w.fails()), (0, 0));
    let t = ex.tries()[0];
    assert_eq!(t.status, None, "$upstream_status is -");
    assert_eq!(t.connect_time, Some(Duration::from_millis(2)));
    assert_eq!(t.header_time, None);
    assert_eq!(t.response_time, Some(Duration::from_millis(40)));
    assert_eq!(ex.tries().len(), 1, "no other peer is tried");
}

#[test]
fn the_phase_is_the_one_waited_in() {
    let w = World::new(1);
    let mut ex = w.exchange();
    ex.start(ms(0));
    assert_eq!(
        ex.on(Event::ClientGone, ms(1)).action,
        Action::Abandon(Phase::Connect)
    );
    assert_eq!(ex.tries()[0].connect_time, None);
    let mut ex = w.exchange();
    ex.start(ms(0));
    ex.on(CONNECTED, ms(1));
    assert_eq!(
        ex.on(Event::ClientGone, ms(1)).action,
        Action::Abandon(Phase::SendRequest)
    );
    assert_eq!(w.conns(), 0);
}

#[test]
fn once_relaying_a_gone_client_is_not_an_abandon() {
    let w = World::new(1);
    let mut ex = w.exchange();
    ex.start(ms(0));
    ex.on(CONNECTED, ms(1));
    ex.on(Event::Sent, ms(1));
    let head = Head {
        status: 200,
        close: false,
        until_close: false,
    };
    assert_eq!(ex.on(Event::Head(head), ms(2)).action, Action::Relay);
    let s = ex.on(Event::ClientGone, ms(3));
    assert!(!matches!(s.action, Action::Abandon(_)));
}
