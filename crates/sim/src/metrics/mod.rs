//! Metric collection shared by every experiment (definitions: docs/metrics.md) and the output
//! types of a run ([`RunOutput`]).
//!
//! [`Bins`] accumulates per-bin counters (bytes delivered, bytes sent) aligned to t = 0;
//! [`LongTable`] builds the time series in long form (`time_s, kind, name, metric, value`).
pub mod hist;
pub mod select;
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
    /// The bin the last `add` fell in: [start, end) and its index; consecutive adds (one per packet)
    /// almost always hit the same bin, so the division that finds the bin is skipped (a 64-bit
    /// division costs tens of cycles; the bulk TCP run made a million of them).
    last: (Time, Time, usize),
}

impl Bins {
    pub fn new(width: Time, n_bins: usize) -> Self {
        // `last` starts as an empty range.
        Bins {
            width,
            values: vec![0.0; n_bins],
            last: (1, 0, 0),
        }
    }
    pub fn add(&mut self, t: Time, v: f64) {
        let (lo, hi, last) = self.last;
        let i = if lo <= t && t < hi {
            last
        } else {
            let i = t / self.width;
            let lo = i * self.width;
            self.last = (lo, lo.saturating_add(self.width), i as usize);
            i as usize
        };
        if let Some(x) = self.values.get_mut(i) {
            *x += v;
        }
    }
    /// Counters that keep nothing: `add` is one comparison (a flow whose series are not kept).
    pub fn off(width: Time) -> Self {
        Bins {
            width,
            values: Vec::new(),
            last: (0, Time::MAX, usize::MAX),
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
    if x.is_finite() {
        (x * 1e6).round() / 1e6
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng};

    /// Adds at random times, forward and backward, within and across bins, land where a plain
    /// division puts them.
    #[test]
    fn bins_add_where_the_division_says() {
        let mut rng = crate::core::rng::Rng::seed_from_u64(5);
        let (width, n) = (100_000_000, 50);
        let mut b = Bins::new(width, n);
        let mut want = vec![0.0; n];
        let mut t: Time = 0;
        for k in 0..20_000 {
            t = match rng.gen_range(0..10) {
                0 => rng.gen_range(0..width * n as u64 + width),
                1 => t - t % width,
                2 => (t - t % width + width).saturating_sub(1),
                3 => t - t % width + width,
                _ => t + rng.gen_range(0..width / 20),
            };
            let v = k as f64;
            b.add(t, v);
            if let Some(x) = want.get_mut((t / width) as usize) {
                *x += v;
            }
        }
        assert_eq!(b.values, want);
    }

    #[test]
    fn bins_that_are_off_keep_nothing() {
        let mut b = Bins::off(100);
        for t in [0, 99, 100, 10_000, Time::MAX - 1] {
            b.add(t, 1.0);
        }
        assert!(b.values.is_empty() && b.as_mbps().is_empty());
    }
}
