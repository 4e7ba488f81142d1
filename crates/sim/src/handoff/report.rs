//! The run summary's `handoffs` section: every handoff with each flow's application-level
//! delivery gap around it (the longest gap between two in-order deliveries that overlaps it).
//! A summary stays small however many handoffs a run has: past [`MAX_LISTED`] only the first
//! ones are listed, and `handoffs_total` gives the count and the distribution of the durations
//! of all of them (`"truncated": true`).
use super::HandoffPlan;
use crate::core::time::to_secs_f64;
use crate::engine::report::{RunView, Section};
use crate::hst::report::stall_over;
use crate::metrics::round6;
use serde_json::{json, Map, Value};

pub struct HandoffSection<'a>(pub &'a [HandoffPlan]);

/// Most handoffs listed one by one in a summary.
pub const MAX_LISTED: usize = 10_000;

impl HandoffSection<'_> {
    fn count(&self) -> usize {
        self.0.iter().map(|h| h.intervals.len()).sum()
    }
}

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
            .take(MAX_LISTED)
            .map(|(h, s, e)| {
                let app: Map<String, Value> =
                    stalls.iter().filter_map(|(name, st)| stall_over(st, s, e).map(|ms| (name.to_string(), json!(round6(ms))))).collect();
                json!({ "link": h.link_name, "start_s": round6(to_secs_f64(s)), "end_s": round6(to_secs_f64(e)), "app_gap_ms": app })
            })
            .collect();
        Value::Array(list)
    }

    fn extra(&self) -> Option<(&'static str, Value)> {
        let n = self.count();
        if n <= MAX_LISTED {
            return None;
        }
        let per_link: Map<String, Value> = self
            .0
            .iter()
            .map(|h| {
                let d: Vec<f64> = h.intervals.iter().map(|&(s, e)| to_secs_f64(e - s)).collect();
                let (lo, hi) = d.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                let mean = if d.is_empty() { 0.0 } else { d.iter().sum::<f64>() / d.len() as f64 };
                let v = json!({
                    "count": d.len(),
                    "duration_s": { "min": round6(if d.is_empty() { 0.0 } else { lo }), "mean": round6(mean), "max": round6(hi) },
                });
                (h.link_name.clone(), v)
            })
            .collect();
        Some((
            "handoffs_total",
            json!({
                "count": n,
                "listed": MAX_LISTED,
                "truncated": true,
                "note": format!("{n} handoffs: the first {MAX_LISTED} are listed in `handoffs`, these totals cover all of them"),
                "links": per_link,
            }),
        ))
    }
}
