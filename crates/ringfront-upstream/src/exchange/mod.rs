//! The exchange with upstreams for one request, without I/O (nginx's `ngx_http_upstream`
//! with `proxy_next_upstream`): the driver reports what happened — connected, sent, a
//! response head, the body relayed, a failure with its phase and cause — with the time, and
//! gets back what to do next: connect to a peer, send, read the head, relay the response,
//! answer with an error status, or finish (keeping the connection or not). Every rule about
//! tries, which failures and statuses move on, which count against the peer, the give-back
//! of a try on a reused connection, non-idempotent methods, `proxy_next_upstream_timeout`,
//! pool eligibility and the `$upstream_*` values lives here, tested with injected time.

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod client_gone_tests;
mod failure;
mod pick;
mod policy;
mod record;
mod spare;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use failure::{Cause, Errno, FailClass, Failure, Phase, SslFault, ECONNREFUSED};
pub use pick::{Peers, Pick};
pub use policy::{non_idempotent, status_is_failure, NextUpstream, Policy};
pub use record::{TryPeer, TryRecord};
pub use spare::{keep_tries, trim_tries};

use crate::attempt::Selection;
use crate::board::FailKind;
use crate::select::{FreeOutcome, RequestKey};
use crate::topology::{PeerId, UpstreamId};

/// What the driver saw. Every event comes with the monotonic time it happened at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A connection to the peer is open: new, or `reused` from the keepalive pool having
    /// served `requests` requests already.
    Connected { reused: bool, requests: u64 },
    /// The whole request was written.
    Sent,
    /// A final response head arrived (interim 1xx are skipped by the reader).
    Head(Head),
    /// The response was relayed to the client (or relaying stopped): `complete` when the
    /// body ended where its framing said, `clean` when nothing followed it.
    Relayed { complete: bool, clean: bool },
    /// A step failed.
    Failed(Failure),
    /// The client closed its connection while the upstream was waited for (connecting,
    /// sending, reading the head) and the location does not ignore it.
    ClientGone,
}

/// The facts of a response head the exchange decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// The upstream said `Connection: close` (or speaks HTTP/1.0 without keep-alive).
    pub close: bool,
    /// The body ends when the connection closes.
    pub until_close: bool,
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Take an idle pooled connection to this peer or open one; report `Connected` or a
    /// `Connect`-phase failure. Any connection of an earlier try is closed.
    Connect(PeerId),
    /// Write the request; report `Sent` or a failure.
    Send,
    /// Read the response head; report `Head` or a failure.
    ReadHead,
    /// Send the head to the client and stream the body (or tunnel a `101`); report
    /// `Relayed`, or a `ReadBody` failure.
    Relay,
    /// No peer can be selected (nginx's "no live upstreams"): answer 502.
    NoLive,
    /// Answer the client with this status (the last try failed; nothing was relayed).
    Respond(u16),
    /// Done. `pool`: keep the upstream connection for another request.
    Finish { pool: bool },
    /// The client went away during this phase of the try: close the upstream connection
    /// and end the request without an answer (nginx's 499).
    Abandon(Phase),
}

/// A try that ended: the driver logs it and tells the health checker what `free` saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freed {
    pub peer: PeerId,
    pub outcome: FreeOutcome,
    /// The failure that ended it, if it was one (a listed status that moved on is not).
    pub failure: Option<Failure>,
}

/// One step's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub action: Action,
    pub freed: Option<Freed>,
}

impl Step {
    fn only(action: Action) -> Step {
        Step {
            action,
            freed: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Connecting,
    Sending,
    ReadingHead,
    Relaying,
    Done,
}

/// One request's exchange with one upstream group.
pub struct Exchange<'a> {
    pick: Pick<'a>,
    policy: Policy,
    key: RequestKey<'a>,
    state: State,
    started: Duration,
    try_started: Duration,
    reused: bool,
    requests: u64,
    head: Option<Head>,
    tries: Vec<TryRecord>,
    /// `proxy_next_upstream_budget`: this request's share of its group's load.
    budget: Option<crate::budget::Slot<'a>>,
    /// A retry was refused by the budget (the driver logs it, once per interval).
    denied: bool,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl<'a> Exchange<'a> {
    pub fn new(
        peers: Peers<'a>,
        upstream: UpstreamId,
        policy: Policy,
        key: RequestKey<'a>,
    ) -> Self {
        Exchange {
            pick: Pick::new(peers, upstream, policy.tries),
            policy,
            key,
            state: State::Idle,
            started: Duration::ZERO,
            try_started: Duration::ZERO,
            reused: false,
            requests: 0,
            head: None,
            tries: spare::take(),
            budget: None,
            denied: false,
        }
    }

    /// `proxy_next_upstream_budget`: count this request in its group's load and let it move
    /// on only within the budget (call before `start`).
    pub fn budget(&mut self, slot: crate::budget::Slot<'a>) {
        self.budget = Some(slot);
    }

    /// Whether the budget refused a retry since the last call, and the load it counts in.
    pub fn take_denied(&mut self) -> Option<&'a crate::budget::Load> {
        let denied = std::mem::take(&mut self.denied);
        self.budget.as_ref().filter(|_| denied).map(|s| s.load())
    }

    /// May the request move on to another peer now (always, without a budget)?
    fn retry_admitted(&mut self) -> bool {
        let ok = self.budget.as_mut().is_none_or(|s| s.admit());
        self.denied |= !ok;
        ok
    }

    /// `sticky`: the peer the request names, and the backup with its server id (call
    /// before `start`).
    pub fn pin(&mut self, id: Option<PeerId>, backup: Option<PeerId>) {
        self.pick.pin(id, backup);
    }

    /// The first action: select a peer.
    pub fn start(&mut self, now: Duration) -> Step {
        self.started = now;
        Step::only(self.next_peer(now))
    }

    /// The `$upstream_*` values, one per try.
    pub fn tries(&self) -> &[TryRecord] {
        &self.tries
    }

    /// The current try's record, for the byte counts the I/O side keeps.
    pub fn current_try(&mut self) -> Option<&mut TryRecord> {
        self.tries.last_mut()
    }

    /// The `$upstream_*` values; a peer still held is freed (as a success).
    pub fn into_tries(mut self) -> Vec<TryRecord> {
        self.take_tries()
    }

    /// The `$upstream_*` values, taken (the exchange keeps none).
    pub fn take_tries(&mut self) -> Vec<TryRecord> {
        std::mem::take(&mut self.tries)
    }

    /// The peer of the try in progress.
    pub fn current(&self) -> Option<PeerId> {
        self.pick.current()
    }

    /// Feeds one event; returns what to do next.
    pub fn on(&mut self, ev: Event, now: Duration) -> Step {
        match (self.state, ev) {
            (State::Connecting, Event::Connected { reused, requests }) => {
                self.reused = reused;
                self.requests = requests;
                if let Some(t) = self.tries.last_mut() {
                    t.connect_time = Some(now.saturating_sub(self.try_started));
                }
                self.state = State::Sending;
                Step::only(Action::Send)
            }
            (State::Sending, Event::Sent) => {
                self.state = State::ReadingHead;
                Step::only(Action::ReadHead)
            }
            (State::ReadingHead, Event::Head(h)) => self.on_head(h, now),
            (State::Relaying, Event::Relayed { complete, clean }) => {
                self.finish(complete && clean, now)
            }
            (State::Relaying, Event::Failed(_) | Event::ClientGone) => self.finish(false, now),
            (State::Connecting | State::Sending | State::ReadingHead, Event::Failed(f)) => {
                self.on_failure(f, now)
            }
            (State::Connecting | State::Sending | State::ReadingHead, Event::ClientGone) => {
                self.abandon(now)
            }
            // An event the driver should not have sent: end the try as an error.
            (State::Idle | State::Done, _) => Step::only(Action::Respond(502)),
            _ => self.on_failure(Failure::new(Phase::ReadHead, Cause::InvalidHeader), now),
        }
    }

    fn timed_out(&self, now: Duration) -> bool {
        !self.policy.timeout.is_zero() && now.saturating_sub(self.started) >= self.policy.timeout
    }

    fn next_peer(&mut self, now: Duration) -> Action {
        match self.pick.select(&self.key, now.as_secs()) {
            Selection::Peer(id) => {
                self.state = State::Connecting;
                self.try_started = now;
                self.reused = false;
                self.requests = 0;
                self.head = None;
                self.tries.push(TryRecord::new(TryPeer::Peer(id)));
                Action::Connect(id)
            }
            Selection::NoLive => {
                self.state = State::Done;
                let mut t = TryRecord::new(TryPeer::Group(self.pick.upstream()));
                t.status = Some(502);
                self.tries.push(t);
                Action::NoLive
            }
        }
    }

    fn health(&self, peer: PeerId) -> Option<&'a crate::board::PeerHealth> {
        self.pick.peers().board.get(peer)
    }

    fn on_failure(&mut self, f: Failure, now: Duration) -> Step {
        let Some(peer) = self.pick.current() else {
            self.state = State::Done;
            return Step::only(Action::Respond(f.status()));
        };
        if let Some(h) = self.health(peer) {
            h.note_failure(f.kind());
        }
        let outcome = self.pick.free(true, None, now.as_secs());
        if let Some(t) = self.tries.last_mut() {
            t.status = Some(f.status());
            t.response_time = Some(now.saturating_sub(self.try_started));
        }
        // nginx gives the try back when a reused keepalive connection fails with an error
        // (the peer may just have closed it): the request moves on without using one up,
        // and without using the retry budget.
        let given_back = self.reused && f.class() == FailClass::Error;
        if given_back {
            self.pick.give_back_try();
        }
        let listed = self.policy.next.lists_failure(f.class());
        let blocked = f.phase.request_sent() && !self.policy.may_resend();
        let action = if self.pick.tries() == 0
            || !listed
            || blocked
            || self.timed_out(now)
            || !(given_back || self.retry_admitted())
        {
            self.state = State::Done;
            Action::Respond(f.status())
        } else {
            self.next_peer(now)
        };
        Step {
            action,
            freed: Some(Freed {
                peer,
                outcome,
                failure: Some(f),
            }),
        }
    }

    fn on_head(&mut self, h: Head, now: Duration) -> Step {
        if h.status == 101 && !self.policy.upgrade {
            return self.on_failure(Failure::new(Phase::ReadHead, Cause::Unexpected101), now);
        }
        let took = now.saturating_sub(self.try_started);
        if let Some(t) = self.tries.last_mut() {
            t.status = Some(h.status);
            t.header_time = Some(took);
        }
        // Over the retry budget the response is relayed as it is, as when tries run out.
        let moves_on = self.policy.next.lists_status(h.status)
            && self.pick.tries() > 1
            && self.policy.may_resend()
            && !self.timed_out(now)
            && self.retry_admitted();
        let Some(peer) = self.pick.current().filter(|_| moves_on) else {
            self.head = Some(h);
            self.state = State::Relaying;
            return Step::only(Action::Relay);
        };
        let failed = status_is_failure(h.status);
        if let Some(health) = self.health(peer) {
            health.note_response(h.status, micros(took));
            if failed {
                health.note_failure(if h.status == 429 {
                    FailKind::Http429
                } else {
                    FailKind::Http5xx
                });
            }
        }
        let outcome = self.pick.free(failed, None, now.as_secs());
        if let Some(t) = self.tries.last_mut() {
            t.response_time = Some(took);
        }
        let action = self.next_peer(now);
        Step {
            action,
            freed: Some(Freed {
                peer,
                outcome,
                failure: None,
            }),
        }
    }

    /// The client ended the request while its body was being streamed to the peer
    /// (`proxy_request_buffering off`: it closed, timed out or sent a bad chunk): the
    /// try ends as [`Self::abandon`]'s, with no failure of the peer and no retry, its
    /// connection closed (nginx's `ngx_http_upstream_finalize_request` with the client's
    /// status); outside the sending of the request nothing is freed.
    pub fn abandon_streaming(&mut self, now: Duration) -> Step {
        if self.state != State::Sending {
            return Step::only(Action::Finish { pool: false });
        }
        Step {
            action: Action::Finish { pool: false },
            ..self.abandon(now)
        }
    }

    /// nginx's `ngx_http_upstream_finalize_request` with 499: the try keeps no status
    /// (`$upstream_status` is `-`), its time is taken, and the peer is freed as a success
    /// (a client's close is not the peer's failure); the connection is not kept.
    fn abandon(&mut self, now: Duration) -> Step {
        let phase = match self.state {
            State::Connecting => Phase::Connect,
            State::Sending => Phase::SendRequest,
            _ => Phase::ReadHead,
        };
        self.state = State::Done;
        if let Some(t) = self.tries.last_mut() {
            t.response_time = Some(now.saturating_sub(self.try_started));
        }
        let peer = self.pick.current();
        let outcome = self.pick.free(false, None, now.as_secs());
        Step {
            action: Action::Abandon(phase),
            freed: peer.map(|peer| Freed {
                peer,
                outcome,
                failure: None,
            }),
        }
    }

    /// The response was relayed (`ok`: completely and cleanly, or the tunnel ended).
    fn finish(&mut self, ok: bool, now: Duration) -> Step {
        self.state = State::Done;
        let took = now.saturating_sub(self.try_started);
        let header_time = self.tries.last().and_then(|t| t.header_time);
        if let Some(t) = self.tries.last_mut() {
            t.response_time = Some(took);
        }
        let status = self.head.map_or(0, |h| h.status);
        let peer = self.pick.current();
        if let Some(health) = peer.and_then(|p| self.health(p)) {
            health.note_response(status, micros(took));
        }
        // nginx frees the peer when the request is finalised, after the body: errors while
        // relaying the body are not failures of the peer.
        let rt = self.policy.least_time_last_byte.map(|last_byte| {
            if last_byte {
                took
            } else {
                header_time.unwrap_or(took)
            }
        });
        let outcome = self.pick.free(false, rt, now.as_secs());
        let pool = ok && self.poolable();
        Step {
            action: Action::Finish { pool },
            freed: peer.map(|peer| Freed {
                peer,
                outcome,
                failure: None,
            }),
        }
    }

    /// Whether the connection may carry another request (nginx's keepalive module rules).
    fn poolable(&self) -> bool {
        let Some(h) = self.head else { return false };
        h.status != 101
            && !h.close
            && !h.until_close
            && !self.policy.http10
            && self.policy.keepalive > 0
            && self.requests + 1 < self.policy.keepalive_requests
    }
}
