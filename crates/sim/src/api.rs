//! The library's front door: validate, describe and run scenarios.
//!
//! Used by the Python bindings (`crates/py`), the benchmarks and the tests.
use crate::error::ConfigError;
use std::path::Path;

/// One column of a result table.
#[derive(Clone, Debug)]
pub enum Column {
    F64(Vec<f64>),
    Str(Vec<String>),
}

/// A table in long ("tidy") form: one row per (bin, entity, metric).
/// Columns: `time_s` (bin start), `kind` ("flow", "link", ...), `name`, `metric`, `value`.
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
}

/// Parses and checks a scenario; returns every error found.
pub fn validate_toml(text: &str, file: &str, base_dir: &Path) -> Vec<ConfigError> {
    match crate::scenario::Scenario::load(text, file, base_dir) {
        Ok(_) => vec![],
        Err(e) => e,
    }
}

/// JSON Schema of the scenario file format.
pub fn schema_json() -> String {
    crate::scenario::schema_json()
}

/// Runs a scenario. `seed` overrides the file's seed. `progress` is called with
/// the fraction of simulated time done, a few hundred times per run at most.
pub fn run_toml(
    text: &str,
    file: &str,
    base_dir: &Path,
    seed: Option<u64>,
    progress: Option<&mut dyn FnMut(f64)>,
) -> Result<RunOutput, Vec<ConfigError>> {
    let mut sc = crate::scenario::Scenario::load(text, file, base_dir)?;
    if let Some(s) = seed {
        sc.seed = s;
    }
    Ok(crate::sim::run(&sc, progress))
}

/// Learns a handover table (CSV) from `runs` preliminary runs of the scenario's train (seeds
/// `first_seed..`), each handover widened by `margin_m` (default 3 σ of the GPS error), and
/// accumulated into `existing` (CSV text of an earlier table) when given.
pub fn learn_handover_table(
    text: &str,
    file: &str,
    base_dir: &Path,
    runs: u64,
    first_seed: u64,
    margin_m: Option<f64>,
    existing: Option<&str>,
) -> Result<String, Vec<ConfigError>> {
    let sc = crate::scenario::Scenario::load(text, file, base_dir)?;
    let Some(h) = &sc.file.hst else {
        return Err(vec![ConfigError::new(file, "", "the scenario has no [hst] section (no train to learn from)")]);
    };
    if runs == 0 {
        return Err(vec![ConfigError::new("--runs", 0, "must be at least 1")]);
    }
    if let Some(m) = margin_m {
        if !(m.is_finite() && m >= 0.0) {
            return Err(vec![ConfigError::new("--margin-m", m, "must be a finite number >= 0")]);
        }
    }
    let mut table = match existing {
        Some(csv) => crate::hst::table::HandoverTable::from_csv(csv, "existing table")?,
        None => crate::hst::table::HandoverTable::new(),
    };
    crate::hst::scenario::learn_table(h, sc.file.duration_s, first_seed, runs, margin_m, &mut table);
    Ok(table.to_csv())
}
