//! Track polylines (`hst::gps::GeoTrack::from_csv`): never panics; an accepted track has a
//! finite length, and projecting any of its own points gives a finite position within it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::hst::gps::GeoTrack;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    let Ok(track) = GeoTrack::from_csv(text, "fuzz.csv") else {
        return;
    };
    let len = track.length_m();
    assert!(len.is_finite() && len >= 0.0, "length {len}");
    for s in [0.0, len / 3.0, len, -1.0, len + 1.0] {
        let (lat, lon) = track.point_at(s);
        let (along, off) = track.project(lat, lon);
        assert!(
            along.is_finite() && (0.0..=len * (1.0 + 1e-9) + 1e-6).contains(&along) && off.is_finite(),
            "s {s}: along {along}, off {off}"
        );
    }
});
