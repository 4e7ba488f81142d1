//! The run summary's `handovers` section (P0): every handover of the train with its IP-level and
//! application-level delivery gaps.
use crate::core::time::{to_secs_f64, Time};
use crate::engine::report::{RunView, Section};
use crate::metrics::round6;
use crate::plan::TrainPlan;
use crate::radio::signalling::HandoverOutcome;
use serde_json::{json, Map, Value};

/// Renders the train's handovers (an engine report [`Section`]).
pub struct HandoverSection<'a>(pub &'a TrainPlan);

impl Section for HandoverSection<'_> {
    fn name(&self) -> &str {
        "handovers"
    }

    fn render(&self, view: &dyn RunView) -> Value {
        let t = self.0;
        let list: Vec<Value> = t
            .run
            .handovers
            .iter()
            .map(|e| {
                let mut j = json!({
                    "operator": t.operators.get(e.operator).cloned().unwrap_or_else(|| format!("op{}", e.operator)),
                    "start_s": round6(to_secs_f64(e.start)),
                    "end_s": round6(to_secs_f64(e.end)),
                    "position_m": round6(e.position_m),
                    "from_cell": e.from_cell,
                    "to_cell": e.to_cell,
                    // Outputs of the handover model (inputs only in the fixed model). A DAPS
                    // handover's source keeps delivering: its interruption is only the release's.
                    "interruption_ms": round6((e.end - e.outage_start) as f64 / 1e6),
                    // Negative after a radio-link failure whose loss of sync preceded the trigger.
                    "preparation_ms": round6((e.start as f64 - e.trigger as f64) / 1e6),
                    "rach_attempts": e.rach_attempts,
                    "outcome": e.outcome.as_str(),
                });
                let fwd_end = e.end + t.forwarding_delay;
                if let Some(ms) = t
                    .links
                    .get(e.operator)
                    .and_then(|l| view.ip_gap_ms(&format!("{l}.forward"), e.start))
                {
                    j["ip_gap_ms"] = json!(round6(ms));
                }
                let app: Map<String, Value> = view
                    .flow_stalls()
                    .into_iter()
                    .filter_map(|(name, stalls)| {
                        stall_over(stalls, e.start, fwd_end).map(|ms| (name.to_string(), json!(round6(ms))))
                    })
                    .collect();
                j["app_gap_ms"] = Value::Object(app);
                // With a declared handover type (radio/nr.rs): the type, whether the handover
                // failed (radio-link failure, failed access, or a DAPS fallback to the source),
                // whether it ended in a radio-link failure, and the re-establishment's share of
                // the interruption. Left out otherwise, so older summaries keep their bytes.
                if let Some(kind) = e.kind {
                    j["type"] = json!(kind.as_str());
                    j["failed"] = json!(e.outcome != HandoverOutcome::X2);
                    j["rlf"] = json!(e.outcome == HandoverOutcome::RadioLinkFailure);
                    j["reestablishment_ms"] = json!(round6(e.reestablishment as f64 / 1e6));
                }
                j
            })
            .collect();
        Value::Array(list)
    }
}

/// The longest application-level delivery gap (ms) among `stalls` that overlaps `[a, b]`.
pub(crate) fn stall_over(stalls: &[(Time, Time)], a: Time, b: Time) -> Option<f64> {
    let i = stalls.partition_point(|&(_, to)| to < a);
    stalls[i..]
        .iter()
        .take_while(|&&(from, _)| from <= b)
        .map(|&(from, to)| (to - from) as f64 / 1e6)
        .reduce(f64::max)
}
