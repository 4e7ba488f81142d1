//! mahimahi delivery-opportunity traces (`link::trace::parse_mahimahi`): never panics; what it
//! accepts is a non-empty, non-decreasing opportunity list whose period is its last time (> 0).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::link::capacity::Capacity;
use mobipath_sim::link::trace::parse_mahimahi;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    match parse_mahimahi(text) {
        Ok(Capacity::Opportunities { times, period }) => {
            assert!(
                period > 0 && times.last() == Some(&period),
                "period {period} vs last {:?}",
                times.last()
            );
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "times not sorted");
        }
        Ok(other) => panic!("mahimahi parsed into {other:?}"),
        Err(errs) => assert!(!errs.is_empty() && errs.iter().all(|e| !e.message.is_empty())),
    }
});
