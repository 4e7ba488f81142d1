//! Handover tables (`HandoverTable::from_csv`): never panics; an accepted table has sorted,
//! disjoint, finite ranges (zero width allowed) with counts >= 1, and what `to_csv` writes of it reads back (except
//! ranges of any width: finding F3 in FINDINGS.md, fixed).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::hst::table::HandoverTable;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    let Ok(t) = HandoverTable::from_csv(text, "fuzz.csv") else {
        return;
    };
    for (op, ranges) in &t.operators {
        assert!(!op.is_empty() && !op.contains(','), "operator {op:?}");
        for r in ranges {
            // Zero-width ranges are valid since the F3 fix (a handover seen at one GPS position).
            assert!(
                r.start_m.is_finite()
                    && r.end_m.is_finite()
                    && 0.0 <= r.start_m
                    && r.start_m <= r.end_m
                    && r.count >= 1,
                "{op}: {r:?}"
            );
        }
        assert!(
            ranges.windows(2).all(|w| w[0].end_m < w[1].start_m),
            "{op}: ranges overlap: {ranges:?}"
        );
        let mid = (ranges[0].start_m + ranges[0].end_m) / 2.0;
        assert!(t.contains(op, mid));
    }
    // F3 (fixed): ranges narrower than `to_csv`'s 0.1 m read back with start == end.
    if let Err(e) = HandoverTable::from_csv(&t.to_csv(), "written.csv") {
        panic!(
            "a table read from CSV does not read back after to_csv: {e:?}\n{}",
            t.to_csv()
        );
    }
});
