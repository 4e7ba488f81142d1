//! The library's front door: validate, describe and run scenarios.
//!
//! Used by the Python bindings (`crates/py`), the benchmarks and the tests.
use crate::error::ConfigError;
use std::path::{Path, PathBuf};

pub use crate::metrics::{Column, RunOutput, Table};

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

/// Runs a scenario. `seed` overrides the file's seed. `progress` is called with the fraction of
/// simulated time done, a few hundred times per run at most; returning `false` stops the run
/// (the summary then says `partial`).
pub fn run_toml(
    text: &str,
    file: &str,
    base_dir: &Path,
    seed: Option<u64>,
    progress: Option<crate::engine::Progress<'_>>,
) -> Result<RunOutput, Vec<ConfigError>> {
    run_toml_capturing(text, file, base_dir, seed, progress, &CaptureRequest::default())
}

/// The seed a scenario's text names (`seed`, 1 when left out), without checking the rest; `None`
/// if the text is not TOML or the seed not an unsigned integer (the run will say why).
pub fn scenario_seed(text: &str) -> Option<u64> {
    let t: toml::Table = text.parse().ok()?;
    match t.get("seed") {
        None => Some(crate::scenario::DEFAULT_SEED),
        Some(v) => v.as_integer().and_then(|i| u64::try_from(i).ok()),
    }
}

/// Where a run writes its packet captures (`[output] pcap`, docs/pcap.md), and the command
/// line's say over them.
#[derive(Clone, Debug, Default)]
pub struct CaptureRequest {
    /// The run's output directory: captures go to `<out_dir>/pcap/`. Without one, a scenario
    /// that asks for captures is refused (they would have nowhere to go).
    pub out_dir: Option<PathBuf>,
    /// `--pcap`: capture every link (or the links `[output] pcap` lists).
    pub force: bool,
    /// `--pcap-max-mb`: replaces `[output] pcap_max_mb`.
    pub max_mb: Option<f64>,
}

/// [`run_toml`] with packet captures as `capture` and the scenario's `[output]` ask: the
/// capture files are opened before the run starts, so a directory that cannot be written is
/// an error here, not a run that silently captured nothing.
pub fn run_toml_capturing(
    text: &str,
    file: &str,
    base_dir: &Path,
    seed: Option<u64>,
    progress: Option<crate::engine::Progress<'_>>,
    capture: &CaptureRequest,
) -> Result<RunOutput, Vec<ConfigError>> {
    let mut plan = crate::plan::Plan::load(text, file, base_dir, seed)?;
    if let Some(mb) = capture.max_mb {
        crate::capture::config::check_max_mb("--pcap-max-mb", mb).map_err(|e| vec![e])?;
        plan.capture.max_bytes = (mb * 1e6).round() as u64;
    }
    if capture.force && plan.capture.link_dirs.is_none() {
        plan.capture.link_dirs = Some((0..plan.links.len() * 2).collect());
    }
    let tap = match (&plan.capture.link_dirs, &capture.out_dir) {
        (None, _) => None,
        (Some(_), Some(dir)) => Some(crate::capture::Capture::open(&plan, dir).map_err(|e| vec![e])?),
        (Some(_), None) => {
            return Err(vec![ConfigError::new(
                "output.pcap",
                "",
                "captures need an output directory (mobipath run --out DIR, or api.run(..., out_dir=DIR))",
            )])
        }
    };
    Ok(crate::engine::run_with_capture(&plan, progress, tap))
}

/// The scenario's links as the simulator runs them, with the `[hst]` train's handovers and
/// capacity folded into each train link (JSON: `{"links": [<[[links]] table>...], "handovers":
/// [{"operator", "link", "start_s", "end_s"}...], "ride", "gps": [[time_s, position_m]...]}`,
/// as the run summary names them; `gps` is the fixes the train's PHA/PHA-D see). `seed`
/// overrides the file's seed.
pub fn effective_links_json(
    text: &str,
    file: &str,
    base_dir: &Path,
    seed: Option<u64>,
) -> Result<String, Vec<ConfigError>> {
    let sc = crate::scenario::Scenario::load(text, file, base_dir)?;
    let plan = crate::plan::Plan::new(&sc, seed.unwrap_or(sc.seed))?;
    let links = crate::plan::effective_link_configs(&sc, plan.seed);
    let secs = |t| crate::metrics::round6(crate::core::time::to_secs_f64(t));
    let hos: Vec<serde_json::Value> = match &plan.train {
        Some(t) => plan
            .handovers()
            .iter()
            .map(|&(op, a, b)| serde_json::json!({"operator": t.operators.get(op), "link": t.links.get(op), "start_s": secs(a), "end_s": secs(b)}))
            .collect(),
        None => Vec::new(),
    };
    // The ride: where the train is at the start and at the end (metres along the track).
    let ride = plan.train.as_ref().map(|t| {
        let d = crate::core::time::from_secs_f64(sc.file.duration_s);
        serde_json::json!({"start_m": round6_m(t.run.mobility.position_at(0)), "end_m": round6_m(t.run.mobility.position_at(d))})
    });
    // The GPS fixes PHA and PHA-D see in this run (`[time_s, position_m]`, synthetic or
    // `[hst.gps_trace]`), so an emulated router's PHA-D can replay the same ones.
    let gps: Vec<serde_json::Value> = match &plan.train {
        Some(t) => t
            .run
            .gps
            .iter()
            .map(|&(ts, pos)| serde_json::json!([secs(ts), round6_m(pos)]))
            .collect(),
        None => Vec::new(),
    };
    Ok(serde_json::json!({"links": links, "handovers": hos, "ride": ride, "gps": gps}).to_string())
}

fn round6_m(x: f64) -> f64 {
    crate::metrics::round6(x)
}

/// Learns a handover table (CSV) from `runs` preliminary runs of the scenario's train (seeds
/// `first_seed..`), each handover widened by `margin_m` (default 3 σ of the GPS error), and
/// accumulated into `existing` (CSV text of an earlier table) when given. `min_support` (k >= 1):
/// a stretch of track becomes a range when k runs saw a handover there (default: the existing
/// table's, else 1).
#[allow(clippy::too_many_arguments)]
pub fn learn_handover_table(
    text: &str,
    file: &str,
    base_dir: &Path,
    runs: u64,
    first_seed: u64,
    margin_m: Option<f64>,
    existing: Option<&str>,
    min_support: Option<u64>,
) -> Result<String, Vec<ConfigError>> {
    let sc = crate::scenario::Scenario::load(text, file, base_dir)?;
    let Some(h) = &sc.file.hst else {
        return Err(vec![ConfigError::new(
            file,
            "",
            "the scenario has no [hst] section (no train to learn from)",
        )]);
    };
    if runs == 0 {
        return Err(vec![ConfigError::new("--runs", 0, "must be at least 1")]);
    }
    if let Some(m) = margin_m {
        // Half the densest operator's site spacing: wider margins merge every range of that
        // operator into one covering the whole track.
        let limit = h
            .radio
            .operators
            .iter()
            .map(|o| o.spacing_m / 2.0)
            .fold(f64::INFINITY, f64::min);
        if !(m.is_finite() && m >= 0.0 && m < limit) {
            return Err(vec![ConfigError::new(
                "--margin-m",
                crate::error::fmt_num(m),
                format!(
                    "must be in [0, {}) m (half the operators' site spacing; wider margins merge every range into one)",
                    crate::error::fmt_num(limit)
                ),
            )]);
        }
    }
    let mut table = match existing {
        Some(csv) => crate::hst::table::HandoverTable::from_csv(csv, "existing table")?,
        None => crate::hst::table::HandoverTable::new(),
    };
    check_min_support(min_support)?;
    crate::hst::scenario::learn_table(h, sc.file.duration_s, first_seed, runs, margin_m, &mut table);
    if let Some(k) = min_support {
        table.set_min_support(k);
    }
    Ok(table.to_csv())
}

fn check_min_support(k: Option<u64>) -> Result<(), Vec<ConfigError>> {
    match k {
        Some(k) if !(1..=1_000_000_000).contains(&k) => Err(vec![ConfigError::new(
            "--min-support",
            k,
            "must be an integer in [1, 1000000000] (runs that saw a handover at a place)",
        )]),
        _ => Ok(()),
    }
}

/// One recorded run for [`learn_handover_table_recorded`]: an NMEA 0183 log and a handover log
/// (`operator,start,end`, UTC), as text with the file names errors should cite.
#[derive(Clone, Debug)]
pub struct RecordedRunText {
    pub nmea: String,
    pub nmea_file: String,
    pub handovers: String,
    pub handovers_file: String,
}

/// Learns a handover table (CSV) from recorded runs: GPS fixes from NMEA logs projected onto a
/// `lat,lon` track, handover times from logs (formats in `hst/README.md`). Each handover's start
/// and end positions are interpolated between fixes at most `max_gap_s` away (default 2 s),
/// widened by `margin_m` (default 15 m: 3 σ of a 5 m receiver), merged, and accumulated into
/// `existing` (CSV text) when given. Fixes farther than `max_offset_m` (default 50 m) from the
/// track are dropped. `min_support` as in [`learn_handover_table`]. Returns the CSV and a
/// one-line summary of what was used.
#[allow(clippy::too_many_arguments)]
pub fn learn_handover_table_recorded(
    track: &str,
    track_file: &str,
    runs: &[RecordedRunText],
    margin_m: Option<f64>,
    max_offset_m: Option<f64>,
    max_gap_s: Option<f64>,
    existing: Option<&str>,
    min_support: Option<u64>,
) -> Result<(String, String), Vec<ConfigError>> {
    use crate::hst::gps;
    let mut errs = Vec::new();
    let opt = |name: &str, v: Option<f64>, d: f64, lo_open: bool, errs: &mut Vec<ConfigError>| -> f64 {
        let x = v.unwrap_or(d);
        let ok = x.is_finite() && if lo_open { x > 0.0 } else { x >= 0.0 };
        if !ok {
            errs.push(ConfigError::new(
                name,
                x,
                if lo_open {
                    "must be a finite number > 0"
                } else {
                    "must be a finite number >= 0"
                },
            ));
        }
        x
    };
    let margin = opt("--margin-m", margin_m, 15.0, false, &mut errs);
    let max_offset = opt("--max-offset-m", max_offset_m, 50.0, true, &mut errs);
    let max_gap = opt("--max-gap-s", max_gap_s, 2.0, true, &mut errs);
    if runs.is_empty() {
        errs.push(ConfigError::new(
            "runs",
            0,
            "give at least one recorded run (an NMEA log and its handover log)",
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let track = gps::GeoTrack::from_csv(track, track_file)?;
    if margin >= track.length_m() {
        let msg = format!("must be less than the track's length ({:.1} m)", track.length_m());
        return Err(vec![ConfigError::new("--margin-m", crate::error::fmt_num(margin), msg)]);
    }
    let mut table = match existing {
        Some(csv) => crate::hst::table::HandoverTable::from_csv(csv, "existing table")?,
        None => crate::hst::table::HandoverTable::new(),
    };
    let rr: Vec<gps::RecordedRun<'_>> = runs
        .iter()
        .map(|r| gps::RecordedRun {
            nmea: &r.nmea,
            nmea_file: &r.nmea_file,
            handovers: &r.handovers,
            handovers_file: &r.handovers_file,
        })
        .collect();
    check_min_support(min_support)?;
    let rep = gps::learn_from_recordings(&track, &rr, margin, max_offset, max_gap, &mut table)?;
    if let Some(k) = min_support {
        table.set_min_support(k);
    }
    let mut summary = format!(
        "{} handovers from {} runs ({} GPS fixes, {} off the track)",
        rep.handovers_used, rep.runs, rep.fixes, rep.fixes_off_track
    );
    if !rep.handovers_skipped.is_empty() {
        let list: Vec<String> = rep
            .handovers_skipped
            .iter()
            .take(5)
            .map(|(f, l)| format!("{f}:{l}"))
            .collect();
        summary.push_str(&format!(
            "; {} skipped without GPS fixes around them ({})",
            rep.handovers_skipped.len(),
            list.join(", ")
        ));
    }
    if !rep.duplicates.is_empty() {
        let list: Vec<String> = rep.duplicates.iter().take(5).map(|(f, l)| format!("{f}:{l}")).collect();
        summary.push_str(&format!(
            "; {} duplicate rows counted once ({})",
            rep.duplicates.len(),
            list.join(", ")
        ));
    }
    Ok((table.to_csv(), summary))
}

/// The resolved plan of a run as JSON, for the layers that act on a scenario without simulating
/// it (the emulator): `{"name", "seed", "duration_s", "bin_ms", "warmup_s", "scenario" (every
/// default filled in), "links" (as the run builds them: the train folded in), "handovers",
/// "paths": [{"name", "links"}], "flows": [{"name", "protocol", "cc", "scheduler" (as written,
/// with its wrapper), "paths", "start_s", "stop_s", "traffic", "mptcp" (options with defaults),
/// "non_default": [fields of `tcp`, `receiver` and `mptcp` set away from their defaults]}]}`.
/// `seed` overrides the file's seed.
pub fn plan_json(text: &str, file: &str, base_dir: &Path, seed: Option<u64>) -> Result<String, Vec<ConfigError>> {
    use crate::scenario::{MptcpOptions, ReceiverOptions, TcpOptions};
    use serde_json::{json, Value};
    let sc = crate::scenario::Scenario::load(text, file, base_dir)?;
    let plan = crate::plan::Plan::new(&sc, seed.unwrap_or(sc.seed))?;
    let links: Value =
        serde_json::from_str(&effective_links_json(text, file, base_dir, Some(plan.seed))?).expect("JSON we wrote");
    // The fields of `value` (a table) that differ from `default`'s, as `prefix.field`.
    fn changed<T: serde::Serialize>(prefix: &str, value: &T, default: &T, out: &mut Vec<String>) {
        let (Value::Object(a), Value::Object(b)) = (
            serde_json::to_value(value).expect("ser"),
            serde_json::to_value(default).expect("ser"),
        ) else {
            return;
        };
        for (k, v) in &a {
            if b.get(k) != Some(v) {
                out.push(format!("{prefix}.{k}"));
            }
        }
    }
    let flows: Vec<Value> = sc
        .file
        .flows
        .iter()
        .map(|f| {
            let mut non_default = Vec::new();
            changed("tcp", &f.tcp, &TcpOptions::default(), &mut non_default);
            changed("receiver", &f.receiver, &ReceiverOptions::default(), &mut non_default);
            let mptcp = f.mptcp.clone().unwrap_or_default();
            changed("mptcp", &mptcp, &MptcpOptions::default(), &mut non_default);
            json!({
                "name": f.name,
                "protocol": if f.paths.is_some() { "mptcp" } else { "tcp" },
                "cc": f.cc,
                "scheduler": f.paths.as_ref().map(|_| f.scheduler.clone().unwrap_or_default().config().name),
                "paths": f.paths.clone().unwrap_or_else(|| f.path.iter().cloned().collect()),
                "start_s": f.start_s,
                "stop_s": f.stop_s,
                "traffic": f.traffic,
                "mptcp": mptcp,
                "non_default": non_default,
            })
        })
        .collect();
    Ok(json!({
        "name": plan.scenario_name,
        "seed": plan.seed,
        "duration_s": plan.duration_s,
        "bin_ms": plan.bin_ms,
        "warmup_s": plan.warmup_s,
        "scenario": plan.resolved,
        "links": links["links"],
        "handovers": links["handovers"],
        "paths": sc.file.paths.iter().map(|p| json!({"name": p.name, "links": p.links})).collect::<Vec<_>>(),
        "flows": flows,
    })
    .to_string())
}

/// Every registry's names as JSON text: `{"cc": [single-path], "coupled_cc": [...],
/// "schedulers": [...], "wrappers": [...], "elements": [...]}`.
pub fn names_json() -> String {
    use crate::tcp::cc::CcKind;
    serde_json::json!({
        "cc": CcKind::single_path_names(),
        "coupled_cc": CcKind::coupled_names(),
        "schedulers": crate::mptcp::sched::SchedulerKind::names(),
        "wrappers": crate::hst::wrappers::Wrapper::ALL.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        "elements": crate::element::ElementSpec::NAMES,
    })
    .to_string()
}
