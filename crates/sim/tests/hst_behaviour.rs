//! P0 pieces end to end: handovers drive links, tables learned from runs cover held-out runs,
//! PHA keeps data off a subflow inside its handover range.
mod common;
use common::*;
use mobipath_sim::api::{learn_handover_table, run_toml};
use mobipath_sim::hst::scenario::TrainRun;
use mobipath_sim::hst::table::HandoverTable;
use mobipath_sim::scenario::Scenario;
use std::path::Path;

fn p0(sched: &str, table: Option<&str>) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0/hst-minrtt.toml")).unwrap();
    let mut t = text.replace("scheduler = \"minrtt\"", &format!("scheduler = \"{sched}\""));
    if let Some(tb) = table {
        t.push_str(&format!("table = \"{tb}\"\n"));
    }
    t
}

#[test]
fn handovers_are_reported_and_interrupt_their_operators_link() {
    let o = run(&p0("minrtt", None));
    let hos = o.summary["handovers"].as_array().unwrap().clone();
    assert!(hos.len() >= 6, "a 70 s ride at 300 km/h crosses several cells: {hos:?}");
    // Both operators hand over during the ride, and never at the same time (default layout).
    let ops: std::collections::BTreeSet<&str> = hos.iter().map(|h| h["operator"].as_str().unwrap()).collect();
    assert_eq!(ops.len(), 2);
    for a in &hos {
        for b in &hos {
            if a["operator"] != b["operator"] {
                let (s1, e1, s2, e2) = (f(&a["start_s"]), f(&a["end_s"]), f(&b["start_s"]), f(&b["end_s"]));
                assert!(e1 <= s2 || e2 <= s1, "simultaneous handovers {a} {b}");
            }
        }
    }
}

/// Tables learned from 50 runs contain ≥ 95 % of the true handover positions of held-out runs.
#[test]
fn learned_table_covers_held_out_runs() {
    let text = p0("minrtt", None);
    let csv = learn_handover_table(&text, "p0.toml", Path::new("."), 50, 1, None, None).unwrap();
    let table = HandoverTable::from_csv(&csv, "t.csv").unwrap();
    let sc = Scenario::load(&text, "p0.toml", Path::new(".")).unwrap();
    let h = sc.file.hst.as_ref().unwrap();
    let (mut inside, mut total) = (0, 0);
    for seed in 1000..1020 {
        let run = TrainRun::new(h, seed, 70_000_000_000);
        for e in &run.handovers {
            total += 1;
            if table.contains(&h.operator_name(e.operator), e.position_m) {
                inside += 1;
            }
        }
    }
    assert!(total > 50);
    assert!(inside as f64 >= 0.95 * total as f64, "{inside}/{total} held-out handovers inside the table");
}

#[test]
fn pha_keeps_new_data_off_the_subflow_in_a_handover_range() {
    let dir = std::env::temp_dir().join(format!("mobipath-hst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = p0("minrtt", None);
    let csv = learn_handover_table(&text, "p0.toml", &dir, 20, 1, None, None).unwrap();
    std::fs::write(dir.join("table.csv"), &csv).unwrap();
    let o = run_toml(&p0("pha(minrtt)", Some("table.csv")), "p0.toml", &dir, None, None).expect("valid");
    let fl = &o.summary["flows"]["mptcp"];
    assert_eq!(fl["scheduler"], "pha(minrtt)");
    assert_eq!(f(&fl["delivery_errors"]), 0.0);
    assert!(f(&fl["goodput_mbps"]) > 40.0, "{}", fl["goodput_mbps"]);
}

/// PHA-D end to end: every B=1 goes out at least one RTT before the predicted range start, every
/// B=0 at most one RTT before the predicted end; the sender receives them and stops assigning.
#[test]
fn pha_d_mp_prio_timing_obeys_the_one_rtt_rules() {
    let dir = std::env::temp_dir().join(format!("mobipath-phad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = p0("minrtt", None);
    std::fs::write(dir.join("table.csv"), learn_handover_table(&text, "p0.toml", &dir, 20, 1, None, None).unwrap()).unwrap();
    let sc = p0("minrtt", Some("table.csv")).replace("traffic = { kind = \"bulk\" }", "traffic = { kind = \"bulk\" }\nmptcp = { pha_d = { policy = \"paper\" } }");
    let o = run_toml(&sc, "p0.toml", &dir, None, None).expect("valid");
    let fl = &o.summary["flows"]["mptcp"];
    let log = fl["pha_d_mp_prio"].as_array().unwrap();
    assert!(log.len() >= 8, "{log:?}");
    for p in log {
        let (lead, rtt) = (f(&p["predicted_lead_ms"]), f(&p["rtt_ms"]));
        if p["backup"].as_bool().unwrap() {
            assert!(lead >= rtt, "B=1 only {lead} ms before the predicted start (RTT {rtt}): {log:?}");
        } else {
            assert!(lead <= rtt, "B=0 {lead} ms before the predicted end (RTT {rtt})");
        }
    }
    assert_eq!(f(&fl["mp_prio_received"]), f(&fl["mp_prio_sent"]), "no ACK is lost on these links");
    assert_eq!(f(&fl["delivery_errors"]), 0.0);
}

/// The comparison baselines: the oracle (true handover times) and Park et al.'s subflow blocking
/// run, deliver everything in order, and shorten head-of-line blocking during handovers versus
/// plain minRTT on every one of three seeds.
#[test]
fn oracle_and_subflow_blocking_cut_hol_delay_during_handovers() {
    let p99 = |o: &mobipath_sim::api::RunOutput| f(&o.summary["flows"]["mptcp"]["hol_delay_in_handover_p99_ms"]);
    for seed in 1..=3 {
        let plain = run_seed(&p0("minrtt", None), seed);
        for w in ["oracle(minrtt)", "block(minrtt)"] {
            let o = run_seed(&p0(w, None), seed);
            assert_eq!(o.summary["flows"]["mptcp"]["scheduler"], w);
            assert_eq!(f(&o.summary["flows"]["mptcp"]["delivery_errors"]), 0.0);
            assert!(p99(&o) < p99(&plain), "seed {seed}: {w} HoL p99 {} vs plain {}", p99(&o), p99(&plain));
        }
    }
}
