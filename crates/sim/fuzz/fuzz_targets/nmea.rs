//! NMEA 0183 logs (`hst::gps::parse_nmea`): never panics; accepted fixes are on the globe, in
//! strictly increasing time order, and not empty. Each input is parsed as it is, and again with
//! every sentence's checksum made right, so mutations of the fields are not all stopped at the
//! checksum.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::hst::gps::parse_nmea;

fn check(text: &str) {
    match parse_nmea(text, "fuzz.nmea") {
        Ok(fixes) => {
            assert!(!fixes.is_empty());
            for f in &fixes {
                assert!(
                    f.time_s.is_finite() && f.lat.abs() <= 90.0 && f.lon.abs() <= 180.0,
                    "{f:?}"
                );
            }
            assert!(
                fixes.windows(2).all(|w| w[0].time_s < w[1].time_s),
                "fixes not in time order"
            );
        }
        Err(errs) => assert!(!errs.is_empty()),
    }
}

/// `$body*hh` with `hh` recomputed, for every line with a `$` … `*`.
fn fix_checksums(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split_inclusive('\n') {
        let l = line.trim_end_matches(['\r', '\n']);
        match (l.strip_prefix('$'), l.rfind('*')) {
            (Some(_), Some(star)) if star > 0 => {
                let ck = l[1..star].bytes().fold(0u8, |a, b| a ^ b);
                out.push_str(&format!("{}*{ck:02X}\n", &l[..star]));
            }
            _ => out.push_str(line),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    check(text);
    check(&fix_checksums(text));
});
