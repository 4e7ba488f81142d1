//! Position traces for `[hst.gps_trace]` (`hst::gps::parse_position_trace`): never panics;
//! accepted fixes are finite, non-negative times in non-decreasing order.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::hst::gps::parse_position_trace;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    if let Ok(fixes) = parse_position_trace(text, "fuzz.csv") {
        assert!(!fixes.is_empty());
        assert!(fixes.iter().all(|&(t, p)| t.is_finite() && t >= 0.0 && p.is_finite()));
        assert!(fixes.windows(2).all(|w| w[0].0 <= w[1].0));
    }
});
