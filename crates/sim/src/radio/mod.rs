//! High-speed-train cellular model (P0): train mobility and GPS, operators'
//! sites with path loss and environment shadowing, A3/X2 handovers, and their effect on links.
//!
//! - [`config`]: serde/schemars configuration with defaults and validation;
//! - [`mobility`]: track, speed profile, GPS sampler;
//! - [`layout`]: sites, path loss, shadowing maps ([`layout::RadioMap`]);
//! - [`handover`]: A3 + time-to-trigger, X2 execution, [`handover::HandoverEvent`]s;
//! - [`signalling`]: the signalling execution model (RRC/X2 steps, RACH, radio-link failure);
//! - [`effect`]: outages, delay spikes and capacity for the simulator's links.
//!
//! Randomness: the environment (shadowing) comes from `environment_seed`, the run-to-run terms and
//! GPS errors from the run's seed, each through named [`RngStreams`](crate::core::rng::RngStreams).
//! Depends only on `core` and `error`.
pub mod config;
pub mod effect;
pub mod handover;
pub mod layout;
pub mod mobility;
pub mod nr;
pub mod signalling;

pub use config::HstConfig;
pub use effect::{link_effects, DelaySpike, LinkEffects, Outage};
pub use handover::{simulate_handovers, simultaneous_handovers, HandoverEvent, HstRun};
pub use mobility::{gps_samples, GpsSampler, Mobility};

use crate::core::rng::Rng;
use rand::Rng as _;

/// One standard normal draw (Box–Muller; `rand_distr` is not a dependency). Uses two uniforms
/// per draw so the stream's consumption is fixed, which keeps runs reproducible.
pub(crate) fn std_normal(rng: &mut Rng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]: ln(0) is undefined
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
