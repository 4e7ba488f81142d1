//! Regression tests for the fuzzing findings (crates/sim/fuzz/FINDINGS.md), each of which failed
//! before its fix.
use mobipath_sim::api::{learn_handover_table, validate_toml};
use mobipath_sim::hst::table::HandoverTable;
use std::path::Path;

const ONE_FLOW: &str = r#"
[[links]]
name = "a"
rate_mbps = 20
delay_ms = 20
[[paths]]
name = "pa"
links = ["a"]
[[flows]]
name = "m"
path = "pa"
cc = "reno"
traffic = { kind = "bulk" }
"#;

/// F1: a long non-ASCII string is accepted where it is valid, and an error naming the field
/// where it is not, never a panic.
#[test]
fn f1_long_non_ascii_strings_do_not_panic() {
    let desc = "description = \"Zwei LTE Pfade an einem Zug mit 300km/h: alle 16s eine Übergabe, gemäß P0\"\n";
    let text = format!("{desc}duration_s = 1\n{ONE_FLOW}");
    assert_eq!(validate_toml(&text, "f1.toml", Path::new(".")), vec![]);
    let text = format!("duration_s = \"{}{}\"\n{ONE_FLOW}", "a".repeat(55), "é".repeat(10));
    let errs = validate_toml(&text, "f1.toml", Path::new("."));
    assert!(errs.iter().any(|e| e.field == "duration_s"), "{errs:?}");
}

/// F3: a table learned with `--margin-m 0` from a 1 Hz GPS reads back (and can be accumulated
/// into).
#[test]
fn f3_table_learned_without_margin_reads_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0");
    let text =
        std::fs::read_to_string(dir.join("hst-minrtt.toml")).unwrap() + "[hst.train]\ngps = { period_ms = 1000 }\n";
    let csv = learn_handover_table(&text, "hst-minrtt.toml", &dir, 3, 1, Some(0.0), None, None).expect("learns");
    HandoverTable::from_csv(&csv, "learned.csv").expect("the learned table reads back");
    learn_handover_table(&text, "hst-minrtt.toml", &dir, 1, 1, Some(0.0), Some(&csv), None).expect("and accumulates");
}

/// F4: a byte queue that cannot hold one of the flow's packets is refused, naming the field.
#[test]
fn f4_queue_smaller_than_a_packet_is_refused() {
    let text = format!(
        "duration_s = 1\n{}",
        ONE_FLOW.replace("delay_ms = 20", "delay_ms = 20\nqueue_bytes = 1500")
    ) + "tcp = { mss_bytes = 9000 }\n";
    let errs = validate_toml(&text, "f4.toml", Path::new("."));
    assert!(
        errs.iter().any(|e| e.field.starts_with("links[0].queue_bytes")),
        "{errs:?}"
    );
}

/// F2: a train that starts a million kilometres down the track is refused instead of
/// allocating a radio map of gigabytes.
#[test]
fn f2_a_train_far_down_the_track_is_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0");
    let text = std::fs::read_to_string(dir.join("hst-minrtt.toml")).unwrap() + "[hst.train]\nstart_m = 1e9\n";
    let errs = validate_toml(&text, "f2.toml", &dir);
    assert!(
        errs.iter()
            .any(|e| e.field == "hst.train.start_m" && e.message.contains("radio-map cells")),
        "{errs:?}"
    );
}
