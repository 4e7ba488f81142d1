//! Handoffs of a mobile host between base stations, and the schemes that keep TCP from taking
//! them for congestion (P3: Explicit Handoff Notification, and its rivals).
//!
//! Model (P3 §3, Fig. 1): fixed host → wired hop → base station → wireless hop → mobile host.
//! A handoff moves the mobile host from the serving base station to the next one; while it lasts
//! the wireless hop delivers nothing toward the mobile host (`[[handoffs]] link`, forward
//! direction), while the mobile host's own messages already reach the new base station (it heard
//! its beacon: that is how the handoff starts, P3 Fig. 1). Both base stations sit behind the same
//! wired hop and radio parameters, so one path stands for the old and the new one; the node
//! between the hops may hold a `base-station` element that takes part (answers window probes for
//! a greeted mobile host, or zeroes the window for BUFFER+FREEZE).
//!
//! What happens to packets at the old base station is a choice (`queued`): `lost` (the old base
//! station keeps nothing: what was queued or arrives during the handoff is dropped) or `forward`
//! (it holds them and the new one sends them after the handoff, `forward_delay_ms` later).
//!
//! Timing (`pattern`): P3's deterministic cycle (good 10 s, handoff 4 s, repeating), random
//! sojourns, a list, or the handovers of an `[hst]` train on this link.
//!
//! The schemes (`flows[].handoff.scheme`), each a reaction of the mobile host (the data
//! receiver) and, for EHN, of the fixed host (`tcp::sender::TcpSender::on_ehn`):
//! - `ehn` (P3 §3): at handoff start a Greet to the new base station and an EHN (zero window +
//!   the handoff's id) to the fixed host, which freezes in persist mode; at the end an ACK of
//!   everything received that reopens the window (`resume_copies` of it); the fixed host resumes
//!   from that point with its pre-handoff window.
//! - `freeze-tcp` (Goff et al., INFOCOM 2000): `warning_ms` before a predicted handoff the
//!   receiver advertises a zero window (unmodified sender); after it, three ACKs with the window
//!   reopened.
//! - `fr-after-handoff` (Caceres & Iftode, IEEE JSAC 13(5), 1995): at handoff end the receiver
//!   sends three duplicate ACKs so the sender fast-retransmits instead of waiting for its
//!   backed-off timer.
//! - BUFFER+FREEZE (as P3 §2 describes Chan et al.): a property of the base station
//!   (`element = { kind = "base-station", buffer_freeze = true }`) with `queued = "forward"`.
pub mod driver;
pub mod predict;
pub mod report;

use crate::core::rng::RngStreams;
use crate::core::time::{from_ms_f64, from_secs_f64, Time, NS_PER_MS};
use crate::error::{fmt_num, ConfigError, Errors};
use crate::link::capacity::{Forwarding, Outage, OutageQueued};
use crate::link::config::SojournConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[[handoffs]]`: the handoffs of the mobile host behind one radio link.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffConfig {
    /// The radio link between the base stations and the mobile host (its forward direction runs
    /// toward the mobile host).
    pub link: String,
    /// When handoffs happen.
    pub pattern: HandoffPattern,
    /// What the old base station does with packets queued or arriving during a handoff:
    /// "lost" (default) or "forward" (sent by the new base station after the handoff).
    #[serde(default)]
    pub queued: HandoffQueued,
    /// `forward`: delay after the handoff's end before forwarded packets go out, ms, in
    /// [0, 10000] (default 10).
    #[serde(default = "default_forward_delay")]
    pub forward_delay_ms: f64,
}

fn default_forward_delay() -> f64 {
    10.0
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HandoffQueued {
    #[default]
    Lost,
    Forward,
}

/// When handoffs happen.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum HandoffPattern {
    /// P3 §4.1: `good_s` of normal service, then a handoff of `handoff_s`, repeating from t = 0.
    Deterministic {
        /// Time between handoffs, s, in (0, 86400].
        good_s: f64,
        /// Handoff duration, s, in (0, 3600].
        handoff_s: f64,
    },
    /// Good periods and handoffs of random length, alternating from t = 0 (good first), drawn
    /// from the stream `handoff/<link>`.
    Random {
        good: SojournConfig,
        handoff: SojournConfig,
    },
    /// Handoffs at given times.
    List { intervals: Vec<HandoffInterval> },
    /// The handovers of the `[hst]` train on this link (the link must be one of `hst.links`;
    /// the train already interrupts it).
    Train {},
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffInterval {
    pub start_s: f64,
    pub duration_s: f64,
}

/// `flows[].handoff`: how a single-path TCP flow reacts to the handoffs of the link its path
/// crosses.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowHandoffConfig {
    /// `none`, `ehn`, `freeze-tcp` or `fr-after-handoff` (see the module docs).
    pub scheme: HandoffScheme,
    /// freeze-tcp with `predict = "schedule"`: how long before the handoff the zero window is
    /// advertised, ms, in [0, 60000] (default 300, about one RTT of P3's topology).
    #[serde(default = "default_warning")]
    pub warning_ms: f64,
    /// ehn: copies of the resume ACK sent at handoff end, in [1, 10] (default 1).
    #[serde(default = "one")]
    pub resume_copies: u32,
    /// ehn: the sender's longest freeze before it resumes as plain TCP, s, in [0.1, 600]
    /// (default 10).
    #[serde(default = "default_max_freeze")]
    pub max_freeze_s: f64,
    /// Probability that each handoff message (EHN, Greet, ZWA, resume or duplicate ACKs) is lost
    /// on its way, in [0, 1] (default 0); drawn from `flow/<name>/handoff`.
    #[serde(default)]
    pub message_loss: f64,
    /// Messages that are always lost (tests of the failure cases): any of "ehn", "greet",
    /// "resume".
    #[serde(default)]
    pub lose: Vec<String>,
    /// ehn: the EHN leaves this long after the handoff starts, ms, in [0, 3600000] (default 0;
    /// tests of a late EHN).
    #[serde(default)]
    pub ehn_delay_ms: f64,
    /// When the mobile host acts (ehn, freeze-tcp): "schedule" (default: at the true handoff
    /// times) or "table" (on a train: from the `[hst] table` handover ranges and the GPS fixes,
    /// before the interruption; see `handoff::predict`).
    #[serde(default)]
    pub predict: HandoffPredict,
}

/// `flows[].handoff.predict`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HandoffPredict {
    #[default]
    Schedule,
    Table,
}

fn default_warning() -> f64 {
    300.0
}
fn one() -> u32 {
    1
}
fn default_max_freeze() -> f64 {
    10.0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HandoffScheme {
    None,
    Ehn,
    FreezeTcp,
    FrAfterHandoff,
}

/// Message names accepted in `lose`.
pub const MESSAGES: &[&str] = &["ehn", "greet", "resume"];

impl HandoffConfig {
    pub fn validate(&self, prefix: &str, link_names: &[String], train_links: &[String], errs: &mut Errors) {
        if !link_names.contains(&self.link) {
            errs.push(ConfigError::new(
                format!("{prefix}.link"),
                &self.link,
                "no link with this name",
            ));
        }
        let on_train = train_links.contains(&self.link);
        match &self.pattern {
            HandoffPattern::Train {} if !on_train => {
                errs.push(ConfigError::new(
                    format!("{prefix}.pattern.kind"),
                    "train",
                    "the link must follow a train operator (`[hst] links`)",
                ));
            }
            HandoffPattern::Train {} => {}
            _ if on_train => {
                errs.push(ConfigError::new(
                    format!("{prefix}.link"),
                    &self.link,
                    "follows the train's handovers already (`[hst] links`): use pattern = { kind = \"train\" }",
                ));
            }
            HandoffPattern::Deterministic { good_s, handoff_s } => {
                if !(good_s.is_finite() && *good_s > 0.0 && *good_s <= 86400.0) {
                    errs.push(ConfigError::new(
                        format!("{prefix}.pattern.good_s"),
                        fmt_num(*good_s),
                        "must be in (0, 86400]",
                    ));
                }
                if !(handoff_s.is_finite() && *handoff_s > 0.0 && *handoff_s <= 3600.0) {
                    errs.push(ConfigError::new(
                        format!("{prefix}.pattern.handoff_s"),
                        fmt_num(*handoff_s),
                        "must be in (0, 3600]",
                    ));
                }
            }
            HandoffPattern::Random { good, handoff } => {
                crate::link::config::check_sojourn(&format!("{prefix}.pattern.good"), good, errs);
                crate::link::config::check_sojourn(&format!("{prefix}.pattern.handoff"), handoff, errs);
            }
            HandoffPattern::List { intervals } => {
                let mut prev_end = f64::NEG_INFINITY;
                for (i, iv) in intervals.iter().enumerate() {
                    let f = format!("{prefix}.pattern.intervals[{i}]");
                    errs.range(format!("{f}.start_s"), iv.start_s, 0.0, 86400.0);
                    if !(iv.duration_s.is_finite() && iv.duration_s > 0.0 && iv.duration_s <= 3600.0) {
                        errs.push(ConfigError::new(
                            format!("{f}.duration_s"),
                            fmt_num(iv.duration_s),
                            "must be in (0, 3600]",
                        ));
                    }
                    if iv.start_s < prev_end {
                        errs.push(ConfigError::new(
                            format!("{f}.start_s"),
                            fmt_num(iv.start_s),
                            "must not start before the previous handoff ends (sorted, not overlapping)",
                        ));
                    }
                    prev_end = iv.start_s + iv.duration_s;
                }
            }
        }
        errs.range(
            format!("{prefix}.forward_delay_ms"),
            self.forward_delay_ms,
            0.0,
            10_000.0,
        );
    }

    /// The handoff intervals `[start, end)` in `[0, duration)` for this run (`Train`: none here;
    /// the plan takes the train's).
    pub fn intervals(&self, rngs: &RngStreams, duration: Time) -> Vec<(Time, Time)> {
        let mut out = Vec::new();
        match &self.pattern {
            HandoffPattern::Deterministic { good_s, handoff_s } => {
                let (g, h) = (from_secs_f64(*good_s).max(1), from_secs_f64(*handoff_s).max(1));
                let mut t = g;
                while t < duration {
                    out.push((t, (t + h).min(duration)));
                    t += h + g;
                }
            }
            HandoffPattern::Random { good, handoff } => {
                let mut rng = rngs.stream(&format!("handoff/{}", self.link));
                let mut t = crate::link::loss::draw_sojourn(good, &mut rng);
                while t < duration {
                    let end = t.saturating_add(crate::link::loss::draw_sojourn(handoff, &mut rng));
                    out.push((t, end.min(duration)));
                    t = end.saturating_add(crate::link::loss::draw_sojourn(good, &mut rng));
                }
            }
            HandoffPattern::List { intervals } => {
                for iv in intervals {
                    let s = from_secs_f64(iv.start_s);
                    if s < duration {
                        out.push((s, (s + from_secs_f64(iv.duration_s)).min(duration)));
                    }
                }
            }
            HandoffPattern::Train {} => {}
        }
        out.retain(|&(s, e)| e > s);
        out
    }

    /// The link direction's outages (and forwarding) that model the handoffs.
    pub fn outages(&self, intervals: &[(Time, Time)]) -> (Vec<Outage>, Vec<Forwarding>) {
        match self.queued {
            HandoffQueued::Lost => (
                intervals
                    .iter()
                    .map(|&(start, end)| Outage {
                        start,
                        end,
                        queued: OutageQueued::Drop,
                    })
                    .collect(),
                Vec::new(),
            ),
            HandoffQueued::Forward => {
                let delay = from_ms_f64(self.forward_delay_ms);
                let outages = intervals
                    .iter()
                    .map(|&(start, end)| Outage {
                        start,
                        end,
                        queued: OutageQueued::Hold,
                    })
                    .collect();
                let fwd = intervals
                    .iter()
                    .map(|&(start, end)| Forwarding {
                        start,
                        end,
                        extra_delay: delay,
                        loss_prob: 0.0,
                        queued_loss: 0.0,
                        buffer_bytes: u64::MAX,
                    })
                    .collect();
                (outages, fwd)
            }
        }
    }
}

impl FlowHandoffConfig {
    pub fn validate(&self, prefix: &str, errs: &mut Errors) {
        errs.range(format!("{prefix}.warning_ms"), self.warning_ms, 0.0, 60_000.0);
        errs.range(format!("{prefix}.resume_copies"), self.resume_copies as f64, 1.0, 10.0);
        errs.range(format!("{prefix}.max_freeze_s"), self.max_freeze_s, 0.1, 600.0);
        errs.range(format!("{prefix}.message_loss"), self.message_loss, 0.0, 1.0);
        errs.range(format!("{prefix}.ehn_delay_ms"), self.ehn_delay_ms, 0.0, 3_600_000.0);
        for (i, m) in self.lose.iter().enumerate() {
            if !MESSAGES.contains(&m.as_str()) {
                errs.push(ConfigError::new(
                    format!("{prefix}.lose[{i}]"),
                    m,
                    format!("unknown message; allowed: {}", MESSAGES.join(", ")),
                ));
            }
        }
    }
}

/// The handoffs of one link for one run.
#[derive(Clone, Debug)]
pub struct HandoffPlan {
    /// Index of the link in the plan.
    pub link: usize,
    pub link_name: String,
    /// `[start, end)`, sorted.
    pub intervals: Vec<(Time, Time)>,
}

/// What a flow's receiver does at its handoffs (see the module docs), resolved.
#[derive(Clone, Debug)]
pub struct FlowHandoffPlan {
    pub scheme: HandoffScheme,
    pub warning: Time,
    pub resume_copies: u32,
    pub message_loss: f64,
    pub lose: Vec<String>,
    pub ehn_delay: Time,
    /// The handoffs on the flow's path (true times).
    pub intervals: Vec<(Time, Time)>,
    /// When the mobile host acts on them (`predict`), sorted and disjoint.
    pub episodes: Vec<predict::Episode>,
    /// `predict = "table"`: how well the table predicted this run's handoffs.
    pub prediction: Option<predict::PredictionStats>,
}

impl FlowHandoffConfig {
    /// The plan at the true handoff times (`predict = "schedule"`); the caller replaces the
    /// episodes for a table prediction.
    pub fn plan(&self, intervals: Vec<(Time, Time)>) -> FlowHandoffPlan {
        let episodes = predict::from_schedule(&intervals, from_ms_f64(self.warning_ms), from_ms_f64(self.ehn_delay_ms));
        FlowHandoffPlan {
            episodes,
            prediction: None,
            scheme: self.scheme,
            warning: from_ms_f64(self.warning_ms),
            resume_copies: self.resume_copies,
            message_loss: self.message_loss,
            lose: self.lose.clone(),
            ehn_delay: from_ms_f64(self.ehn_delay_ms),
            intervals,
        }
    }

    pub fn max_freeze(&self) -> Time {
        from_secs_f64(self.max_freeze_s).max(100 * NS_PER_MS)
    }
}
