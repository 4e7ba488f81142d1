//! Handover logs of recorded runs (`hst::gps::parse_handover_log`): never panics; accepted
//! entries have an operator and finite times with end >= start.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::hst::gps::parse_handover_log;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    if let Ok(hs) = parse_handover_log(text, "fuzz.csv") {
        for h in &hs {
            assert!(
                !h.operator.is_empty() && h.start_s.is_finite() && h.end_s.is_finite() && h.end_s >= h.start_s,
                "{h:?}"
            );
        }
    }
});
