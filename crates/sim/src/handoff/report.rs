//! The run summary's `handoffs` section: every handoff with each flow's application-level
//! delivery gap around it (the longest gap between two in-order deliveries that overlaps it).
use super::HandoffPlan;
use crate::core::time::to_secs_f64;
use crate::engine::report::{RunView, Section};
use crate::hst::report::stall_over;
use crate::metrics::round6;
use serde_json::{json, Map, Value};

pub struct HandoffSection<'a>(pub &'a [HandoffPlan]);

impl Section for HandoffSection<'_> {
    fn name(&self) -> &str {
        "handoffs"
    }

    fn render(&self, view: &dyn RunView) -> Value {
        let stalls = view.flow_stalls();
        let list: Vec<Value> = self
            .0
            .iter()
            .flat_map(|h| h.intervals.iter().map(move |&(s, e)| (h, s, e)))
            .map(|(h, s, e)| {
                let app: Map<String, Value> =
                    stalls.iter().filter_map(|(name, st)| stall_over(st, s, e).map(|ms| (name.to_string(), json!(round6(ms))))).collect();
                json!({ "link": h.link_name, "start_s": round6(to_secs_f64(s)), "end_s": round6(to_secs_f64(e)), "app_gap_ms": app })
            })
            .collect();
        Value::Array(list)
    }
}
