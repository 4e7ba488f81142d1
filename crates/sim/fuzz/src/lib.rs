//! Shared by the fuzz targets: turning fuzz bytes into text, where fuzzed scenarios find their
//! files, when a valid fuzzed scenario is cheap enough to run, and what every run must satisfy.
use std::path::PathBuf;

/// The input as text, or `None`: every reader in mobipath-sim takes `&str` (the loaders check
/// UTF-8 before parsing), so bytes that are not UTF-8 never reach a parser.
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Folder that fuzzed scenarios' relative file names resolve against (`data/`: small trace,
/// handover-table, GPS-trace, track and NMEA files written by `make_seeds.py`).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// Longest simulated time a fuzz iteration runs; longer valid scenarios are only validated.
pub const MAX_RUN_S: f64 = 1.0;
/// Largest rate (any `*_mbps` key) a run may have; faster valid scenarios are only validated.
pub const MAX_RUN_MBPS: f64 = 100.0;
/// Most flows and links a run may have.
pub const MAX_RUN_FLOWS: usize = 8;
pub const MAX_RUN_LINKS: usize = 16;

/// Whether the loader may see this text at all: every string value must be a bare file name
/// (no `/` or `\`), so validation only ever reads files in [`data_dir`] (never `/dev/zero`,
/// a FIFO or a huge file elsewhere). Text that is not TOML is always allowed (the loader stops
/// at the syntax error before reading any file).
pub fn may_validate(text: &str) -> bool {
    match text.parse::<toml::Table>() {
        Ok(t) => strings_ok(&toml::Value::Table(t)),
        Err(_) => true,
    }
}

fn strings_ok(v: &toml::Value) -> bool {
    match v {
        toml::Value::String(s) => !s.contains(['/', '\\']),
        toml::Value::Array(a) => a.iter().all(strings_ok),
        toml::Value::Table(t) => t.values().all(strings_ok),
        _ => true,
    }
}

/// Inputs that hit a known, reported bug the fuzzers should not keep re-finding (each names its
/// finding in `FINDINGS.md`); the scenario target skips them. Remove an entry when its bug is
/// fixed, so the fuzzer checks the fix.
pub fn known_issue(text: &str) -> Option<&'static str> {
    if no_skip() {
        return None;
    }
    // F1 (a long non-ASCII string cut inside a character) is fixed: nothing is skipped.
    let _ = text;
    None
}

/// `FUZZ_NO_SKIP=1`: do not skip known issues (to check that a fix works).
pub fn no_skip() -> bool {
    static NO_SKIP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NO_SKIP.get_or_init(|| std::env::var_os("FUZZ_NO_SKIP").is_some_and(|v| v == "1"))
}

/// Known run-time blow-ups of valid scenarios (see `FINDINGS.md`), skipped when running.
pub fn known_run_issue(t: &toml::Table) -> Option<&'static str> {
    if no_skip() {
        return None;
    }
    // F2: the train's shadowing grid covers [0, train.start_m + ...] in `radio.shadowing.grid_m`
    // steps. Validation now refuses maps beyond 2e7 cells (160 MB), but even that is too slow
    // for one fuzz iteration: far-away starts are validated, not run.
    let start = t
        .get("hst")
        .and_then(|h| h.get("train"))
        .and_then(|tr| tr.get("start_m"));
    if start
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        .is_some_and(|s| !(s <= 100_000.0))
    {
        return Some("F2");
    }
    None
}

/// Whether a scenario that validated is cheap enough to run in one fuzz iteration (a few ms to
/// ~100 ms): `duration_s <= MAX_RUN_S`, every `*_mbps` value <= MAX_RUN_MBPS, at most
/// MAX_RUN_FLOWS flows and MAX_RUN_LINKS links. Packet counts grow with rate × time, so this
/// bounds the work; the trace files in `data/` are all slower than MAX_RUN_MBPS.
pub fn cheap_to_run(text: &str) -> bool {
    let Ok(t) = text.parse::<toml::Table>() else {
        return false;
    };
    let num = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    let dur_ok = t.get("duration_s").and_then(num).is_some_and(|d| d <= MAX_RUN_S);
    let count = |k: &str| t.get(k).and_then(|v| v.as_array()).map_or(0, |a| a.len());
    dur_ok
        && count("flows") <= MAX_RUN_FLOWS
        && count("links") <= MAX_RUN_LINKS
        && rates_ok(&toml::Value::Table(t.clone()))
        && known_run_issue(&t).is_none()
}

fn rates_ok(v: &toml::Value) -> bool {
    match v {
        toml::Value::Array(a) => a.iter().all(rates_ok),
        toml::Value::Table(t) => t.iter().all(|(k, v)| {
            let fast = k.ends_with("_mbps")
                && v.as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .is_some_and(|x| !(x <= MAX_RUN_MBPS));
            !fast && rates_ok(v)
        }),
        _ => true,
    }
}

/// What every run's summary must satisfy, whatever the scenario: each flow's application saw
/// its bytes exactly once and in order (`delivery_errors == 0`), and delivered no more than
/// was sent (`bytes_delivered <= bytes_sent`). Panics (= a fuzz crash) otherwise.
pub fn check_summary(summary: &serde_json::Value) {
    let flows = summary["flows"].as_object().expect("summary has a `flows` object");
    for (name, f) in flows {
        assert_eq!(
            f["delivery_errors"].as_u64(),
            Some(0),
            "flow {name}: delivery errors: {f}"
        );
        let (d, s) = (f["bytes_delivered"].as_u64(), f["bytes_sent"].as_u64());
        assert!(
            matches!((d, s), (Some(d), Some(s)) if d <= s),
            "flow {name}: delivered {d:?} > sent {s:?}"
        );
    }
}
