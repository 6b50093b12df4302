//! placeholder (lead: temporary re-export so the proxy compiles; replace freely)
pub mod model;
pub use model::*;
