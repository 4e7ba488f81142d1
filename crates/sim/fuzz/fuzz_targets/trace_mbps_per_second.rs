//! Per-second Mbit/s traces (`link::trace::parse_mbps_per_second`, both missing-second
//! policies): never panics; what it accepts is a schedule starting at 0, strictly increasing,
//! inside its period, with some capacity.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::link::capacity::Capacity;
use mobipath_sim::link::config::MissingPolicy;
use mobipath_sim::link::trace::parse_mbps_per_second;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    for missing in [MissingPolicy::Zero, MissingPolicy::Hold] {
        match parse_mbps_per_second(text, missing) {
            Ok(Capacity::Schedule {
                points,
                period: Some(p),
            }) => {
                assert_eq!(points.first().map(|q| q.0), Some(0));
                assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "not strictly increasing");
                assert!(points.last().unwrap().0 < p, "a point at or after the period");
                assert!(points.iter().any(|q| q.1 > 0), "no capacity");
            }
            Ok(other) => panic!("per-second trace parsed into {other:?}"),
            Err(errs) => assert!(!errs.is_empty()),
        }
    }
});
