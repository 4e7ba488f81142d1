//! Metric collection shared by every experiment (definitions: docs/metrics.md) and the output
//! types of a run ([`RunOutput`]).
//!
//! [`Bins`] accumulates per-bin counters (bytes delivered, bytes sent) aligned to t = 0;
//! [`LongTable`] builds the time series in long form (`time_s, kind, name, metric, value`).
pub mod hist;
pub use hist::WeightedHist;

use crate::core::time::Time;

/// One column of a result table.
#[derive(Clone, Debug)]
pub enum Column {
    F64(Vec<f64>),
    Str(Vec<String>),
}

/// A table in long ("tidy") form: one row per (bin, entity, metric).
/// Columns: `time_s` (bin start), `kind` ("flow", "subflow", "link"), `name`, `metric`, `value`.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

/// Everything a run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Per-flow and per-link summary (what `summary.json` holds).
    pub summary: serde_json::Value,
    /// The scenario with every default filled in (for `provenance.json`).
    pub resolved_scenario: serde_json::Value,
    /// Time series in long form.
    pub timeseries: Table,
    /// Number of events processed (for benchmarks).
    pub events: u64,
    /// Whether anything in the run was random (another seed can change the result).
    pub seed_matters: bool,
}

/// Counters per time bin (bins aligned to t = 0).
#[derive(Clone, Debug)]
pub struct Bins {
    width: Time,
    pub values: Vec<f64>,
}

impl Bins {
    pub fn new(width: Time, n_bins: usize) -> Self {
        Bins { width, values: vec![0.0; n_bins] }
    }
    pub fn add(&mut self, t: Time, v: f64) {
        let i = (t / self.width) as usize;
        if let Some(x) = self.values.get_mut(i) {
            *x += v;
        }
    }
    /// Converts byte counts per bin into Mbit/s.
    pub fn as_mbps(&self) -> Vec<f64> {
        let secs = self.width as f64 / 1e9;
        self.values.iter().map(|b| b * 8.0 / secs / 1e6).collect()
    }
}

/// Builder of a long-form table.
#[derive(Default)]
pub struct LongTable {
    time_s: Vec<f64>,
    kind: Vec<String>,
    name: Vec<String>,
    metric: Vec<String>,
    value: Vec<f64>,
}

impl LongTable {
    /// Appends one series (one value per bin) for an entity.
    pub fn push_series(&mut self, bin_s: f64, kind: &str, name: &str, metric: &str, values: &[f64]) {
        for (i, v) in values.iter().enumerate() {
            self.time_s.push(i as f64 * bin_s);
            self.kind.push(kind.to_string());
            self.name.push(name.to_string());
            self.metric.push(metric.to_string());
            self.value.push(*v);
        }
    }
    pub fn finish(self) -> Table {
        Table {
            columns: vec![
                ("time_s".into(), Column::F64(self.time_s)),
                ("kind".into(), Column::Str(self.kind)),
                ("name".into(), Column::Str(self.name)),
                ("metric".into(), Column::Str(self.metric)),
                ("value".into(), Column::F64(self.value)),
            ],
        }
    }
}

/// Rounds for the summary so tiny float noise never shows (results are deterministic anyway).
pub fn round6(x: f64) -> f64 {
    if x.is_finite() { (x * 1e6).round() / 1e6 } else { x }
}
