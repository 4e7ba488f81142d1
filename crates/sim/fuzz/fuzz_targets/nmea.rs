//! NMEA 0183 logs (`hst::gps::parse_nmea`): never panics; accepted fixes are on the globe, in
//! strictly increasing time order, and not empty.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::hst::gps::parse_nmea;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else { return };
    match parse_nmea(text, "fuzz.nmea") {
        Ok(fixes) => {
            assert!(!fixes.is_empty());
            for f in &fixes {
                assert!(f.time_s.is_finite() && f.lat.abs() <= 90.0 && f.lon.abs() <= 180.0, "{f:?}");
            }
            assert!(fixes.windows(2).all(|w| w[0].time_s < w[1].time_s), "fixes not in time order");
        }
        Err(errs) => assert!(!errs.is_empty()),
    }
});
