//! mobipath's packet-level simulator: deterministic, integer-nanosecond time,
//! single-path TCP today and multipath TCP on the same core.
//!
//! Layout: [`core`] (time, events, RNG streams) ← [`link`] and [`tcp`] (protocol
//! state machines that never read a clock) ← [`sim`] (the event loop that owns
//! time and wires endpoints to links) ← [`scenario`] (TOML input) and [`api`].
pub mod api;
pub mod core;
pub mod error;
pub mod hst;
pub mod link;
pub mod metrics;
pub mod mptcp;
pub mod packet;
pub mod radio;
pub mod scenario;
pub mod sim;
pub mod tcp;

pub use error::ConfigError;
