//! Random impairments applied as a packet leaves a link direction: loss (Bernoulli or
//! Gilbert–Elliott) and reordering (extra delay).
//!
//! Each model draws from its own named stream ([`DirStreams`]: `<direction>/loss`,
//! `<direction>/ge-state`, `<direction>/reorder`, `<direction>/forwarding`, each derived from the
//! scenario seed by its name), so enabling reordering does not change which packets are lost,
//! adding a new impairment changes no other's draws, and the Gilbert–Elliott state timeline does
//! not depend on the traffic at all: the same seed gives the same good/bad periods whether Reno
//! or CUBIC runs over the link.
use super::config::{GeState, LossConfig, ReorderConfig, SojournConfig};
use crate::core::rng::{Rng, RngStreams};
use crate::core::time::{from_ms_f64, from_secs_f64, Time, NEVER};
use rand::distributions::{Bernoulli, Distribution};
use rand::Rng as _;

/// The independent random streams of one link direction's impairments, each named
/// `<direction>/<impairment>` (e.g. `link/lte-a/forward/loss`) and derived from the scenario
/// seed by that name alone ([`RngStreams::stream`]). A new impairment takes a new name: no
/// other stream's draws change.
pub struct DirStreams {
    pub loss: Rng,
    pub ge_state: Rng,
    pub reorder: Rng,
    /// Loss of packets forwarded at handovers.
    pub forwarding: Rng,
}

impl DirStreams {
    /// The streams of direction `dir` (the simulator and the emulator name a link's directions
    /// `link/<name>/forward` and `link/<name>/reverse`).
    pub fn named(rngs: &RngStreams, dir: &str) -> Self {
        let s = |what: &str| rngs.stream(&format!("{dir}/{what}"));
        DirStreams {
            loss: s("loss"),
            ge_state: s("ge-state"),
            reorder: s("reorder"),
            forwarding: s("forwarding"),
        }
    }
}

/// One draw of a sojourn time (at least 1 ns) from a checked configuration.
pub(crate) fn draw_sojourn(c: &SojournConfig, rng: &mut Rng) -> Time {
    Sojourn::from_config(c).draw(rng)
}

/// A Bernoulli distribution from a checked probability (clamped defensively; NaN → 0).
fn bern(p: f64) -> Bernoulli {
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    Bernoulli::new(p).unwrap_or_else(|_| Bernoulli::new(0.0).expect("0 is a valid probability"))
}

#[derive(Clone, Debug)]
enum Sojourn {
    Deterministic(f64),
    Exponential(f64),
    Uniform(f64, f64),
}

impl Sojourn {
    fn from_config(c: &SojournConfig) -> Self {
        match *c {
            SojournConfig::Deterministic { mean_s } => Sojourn::Deterministic(mean_s),
            SojournConfig::Exponential { mean_s } => Sojourn::Exponential(mean_s),
            SojournConfig::Uniform { min_s, max_s } => Sojourn::Uniform(min_s, max_s),
        }
    }

    /// A sojourn in ns, at least 1 ns so the state process always moves forward.
    fn draw(&self, rng: &mut Rng) -> Time {
        let s = match *self {
            Sojourn::Deterministic(m) => m,
            // Inverse CDF; 1 − U lies in (0, 1], so ln is finite.
            Sojourn::Exponential(m) => -m * (1.0 - rng.gen::<f64>()).ln(),
            Sojourn::Uniform(a, b) => a + (b - a) * rng.gen::<f64>(),
        };
        if s.is_finite() && s > 0.0 {
            from_secs_f64(s).max(1)
        } else {
            1
        }
    }
}

/// Gilbert–Elliott channel with time-based states (E. N. Gilbert, "Capacity of a
/// burst-noise channel", Bell Syst. Tech. J. 39, 1960; E. O. Elliott, "Estimates of error
/// rates for codes on burst-noise channels", BSTJ 42, 1963). Deviation from the papers'
/// per-symbol Markov chain: the state changes in continuous simulated time after a
/// sojourn drawn from a configurable distribution (exponential sojourns give the
/// continuous-time Markov version), so bad periods are fixed in time rather than in
/// packet count. The state process starts at time 0 in `start`.
#[derive(Clone, Debug)]
pub(crate) struct GilbertElliott {
    bad: bool,
    next_switch: Time,
    good_s: Sojourn,
    bad_s: Sojourn,
    p_good: Bernoulli,
    p_bad: Bernoulli,
    state_rng: Rng,
}

impl GilbertElliott {
    /// Advances the state process to `t` and tells whether it is bad at `t`
    /// (a switch exactly at `t` has happened).
    fn bad_at(&mut self, t: Time) -> bool {
        while self.next_switch <= t {
            self.bad = !self.bad;
            let d = if self.bad {
                self.bad_s.draw(&mut self.state_rng)
            } else {
                self.good_s.draw(&mut self.state_rng)
            };
            self.next_switch = self.next_switch.saturating_add(d);
            if self.next_switch == NEVER {
                break;
            }
        }
        self.bad
    }
}

#[derive(Clone, Debug)]
pub(crate) enum LossModel {
    None,
    Bernoulli(Bernoulli, Rng),
    Ge(Box<GilbertElliott>, Rng),
}

impl LossModel {
    pub fn new(c: Option<&LossConfig>, loss_rng: Rng, mut state_rng: Rng) -> Self {
        match c {
            None => LossModel::None,
            Some(LossConfig::Bernoulli { p }) => {
                if *p > 0.0 {
                    LossModel::Bernoulli(bern(*p), loss_rng)
                } else {
                    LossModel::None
                }
            }
            Some(LossConfig::GilbertElliott {
                p_good,
                p_bad,
                start,
                good,
                bad,
            }) => {
                let good_s = Sojourn::from_config(good);
                let bad_s = Sojourn::from_config(bad);
                let is_bad = *start == GeState::Bad;
                let first = if is_bad {
                    bad_s.draw(&mut state_rng)
                } else {
                    good_s.draw(&mut state_rng)
                };
                LossModel::Ge(
                    Box::new(GilbertElliott {
                        bad: is_bad,
                        next_switch: first,
                        good_s,
                        bad_s,
                        p_good: bern(*p_good),
                        p_bad: bern(*p_bad),
                        state_rng,
                    }),
                    loss_rng,
                )
            }
        }
    }

    /// Whether a packet leaving at `t` is lost. `t` must not decrease between calls.
    #[inline]
    pub fn lost(&mut self, t: Time) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli(d, rng) => d.sample(rng),
            LossModel::Ge(ge, rng) => {
                let d = if ge.bad_at(t) { ge.p_bad } else { ge.p_good };
                d.sample(rng)
            }
        }
    }

    /// Whether the Gilbert–Elliott channel is bad at `t` (false for other models).
    /// Advances the state process, so `t` must not decrease between calls.
    pub fn is_bad_at(&mut self, t: Time) -> bool {
        match self {
            LossModel::Ge(ge, _) => ge.bad_at(t),
            _ => false,
        }
    }
}

/// With probability `p` a packet gets `extra` ns of additional delay.
#[derive(Clone, Debug)]
pub(crate) struct Reorder {
    d: Bernoulli,
    extra: Time,
    rng: Rng,
}

impl Reorder {
    pub fn new(c: Option<&ReorderConfig>, rng: Rng) -> Option<Self> {
        let c = c?;
        if c.p > 0.0 && c.extra_delay_ms > 0.0 {
            Some(Reorder {
                d: bern(c.p),
                extra: from_ms_f64(c.extra_delay_ms),
                rng,
            })
        } else {
            None
        }
    }

    /// Extra delay for the next packet (0 for most).
    #[inline]
    pub fn extra(&mut self) -> Time {
        if self.d.sample(&mut self.rng) {
            self.extra
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each impairment's stream depends on the seed and its own name only: another impairment
    /// added beside it (a new name) cannot shift its draws, unlike sub-streams derived in order.
    #[test]
    fn streams_are_named_not_positional() {
        let rngs = RngStreams::new(9);
        let mut d = DirStreams::named(&rngs, "link/x/forward");
        let mut direct = rngs.stream("link/x/forward/loss");
        let a: Vec<u64> = (0..4).map(|_| d.loss.gen()).collect();
        let b: Vec<u64> = (0..4).map(|_| direct.gen()).collect();
        assert_eq!(a, b);
        let mut other = DirStreams::named(&rngs, "link/x/reverse");
        assert_ne!(a[0], other.loss.gen::<u64>());
        assert_ne!(d.reorder.gen::<u64>(), d.forwarding.gen::<u64>());
    }
}
