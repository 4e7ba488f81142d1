//! Learning a handover table from a recorded run (`api::learn_handover_table_recorded`): the
//! input is a track CSV, an NMEA log and a handover log separated by lines `%%`. Never panics;
//! a learned table reads back with `HandoverTable::from_csv`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_sim::api::{learn_handover_table_recorded, RecordedRunText};
use mobipath_sim::hst::table::HandoverTable;

fuzz_target!(|data: &[u8]| {
    let Some(text) = mobipath_sim_fuzz::text(data) else {
        return;
    };
    let mut parts = text.splitn(3, "%%\n");
    let (Some(track), Some(nmea), Some(log)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let run = RecordedRunText {
        nmea: nmea.into(),
        nmea_file: "run.nmea".into(),
        handovers: log.into(),
        handovers_file: "run.csv".into(),
    };
    if let Ok((csv, _)) = learn_handover_table_recorded(track, "track.csv", &[run], None, None, None, None, None) {
        if let Err(e) = HandoverTable::from_csv(&csv, "learned.csv") {
            panic!("learned table does not read back: {e:?}\n{csv}");
        }
    }
});
