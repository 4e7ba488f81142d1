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
