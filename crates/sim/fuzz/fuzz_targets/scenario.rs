//! Scenario loader: TOML text → `validate_toml`; when it validates and is cheap (see
//! `cheap_to_run`: ≤ 1 s simulated, ≤ 100 Mbit/s), `run_toml` must accept it too and its
//! summary must satisfy `check_summary`, and a second run must give the same summary. Relative
//! file names resolve against `data/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::api::{run_toml, validate_toml};
use mobipath_sim_fuzz::{cheap_to_run, check_summary, data_dir, known_issue, may_validate, text};

fuzz_target!(|data: &[u8]| {
    let Some(text) = text(data) else { return };
    if !may_validate(text) || known_issue(text).is_some() {
        return;
    }
    let dir = data_dir();
    let errs = validate_toml(text, "fuzz.toml", &dir);
    for e in &errs {
        assert!(!e.message.is_empty(), "an error without a message: {e:?}");
    }
    if !errs.is_empty() || !cheap_to_run(text) {
        return;
    }
    match run_toml(text, "fuzz.toml", &dir, None, None) {
        Ok(out) => {
            check_summary(&out.summary);
            // Deterministic: the same text and seed give the same summary.
            let again = run_toml(text, "fuzz.toml", &dir, None, None).expect("second run");
            assert!(
                again.summary == out.summary,
                "two runs differ:\n{}\n{}",
                out.summary,
                again.summary
            );
        }
        Err(e) => panic!("validate_toml accepted the scenario but run_toml refused it: {e:?}"),
    }
});
