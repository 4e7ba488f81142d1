//! Helpers shared by the integration tests: build scenarios as TOML text and run them.
#![allow(dead_code)]
use mobipath_sim::api::{run_toml, Column, RunOutput};
use serde_json::Value;
use std::path::Path;

/// Every run of the integration tests checks the simulator's incremental caches against fresh
/// computations (see `mobipath_sim::core::checks`).
fn checked() {
    mobipath_sim::core::checks::set_cache_checks(true);
}

pub fn run(toml: &str) -> RunOutput {
    checked();
    match run_toml(toml, "test.toml", Path::new("."), None, None) {
        Ok(o) => o,
        Err(e) => panic!("scenario rejected: {:?}\n{toml}", e),
    }
}

pub fn run_seed(toml: &str, seed: u64) -> RunOutput {
    checked();
    run_toml(toml, "test.toml", Path::new("."), Some(seed), None).expect("valid scenario")
}

pub fn flow<'a>(o: &'a RunOutput, name: &str) -> &'a Value {
    &o.summary["flows"][name]
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// One link, one path, one flow. `link_extra` and `flow_extra` are extra TOML lines.
pub fn single(
    duration_s: f64,
    rate_mbps: f64,
    delay_ms: f64,
    queue: u32,
    link_extra: &str,
    cc: &str,
    flow_extra: &str,
) -> String {
    format!(
        r#"
seed = 1
duration_s = {duration_s}
[[links]]
name = "l"
rate_mbps = {rate_mbps}
delay_ms = {delay_ms}
queue_packets = {queue}
{link_extra}
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "{cc}"
{flow_extra}
"#
    )
}

/// The values of one (kind, name, metric) series of the long time-series table.
pub fn series(o: &RunOutput, kind: &str, name: &str, metric: &str) -> Vec<(f64, f64)> {
    let col = |n: &str| {
        o.timeseries
            .columns
            .iter()
            .find(|(c, _)| c == n)
            .map(|(_, c)| c)
            .unwrap()
    };
    let (Column::F64(t), Column::Str(k), Column::Str(nm), Column::Str(m), Column::F64(v)) =
        (col("time_s"), col("kind"), col("name"), col("metric"), col("value"))
    else {
        panic!("unexpected column types")
    };
    (0..t.len())
        .filter(|&i| k[i] == kind && nm[i] == name && m[i] == metric)
        .map(|i| (t[i], v[i]))
        .collect()
}

/// Adds an `[output]` table (e.g. `"bin_ms = 10"`) to a scenario built by [`single`].
pub fn with_output(sc: &str, lines: &str) -> String {
    sc.replacen("\n[[links]]", &format!("\n[output]\n{lines}\n[[links]]"), 1)
}
