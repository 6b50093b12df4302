//! Upstream peers and nginx's peer machinery: the topology of groups and peers, the balancers
//! (round robin, `ip_hash`, `hash [consistent]`, `least_conn`, `random [two]`, `least_time`),
//! passive failure accounting (`max_fails` / `fail_timeout`), `max_conns`, backups, and the
//! health board shared by every worker.
//!
//! Pure: no sockets, no clock, no randomness source of its own, no allocation per pick, no
//! panic on any input. Callers pass `now` (whole seconds on a monotonic clock, the
//! granularity nginx's `ngx_time()` uses for failure accounting) and seed each worker's
//! generator.

mod attempt;
mod board;
pub mod budget;
mod chash;
mod check;
mod crc32;
pub mod exchange;
mod hash;
mod least;
mod random;
mod rr;
mod select;
pub mod sessions;
pub mod sid;
pub mod sticky;
mod topology;
mod tried;
mod worker;

#[cfg(test)]
mod testutil;

pub use attempt::{Attempt, Selection};
pub use board::{
    set_shard, set_shards, Board, FailKind, PeerHealth, StateChange, CHECKING, DOWN, RT_BUCKETS_US,
    UP,
};
pub use check::failed_out;
pub use select::{free, select, FreeOutcome, RequestKey};
pub use topology::{
    Balancer, PeerId, PeerList, PeerSpec, Topology, Upstream, UpstreamId, UpstreamSpec,
    SLOW_START_SCALE,
};
pub use tried::Tried;
pub use worker::{splitmix64, WorkerPeers};
