//! Links: capacity (constant, schedule or trace), propagation delay, a drop-tail queue,
//! and impairments (random loss, reordering, outages) — one [`LinkDir`] per direction.
//!
//! - [`config`]: the `[[links]]` scenario entry ([`LinkConfig`]), its checks and its
//!   resolution into a [`LinkSpec`], which builds the two directions;
//! - [`trace`]: parsers for mahimahi and per-second Mbit/s capacity traces;
//! - [`capacity`]: static capacity timelines with outages ([`Timeline`]);
//! - `dir`: [`LinkDir`], the event-driven queue + transmitter + wire;
//! - `loss`: Bernoulli and Gilbert–Elliott loss, reordering.
//!
//! Depends only on `core` (time, RNG), `packet` and `error`. Semantics and the config
//! rules are summarised in `link/README.md`.
pub mod capacity;
pub mod config;
mod dir;
pub(crate) mod loss;
pub mod trace;

#[cfg(test)]
mod tests;

pub use capacity::{Capacity, Forwarding, Outage, OutageQueued, Timeline, OPPORTUNITY_BYTES};
pub use config::{
    DirSpec, ForwardingConfig, GeState, LinkConfig, LinkSpec, LossConfig, MissingPolicy, OutageConfig, QueueLimit,
    RateStep, ReorderConfig, ReverseConfig, SojournConfig, TokenBucket, TokenBucketConfig, TraceConfig,
};
pub use dir::{DropCause, ForwardingGap, LinkDir, LinkStats, Retransmission, Wire};
pub use loss::DirStreams;
