//! nginx's `limit_req` and `limit_conn` (ngx_http_limit_req_module.c and
//! ngx_http_limit_conn_module.c, 1.22.1): the leaky-bucket arithmetic with injected time,
//! how many states nginx's slab fits in a zone, and the zones themselves as fixed-size
//! open-addressed tables of atomic slots that every worker thread updates without a lock.
//! Pure: no clock, no I/O; the caller passes `now` in milliseconds.

mod budget;
pub mod conn;
pub mod hash;
pub mod rate;
pub mod req;
pub mod req_check;
pub mod slab;

pub use conn::{ConnSlot, ConnTable};
pub use hash::KeyHash;
pub use rate::Rate;
pub use req::{Lookup, ReqTable};
pub use req_check::{check, check_each, Limit, Verdict};
