//! Upstream peers and nginx's peer machinery: the topology of groups and peers, smooth
//! weighted round robin, passive failure accounting (`max_fails` / `fail_timeout`), backups,
//! and the health board shared by every worker.
//!
//! Pure: no sockets, no clock, no randomness. Callers pass `now` (whole seconds on a
//! monotonic clock, the granularity nginx's `ngx_time()` uses for failure accounting).

mod board;
mod rr;
mod topology;
mod tried;

pub use board::{Board, PeerHealth};
pub use rr::{free, select, Attempt, FreeOutcome, Selection, WorkerPeers};
pub use topology::{PeerId, PeerList, PeerSpec, Topology, Upstream, UpstreamId, UpstreamSpec};
pub use tried::Tried;
