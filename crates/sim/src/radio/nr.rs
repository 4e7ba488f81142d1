//! NR handover types on the train model: hard, conditional (CHO) and dual active protocol stack
//! (DAPS) handovers, the target's check at random access, and re-establishment after a failure.
//!
//! Rules and their sources (3GPP Rel-16/17; simplifications are listed in the documentation's
//! NR handover page):
//! - **Hard** (TS 38.300 §9.2.3.2.1, Figure 9.2.3.2.1-1): the source decides on the measurement
//!   report, prepares the target over Xn and sends the `RRCReconfiguration` with
//!   `reconfigurationWithSync`; the UE leaves the source when it has it and is served again when
//!   the random access on the target completes (TS 38.331 §5.3.5.5.2). With the fixed model that is
//!   `interruption_ms`; with the signalling model the steps of `signalling.rs`.
//! - **CHO** (TS 38.300 §9.2.3.4; TS 38.331 §5.3.5.13 conditional reconfiguration): the source
//!   prepares the target when an earlier condition holds (`cho.prepare_offset_db` below the A3
//!   event) and sends the conditional configuration at once; the UE executes on its own when the
//!   execution condition (the A3 event with its time to trigger) holds: no measurement report and
//!   no command are sent at that moment, so a source that fades in those ~20 ms cannot lose the
//!   handover. The access itself is a hard handover's (same interruption). A target that was not
//!   prepared in time (or whose conditional configuration was lost on a source below Qout) is
//!   handed over as a hard handover.
//! - **DAPS** (TS 38.300 §9.2.3.1, the DAPS paragraph, and §9.2.3.2; TS 38.331 §5.3.5.5.2): the
//!   UE keeps receiving from the source until it releases it after the random access to the target
//!   succeeds, so the link carries the flow throughout; only `daps.interruption_ms` (default 0)
//!   is left at the release. If the access fails (every preamble, or a target below Qout), the UE
//!   falls back to the source when the source is still in sync (TS 38.331 §5.3.5.8.3, T304
//!   expiry with DAPS): outcome `fallback`, no interruption, the UE stays on the source. A
//!   radio-link failure before the command is the same as for a hard handover.
//! - **Failure at the target** (signalling model, any declared type): the target's SINR below
//!   `qout_db` when the access would complete (TS 38.133 §8.1: Qout) fails the access (T304
//!   expiry, TS 38.331 §5.3.5.8.3): a hard or conditional handover then ends in re-establishment
//!   (TS 38.331 §5.3.7) after the UE has spent its preambles.
//! - **Re-establishment** after a radio-link failure (N310 out-of-sync indications and T310,
//!   TS 38.331 §5.3.10.1–§5.3.10.3; evaluation periods TS 38.133 §8.1.2) or a failed handover:
//!   `reestablishment_ms` plus a wait for the first PRACH occasion of the chosen cell, uniform in
//!   [0, `prach_period_ms`), drawn from the stream `radio/handover/reestablishment/<op>` so every
//!   other draw stays as it was.
use super::config::{HandoverConfig, HandoverModel, HandoverType, SignallingConfig};
use super::signalling::{self, Execution, HandoverOutcome};
use crate::core::rng::Rng;
use crate::core::time::{from_ms_f64, Time};
use rand::Rng as _;

/// One handover's timing as a typed execution gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypedExecution {
    pub x: Execution,
    /// The link's delivery stops at `outage_start` and resumes at `x.end` (`outage_start ==
    /// x.end`: no interruption).
    pub outage_start: Time,
    /// The re-establishment part of the interruption (0 without a failure).
    pub reestablishment: Time,
}

/// The radio conditions one execution looks at.
pub struct Radio<'a> {
    /// The serving (source) cell's SINR at a time, dB.
    pub source_sinr_db: &'a dyn Fn(Time) -> f64,
    /// The target cell's SINR at a time, dB.
    pub target_sinr_db: &'a dyn Fn(Time) -> f64,
}

/// Executes one handover of type `kind` triggered (execution condition) at `trigger`.
/// `prepared_at` is when a CHO target's preparation condition fired (None: not prepared).
/// `rng` is the signalling model's stream (same draws as the untyped model), `re_rng` the
/// re-establishment stream.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    cfg: &HandoverConfig,
    kind: HandoverType,
    trigger: Time,
    serving_since: Time,
    prepared_at: Option<Time>,
    radio: &Radio,
    rng: &mut Rng,
    re_rng: &mut Rng,
) -> TypedExecution {
    let c = &cfg.signalling;
    if cfg.model == HandoverModel::Fixed {
        // No radio checks in the fixed model: every type succeeds; DAPS leaves its residual
        // interruption only.
        let end = trigger + from_ms_f64(cfg.interruption_ms);
        let outage_start = match kind {
            HandoverType::Daps => end.saturating_sub(from_ms_f64(cfg.daps.interruption_ms)).max(trigger),
            _ => trigger,
        };
        let x = Execution {
            start: trigger,
            end,
            rach_attempts: 1,
            outcome: HandoverOutcome::X2,
        };
        return TypedExecution {
            x,
            outage_start,
            reestablishment: 0,
        };
    }
    let prep = signalling::preparation(c);
    let x = match (kind, prepared_at) {
        (HandoverType::Cho, Some(tp)) if tp + prep <= trigger && !command_lost(c, tp, prep, radio) => {
            // The configuration is at the UE already: execution at the condition, no report and
            // no command now (the same draws as a hard handover). Nothing has to reach the UE
            // over the source any more, so only a radio-link failure declared before the
            // execution (N310 + T310 out of sync) stops it: the ideal-RRC check.
            let now = SignallingConfig {
                rrc: super::config::RrcTransport::Ideal,
                measurement_report_ms: 0.0,
                decision_ms: 0.0,
                x2_delay_ms: 0.0,
                admission_ms: 0.0,
                command_ms: 0.0,
                ..c.clone()
            };
            signalling::execute(&now, trigger, serving_since, radio.source_sinr_db, rng)
        }
        _ => signalling::execute(c, trigger, serving_since, radio.source_sinr_db, rng),
    };
    let wait = re_rng.gen::<f64>() * c.prach_period_ms;
    let reest = from_ms_f64(c.reestablishment_ms + wait);
    let target_fails = x.outcome == HandoverOutcome::X2 && (radio.target_sinr_db)(x.end) < c.qout_db;
    // When the UE gives up on the target: every preamble spent.
    let spent = |x: &Execution| {
        x.start + from_ms_f64(c.rrc_processing_ms + c.max_preambles as f64 * (c.rach_ms + c.rach_retry_ms))
    };
    match x.outcome {
        HandoverOutcome::RadioLinkFailure => TypedExecution {
            x: Execution {
                end: x.end + from_ms_f64(wait),
                ..x
            },
            outage_start: x.start,
            reestablishment: reest,
        },
        HandoverOutcome::X2 if !target_fails => {
            let outage_start = match kind {
                HandoverType::Daps => x.end.saturating_sub(from_ms_f64(cfg.daps.interruption_ms)).max(x.start),
                _ => x.start,
            };
            TypedExecution {
                x,
                outage_start,
                reestablishment: 0,
            }
        }
        _ => {
            // A failed access: every preamble spent (HandoverFailure already counts them).
            let lost = match x.outcome {
                HandoverOutcome::HandoverFailure => x.end - from_ms_f64(c.reestablishment_ms),
                _ => spent(&x),
            };
            let attempts = match x.outcome {
                HandoverOutcome::HandoverFailure => x.rach_attempts,
                _ => c.max_preambles,
            };
            if kind == HandoverType::Daps && (radio.source_sinr_db)(lost) >= c.qout_db {
                return TypedExecution {
                    x: Execution {
                        start: x.start,
                        end: lost,
                        rach_attempts: attempts,
                        outcome: HandoverOutcome::Fallback,
                    },
                    outage_start: lost,
                    reestablishment: 0,
                };
            }
            // A DAPS UE kept the source until the access failed; the others left it at the command.
            let outage_start = if kind == HandoverType::Daps { lost } else { x.start };
            TypedExecution {
                x: Execution {
                    start: x.start,
                    end: lost + reest,
                    rach_attempts: attempts,
                    outcome: HandoverOutcome::HandoverFailure,
                },
                outage_start,
                reestablishment: reest,
            }
        }
    }
}

/// Whether the conditional configuration sent at `tp + prep` was lost: with `rrc = "radio"`, the
/// source below Qout at any millisecond between the preparation trigger and the command.
fn command_lost(c: &SignallingConfig, tp: Time, prep: Time, radio: &Radio) -> bool {
    if c.rrc != super::config::RrcTransport::Radio {
        return false;
    }
    let mut t = tp;
    while t <= tp + prep {
        if (radio.source_sinr_db)(t) < c.qout_db {
            return true;
        }
        t += crate::core::time::NS_PER_MS;
    }
    false
}

#[cfg(test)]
mod tests;
