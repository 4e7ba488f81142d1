//! LTE UE CQI traces (`cell::config::parse_cqi_trace`): never panics; what it accepts is a
//! non-empty list of rows whose times never decrease and whose CQIs are in [0, 15]; a refusal
//! names the line.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::cell::config::parse_cqi_trace;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    match parse_cqi_trace(text, 10.0) {
        Ok(rows) => {
            assert!(!rows.is_empty(), "accepted with no rows");
            assert!(rows.windows(2).all(|w| w[0].0 <= w[1].0), "times decrease");
            assert!(rows.iter().all(|r| r.1 <= 15 && r.2 <= 15), "CQI out of range");
        }
        Err(e) => assert!(e.starts_with("line ") || e == "no rows", "{e}"),
    }
});
