//! mobipath's packet-level simulator: deterministic, integer-nanosecond time,
//! single-path TCP today and multipath TCP on the same core.
//!
//! Layout (ARCHITECTURE.md at the repository root has the map): [`core`] (time, events, RNG
//! streams) ← [`link`], [`tcp`], [`mptcp`] (protocol state machines that never read a clock) ←
//! [`endpoint`] (one interface for every transport's ends), [`element`] (behaviour at nodes) ←
//! [`engine`] (the event loop that owns time and runs a [`plan`]) ← [`scenario`] (TOML input,
//! checked) → [`plan`] (typed, resolved) and [`api`]. [`hst`] and [`radio`] are P0's train;
//! [`cell`] is the LTE cell element (P4).
pub mod api;
pub mod capture;
pub mod cell;
pub mod core;
pub mod element;
pub mod endpoint;
pub mod engine;
pub mod error;
pub mod handoff;
pub mod hst;
pub mod link;
pub mod metrics;
pub mod mptcp;
pub mod packet;
pub mod plan;
pub mod radio;
pub mod scenario;
pub mod tcp;

pub use error::ConfigError;
