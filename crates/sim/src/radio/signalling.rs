//! The signalling handover model (`[hst.handover] model = "signalling"`): the interruption of an
//! X2 handover as the sum of its steps, or a radio-link failure when the source is already lost.
//!
//! Steps (TS 36.300 §10.1.2.1.1, Figure 10.1.2.1.1-1; ns-3 LENA `LteUeRrc`, `LteEnbRrc`,
//! `EpcX2`; defaults and their sources in docs/handover-model.md):
//! 1. A3 entering condition held for time-to-trigger (`handover.rs`): the *trigger*.
//! 2. Measurement report UE → source (`measurement_report_ms`); 3. handover decision
//!    (`decision_ms`); 4. X2 handover request (`x2_delay_ms`); 5. admission control
//!    (`admission_ms`); 6. X2 handover request acknowledge (`x2_delay_ms`); 7. RRC connection
//!    reconfiguration with mobilityControlInfo, source → UE (`command_ms`). The UE keeps
//!    receiving from the source until it has the command: the *detach* (`HandoverEvent::start`).
//! 8. Detach, UE processing (`rrc_processing_ms`), wait for a PRACH occasion (uniform in
//!    [0, `prach_period_ms`)); 9. dedicated preamble → RAR (`rach_ms`), each attempt failing with
//!    `rach_failure` and retried after `rach_retry_ms`, at most `max_preambles`; 11. RRC connection
//!    reconfiguration complete to the target (`complete_ms`): data flows again (`end`). The path
//!    switch (steps 12–18) is not an interruption: data reaching the source meanwhile is forwarded
//!    over X2-U (`forwarding_delay_ms`, `radio/effect.rs`).
//! - **Too-late handover** (`rrc = "radio"`): if the source's SINR falls below `qout_db` between
//!   the trigger and the command, the command is lost (TS 36.133 §7.6: Qout is 10 % PDCCH BLER).
//!   The UE is out of sync from that moment (the interruption's start), declares a radio-link
//!   failure after `n310` out-of-sync evaluations (`out_of_sync_ms` each) and T310 (`t310_ms`,
//!   TS 36.331 §5.3.11.3), and re-establishes on the strongest cell (`reestablishment_ms`,
//!   TS 36.331 §5.3.7). No X2 forwarding happens for it (ns-3: the source's UE context is
//!   dropped). With `rrc = "ideal"` (default, ns-3's) the command always arrives, so a
//!   radio-link failure needs the source to have been below Qout for the whole detection time
//!   (N310 evaluations + T310) before the command.
//! - **Handover failure**: `max_preambles` failed preambles (T304 expiry, TS 36.331 §5.3.5.6) also
//!   ends in re-establishment.
//!
//! Randomness: one seeded stream per operator (`radio/handover/signalling/<op>`), one draw of the
//! PRACH wait and one per preamble attempt per handover, so runs are reproducible.
use super::config::{RrcTransport, SignallingConfig};
use crate::core::rng::Rng;
use crate::core::time::{from_ms_f64, Time, NS_PER_MS};
use rand::Rng as _;

/// How a handover ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoverOutcome {
    /// An X2 handover (the fixed model's only kind).
    X2,
    /// The command was lost (source below Qout): radio-link failure and re-establishment.
    RadioLinkFailure,
    /// Every preamble failed: handover failure and re-establishment.
    HandoverFailure,
    /// A DAPS handover whose access failed while the source was still in sync: the UE stays on
    /// the source (`radio/nr.rs`).
    Fallback,
}

impl HandoverOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            HandoverOutcome::X2 => "x2",
            HandoverOutcome::RadioLinkFailure => "rlf",
            HandoverOutcome::HandoverFailure => "ho_failure",
            HandoverOutcome::Fallback => "fallback",
        }
    }

    /// Whether the source's buffer and the packets reaching it are lost (no X2 forwarding).
    pub fn lost_context(self) -> bool {
        matches!(
            self,
            HandoverOutcome::RadioLinkFailure | HandoverOutcome::HandoverFailure
        )
    }
}

/// The timing of one handover: `start` (detach or loss of sync), `end` (data flows via the
/// target), the preamble attempts and the outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Execution {
    pub start: Time,
    pub end: Time,
    pub rach_attempts: u32,
    pub outcome: HandoverOutcome,
}

/// Preparation time: trigger → handover command at the UE (steps 2–7).
pub fn preparation(c: &SignallingConfig) -> Time {
    from_ms_f64(c.measurement_report_ms + c.decision_ms + 2.0 * c.x2_delay_ms + c.admission_ms + c.command_ms)
}

/// Executes one handover triggered at `trigger` on a cell served since `serving_since`;
/// `source_sinr_db(t)` is the serving cell's SINR at time `t` (the train moves on meanwhile).
pub fn execute(
    c: &SignallingConfig,
    trigger: Time,
    serving_since: Time,
    source_sinr_db: impl Fn(Time) -> f64,
    rng: &mut Rng,
) -> Execution {
    let command = trigger + preparation(c);
    // Drawn before the radio-link check, so the stream's consumption does not depend on the SINR.
    let prach_wait = rng.gen::<f64>() * c.prach_period_ms;
    let mut attempts = 1;
    while attempts < c.max_preambles && rng.gen::<f64>() < c.rach_failure {
        attempts += 1;
    }
    let all_failed = attempts == c.max_preambles && rng.gen::<f64>() < c.rach_failure;
    let detect = from_ms_f64(c.n310 as f64 * c.out_of_sync_ms + c.t310_ms);
    let reestablish = |lost: Time| lost + detect + from_ms_f64(c.reestablishment_ms);
    let rlf = |start: Time| Execution {
        start,
        end: reestablish(start),
        rach_attempts: 0,
        outcome: HandoverOutcome::RadioLinkFailure,
    };
    match c.rrc {
        // The command is lost if the source is out of sync when it is sent (1 ms resolution).
        RrcTransport::Radio => {
            let mut t = trigger;
            while t <= command {
                if source_sinr_db(t) < c.qout_db {
                    return rlf(t);
                }
                t += NS_PER_MS;
            }
        }
        // Ideal RRC: only a source that stayed out of sync long enough for the failure to be
        // declared before the command arrives (every 10 ms over that span) fails the handover.
        RrcTransport::Ideal => {
            let from = command.saturating_sub(detect);
            let mut t = command;
            let mut out = true;
            while out && t >= from && t > 0 {
                out = source_sinr_db(t) < c.qout_db;
                t = t.saturating_sub(10 * NS_PER_MS);
            }
            if out && command >= detect && from >= serving_since {
                return rlf(from);
            }
        }
    }
    let rach = c.rrc_processing_ms + prach_wait + attempts as f64 * c.rach_ms + (attempts - 1) as f64 * c.rach_retry_ms;
    if all_failed {
        let lost = command + from_ms_f64(rach + c.rach_retry_ms);
        return Execution {
            start: command,
            end: lost + from_ms_f64(c.reestablishment_ms),
            rach_attempts: attempts,
            outcome: HandoverOutcome::HandoverFailure,
        };
    }
    Execution {
        start: command,
        end: command + from_ms_f64(rach + c.complete_ms),
        rach_attempts: attempts,
        outcome: HandoverOutcome::X2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rng::RngStreams;
    use crate::core::time::NS_PER_S;

    fn rng() -> Rng {
        RngStreams::new(1).stream("t")
    }

    #[test]
    fn interruption_is_the_sum_of_the_steps() {
        let c = SignallingConfig {
            rach_failure: 0.0,
            ..Default::default()
        };
        let mut r = rng();
        for _ in 0..100 {
            let e = execute(&c, 1_000 * NS_PER_MS, 0, |_| 10.0, &mut r);
            assert_eq!(e.outcome, HandoverOutcome::X2);
            assert_eq!(e.start, 1_000 * NS_PER_MS + preparation(&c));
            assert_eq!(preparation(&c), 20 * NS_PER_MS, "6 + 0 + 2·5 + 0 + 4 ms");
            let ms = (e.end - e.start) as f64 / 1e6;
            // 15 (RRC) + [0, 10) (PRACH wait) + 4 (RACH) + 6 (complete).
            assert!((25.0..35.0).contains(&ms), "{ms}");
            assert_eq!(e.rach_attempts, 1);
        }
    }

    #[test]
    fn failed_preambles_lengthen_the_interruption_or_fail_the_handover() {
        let c = SignallingConfig {
            rach_failure: 0.5,
            max_preambles: 3,
            ..Default::default()
        };
        let mut r = rng();
        let (mut retried, mut failed) = (0, 0);
        for _ in 0..400 {
            let e = execute(&c, 0, 0, |_| 10.0, &mut r);
            match e.outcome {
                HandoverOutcome::X2 if e.rach_attempts > 1 => {
                    retried += 1;
                    assert!(
                        e.end - e.start >= from_ms_f64(25.0 + 10.0),
                        "a retry costs rach_retry + rach"
                    );
                }
                HandoverOutcome::HandoverFailure => {
                    failed += 1;
                    assert!(e.end - e.start >= from_ms_f64(100.0), "re-establishment");
                }
                _ => {}
            }
        }
        assert!(retried > 100 && failed > 20 && failed < 100, "{retried} {failed}");
    }

    #[test]
    fn a_lost_source_is_a_radio_link_failure() {
        let c = SignallingConfig {
            rrc: RrcTransport::Radio,
            ..Default::default()
        };
        let e = execute(&c, 0, 0, |t| if t >= 7 * NS_PER_MS { -8.0 } else { 0.0 }, &mut rng());
        assert_eq!(e.outcome, HandoverOutcome::RadioLinkFailure);
        assert_eq!(e.start, 7 * NS_PER_MS);
        assert_eq!(e.end - e.start, from_ms_f64(6.0 * 200.0 + 1000.0 + 100.0));
        assert!(e.outcome.lost_context());
        // Ideal RRC: the command arrives; a failure needs 2.2 s below Qout before it.
        let ideal = SignallingConfig::default();
        let e = execute(
            &ideal,
            10 * NS_PER_S,
            0,
            |t| if t >= 9 * NS_PER_S { -8.0 } else { 0.0 },
            &mut rng(),
        );
        assert_eq!(e.outcome, HandoverOutcome::X2);
        let e = execute(
            &ideal,
            10 * NS_PER_S,
            0,
            |t| if t >= 7 * NS_PER_S { -8.0 } else { 0.0 },
            &mut rng(),
        );
        assert_eq!(e.outcome, HandoverOutcome::RadioLinkFailure);
        assert_eq!(e.start, 10 * NS_PER_S + preparation(&ideal) - from_ms_f64(2200.0));
        // ... while on that cell: a cell served for less than that cannot have failed yet.
        let e = execute(
            &ideal,
            10 * NS_PER_S,
            9 * NS_PER_S,
            |t| if t >= 7 * NS_PER_S { -8.0 } else { 0.0 },
            &mut rng(),
        );
        assert_eq!(e.outcome, HandoverOutcome::X2);
    }
}
