//! The `[hst]` scenario section: a train whose handovers drive links, and the handover table PHA
//! schedulers consult.
use super::table::{HandoverTable, ObservedHandover};
use crate::core::time::{from_secs_f64, Time};
use crate::core::RngStreams;
use crate::error::{ConfigError, Errors};
use crate::radio::config::{HandoverConfig, HstConfig, RadioConfig, TrainConfig};
use crate::radio::handover::{simulate_handovers, HandoverEvent};
use crate::radio::mobility::{gps_samples, Mobility};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A high-speed train (P0): mobility, two or more operators' cells, handovers.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HstScenario {
    /// Seed of the environment (shadowing map); keep it to ride the same line again.
    #[serde(default)]
    pub environment_seed: u64,
    #[serde(default)]
    pub train: TrainConfig,
    #[serde(default)]
    pub radio: RadioConfig,
    #[serde(default)]
    pub handover: HandoverConfig,
    /// `links[i]` follows the handovers of operator i (`radio.operators` order): delivery stops
    /// on it during each handover interruption, queued packets are held.
    pub links: Vec<String>,
    /// Handover table (CSV, relative to the scenario file) for `pha(...)` schedulers.
    #[serde(default)]
    pub table: Option<String>,
}

impl HstScenario {
    pub fn model(&self) -> HstConfig {
        HstConfig { environment_seed: self.environment_seed, train: self.train.clone(), radio: self.radio.clone(), handover: self.handover.clone() }
    }

    pub fn validate(&self, link_names: &[String], base_dir: &Path, errs: &mut Errors) {
        if let Err(e) = self.model().check() {
            errs.0.extend(e);
        }
        let n_ops = self.radio.operators.len();
        if self.links.len() > n_ops {
            errs.push(ConfigError::new("hst.links", self.links.len(), format!("more links than operators ({n_ops})")));
        }
        for (i, l) in self.links.iter().enumerate() {
            if !link_names.contains(l) {
                errs.push(ConfigError::new(format!("hst.links[{i}]"), l, "no link with this name"));
            }
        }
        if let Some(t) = &self.table {
            if let Err(e) = self.load_table(base_dir) {
                errs.0.extend(e);
            } else if t.is_empty() {
                errs.push(ConfigError::new("hst.table", "", "must name a CSV file"));
            }
        }
    }

    pub fn load_table(&self, base_dir: &Path) -> Result<Option<HandoverTable>, Vec<ConfigError>> {
        let Some(t) = &self.table else { return Ok(None) };
        let path = base_dir.join(t);
        let text = std::fs::read_to_string(&path).map_err(|e| vec![ConfigError::new("hst.table", t, format!("cannot read {}: {e}", path.display()))])?;
        HandoverTable::from_csv(&text, t).map(Some)
    }

    /// Operator name of operator `i`.
    pub fn operator_name(&self, i: usize) -> String {
        self.radio.operators.get(i).map(|o| o.name.clone()).unwrap_or_else(|| format!("op{i}"))
    }
}

/// One run of the train: its handovers and GPS fixes.
pub struct TrainRun {
    pub handovers: Vec<HandoverEvent>,
    pub mobility: Mobility,
    /// GPS fixes (time, metres along the track), every `train.gps.period_ms`.
    pub gps: Vec<(Time, f64)>,
}

impl TrainRun {
    pub fn new(h: &HstScenario, seed: u64, duration: Time) -> Self {
        let model = h.model();
        let handovers = simulate_handovers(&model, seed, duration);
        let mobility = Mobility::new(&model.train);
        let streams = RngStreams::new(seed);
        let gps = gps_samples(&mobility, &model.train.gps, &streams, duration);
        TrainRun { handovers, mobility, gps }
    }

    /// The latest GPS fix at or before `t`.
    pub fn gps_at(&self, t: Time) -> Option<f64> {
        let i = self.gps.partition_point(|&(ts, _)| ts <= t);
        (i > 0).then(|| self.gps[i - 1].1)
    }

    /// Handovers as a GPS-tagged observer sees them (for learning tables).
    pub fn observed(&self, h: &HstScenario) -> Vec<ObservedHandover> {
        self.handovers
            .iter()
            .filter_map(|e| {
                Some(ObservedHandover { operator: h.operator_name(e.operator), gps_start_m: self.gps_at(e.start)?, gps_end_m: self.gps_at(e.end)? })
            })
            .collect()
    }
}

/// Learns a table from `runs` preliminary runs (seeds `first_seed..first_seed+runs`), each
/// handover widened by `margin_m` (default: 3 σ of the GPS error), accumulated into `table`.
pub fn learn_table(h: &HstScenario, duration_s: f64, first_seed: u64, runs: u64, margin_m: Option<f64>, table: &mut HandoverTable) {
    let margin = margin_m.unwrap_or(3.0 * h.train.gps.sigma_m);
    let duration = from_secs_f64(duration_s);
    for seed in first_seed..first_seed + runs {
        let run = TrainRun::new(h, seed, duration);
        table.learn(&run.observed(h), margin);
    }
}
