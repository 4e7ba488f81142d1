//! P0 pieces end to end: handovers drive links, tables learned from runs cover held-out runs,
//! PHA keeps data off a subflow inside its handover range.
mod common;
use common::*;
use mobipath_sim::api::{learn_handover_table, run_toml};
use mobipath_sim::hst::scenario::TrainRun;
use mobipath_sim::hst::table::HandoverTable;
use mobipath_sim::scenario::Scenario;
use std::path::Path;

/// The P0 scenario with Linux's 6 MiB receive buffer instead of ns-3's 128 KiB: a saturated
/// connection, for the link-level calibration checks.
fn saturated(text: String) -> String {
    assert!(
        text.contains("rcv_buf_bytes = 131072"),
        "the P0 scenario sets ns-3's receive buffer"
    );
    text.replace("rcv_buf_bytes = 131072", "rcv_buf_bytes = 6291456")
}

/// `text` with `extra` keys added to its `[hst.handover]` table (the P0 scenarios have one).
fn handover(text: String, extra: &str) -> String {
    assert!(text.contains("[hst.handover]\n"), "no [hst.handover] table");
    text.replacen("[hst.handover]\n", &format!("[hst.handover]\n{extra}"), 1)
}

fn p0(sched: &str, table: Option<&str>) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0/hst-minrtt.toml"))
            .unwrap();
    let mut t = text.replace("scheduler = \"minrtt\"", &format!("scheduler = \"{sched}\""));
    if let Some(tb) = table {
        t = t.replacen("[hst]\n", &format!("[hst]\ntable = \"{tb}\"\n"), 1);
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
    let csv = learn_handover_table(&text, "p0.toml", Path::new("."), 50, 1, None, None, None).unwrap();
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
    assert!(
        inside as f64 >= 0.95 * total as f64,
        "{inside}/{total} held-out handovers inside the table"
    );
}

#[test]
fn pha_keeps_new_data_off_the_subflow_in_a_handover_range() {
    let dir = std::env::temp_dir().join(format!("mobipath-hst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = p0("minrtt", None);
    let csv = learn_handover_table(&text, "p0.toml", &dir, 20, 1, None, None, None).unwrap();
    std::fs::write(dir.join("table.csv"), &csv).unwrap();
    let o = run_toml(&p0("pha(minrtt)", Some("table.csv")), "p0.toml", &dir, None, None).expect("valid");
    let fl = &o.summary["flows"]["mptcp"];
    assert_eq!(fl["scheduler"], "pha(minrtt)");
    assert_eq!(f(&fl["delivery_errors"]), 0.0);
    // ns-3's 128 KiB receive buffer: the connection is window-limited below one link's 25 Mbit/s.
    assert!(f(&fl["goodput_mbps"]) > 20.0, "{}", fl["goodput_mbps"]);
}

/// PHA-D end to end: every B=1 goes out at least one RTT before the predicted range start, every
/// B=0 at most one RTT before the predicted end; the sender receives them and stops assigning.
#[test]
fn pha_d_mp_prio_timing_obeys_the_one_rtt_rules() {
    let dir = std::env::temp_dir().join(format!("mobipath-phad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = p0("minrtt", None);
    std::fs::write(
        dir.join("table.csv"),
        learn_handover_table(&text, "p0.toml", &dir, 20, 1, None, None, None).unwrap(),
    )
    .unwrap();
    let sc = p0("minrtt", Some("table.csv")).replace(
        "traffic = { kind = \"bulk\" }",
        "traffic = { kind = \"bulk\" }\nmptcp = { pha_d = { policy = \"paper\" } }",
    );
    let o = run_toml(&sc, "p0.toml", &dir, None, None).expect("valid");
    let fl = &o.summary["flows"]["mptcp"];
    let log = fl["pha_d_mp_prio"].as_array().unwrap();
    assert!(log.len() >= 8, "{log:?}");
    for p in log {
        let (lead, rtt) = (f(&p["predicted_lead_ms"]), f(&p["rtt_ms"]));
        if p["backup"].as_bool().unwrap() {
            assert!(
                lead >= rtt,
                "B=1 only {lead} ms before the predicted start (RTT {rtt}): {log:?}"
            );
        } else {
            assert!(lead <= rtt, "B=0 {lead} ms before the predicted end (RTT {rtt})");
        }
    }
    assert_eq!(
        f(&fl["mp_prio_received"]),
        f(&fl["mp_prio_sent"]),
        "no ACK is lost on these links"
    );
    assert_eq!(f(&fl["delivery_errors"]), 0.0);
}

/// The comparison baselines: the oracle (true handover times) and Park et al.'s subflow blocking
/// run, deliver everything in order, and shorten head-of-line blocking during handovers versus
/// plain minRTT on every one of three seeds, on a saturated connection (6 MiB receive buffer: with
/// ns-3's 128 KiB one minRTT often leaves a subflow idle and there is little HoL blocking to cut).
/// Subflow blocking is checked with lossless X2
/// forwarding (`source_buffer = "forward"`): with the default ns-3 behaviour the packets in the
/// source eNB's buffer are lost while blocking has cut the cwnd to one segment, there are too few
/// duplicate ACKs to recover them, and the subflow waits for its RTO (~400 ms stalls) — the "slow
/// recovery after the handover" P0 reports for Park et al.
#[test]
fn oracle_and_subflow_blocking_cut_hol_delay_during_handovers() {
    let p99 = |o: &mobipath_sim::api::RunOutput| f(&o.summary["flows"]["mptcp"]["hol_delay_in_handover_p99_ms"]);
    let lossless = "source_buffer = \"forward\"\n";
    for seed in 1..=3 {
        for (w, extra) in [("oracle(minrtt)", ""), ("block(minrtt)", lossless)] {
            let plain = run_seed(&handover(saturated(p0("minrtt", None)), extra), seed);
            let o = run_seed(&handover(saturated(p0(w, None)), extra), seed);
            assert_eq!(o.summary["flows"]["mptcp"]["scheduler"], w);
            assert_eq!(f(&o.summary["flows"]["mptcp"]["delivery_errors"]), 0.0);
            assert!(
                p99(&o) < p99(&plain),
                "seed {seed}: {w} HoL p99 {} vs plain {}",
                p99(&o),
                p99(&plain)
            );
        }
    }
}

/// X2 forwarding applied to the links, calibrated against the ns-3 numbers: with the
/// defaults every handover's IP-level delivery gap (last packet before the detach to the first
/// after, on that operator's link) is in the 40–60 ms ns-3 reports, and the connection-level
/// (application) gap around it is longer, because the source eNB's discarded buffer costs the
/// transport a round trip (ns-3: ~100 ms).
#[test]
fn handover_gaps_match_the_ns3_calibration() {
    let (mut ip, mut app) = (Vec::new(), Vec::new());
    for seed in 1..=3 {
        let o = run_seed(&saturated(p0("minrtt", None)), seed);
        for h in o.summary["handovers"].as_array().unwrap() {
            let g = f(&h["ip_gap_ms"]);
            assert!((40.0..=60.0).contains(&g), "seed {seed}: IP-level gap {g} ms at {h}");
            ip.push(g);
            app.push(f(&h["app_gap_ms"]["mptcp"]));
        }
        assert_eq!(f(&o.summary["flows"]["mptcp"]["delivery_errors"]), 0.0);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mi, ma) = (mean(&ip), mean(&app));
    eprintln!(
        "{} handovers: IP-level gap mean {mi:.1} ms, in-order gap mean {ma:.1} ms (min {:.1}, max {:.1})",
        ip.len(),
        app.iter().cloned().fold(f64::INFINITY, f64::min),
        app.iter().cloned().fold(0.0, f64::max)
    );
    assert!(ip.len() >= 20);
    // In-order gap: IP gap + the round trip in which the discarded packets are recovered.
    assert!(
        (80.0..=120.0).contains(&ma),
        "in-order gap mean {ma} ms (ns-3: ~100 ms)"
    );
    assert!(app.iter().all(|&a| a >= 40.0), "{app:?}");
}

/// With lossless forwarding (`source_buffer = "forward"`) nothing is lost and the in-order gap
/// shrinks to the IP-level gap; a forwarding loss drops about that fraction of forwarded packets.
#[test]
fn forwarding_policy_and_loss_reach_the_links() {
    // 3GPP lossless in both directions: the uplink is held too.
    let text = handover(saturated(p0("minrtt", None)), "source_buffer = \"forward\"\n")
        .replace("uplink = \"discard\"", "uplink = \"hold\"");
    let o = run(&text);
    for h in o.summary["handovers"].as_array().unwrap() {
        let (ip, app) = (f(&h["ip_gap_ms"]), f(&h["app_gap_ms"]["mptcp"]));
        assert!(
            (app - ip).abs() < 2.0,
            "lossless forwarding: in-order {app} vs IP {ip} ms"
        );
    }
    let links = &o.summary["links"];
    assert_eq!(f(&links["lte-a.forward"]["drops_forwarding"]), 0.0);
    assert!(f(&links["lte-a.forward"]["forwarded"]) > 100.0);
    let p = 0.2;
    let o = run(&handover(
        saturated(p0("minrtt", None)),
        &format!("source_buffer = \"forward\"\nforwarding_loss = {p}\n"),
    ));
    let (mut n, mut lost) = (0.0, 0.0);
    for l in ["lte-a.forward", "lte-b.forward"] {
        n += f(&o.summary["links"][l]["forwarded"]);
        lost += f(&o.summary["links"][l]["drops_forwarding"]);
    }
    let sd = (n * p * (1.0 - p)).sqrt();
    assert!(
        (lost - n * p).abs() < 4.0 * sd,
        "{lost} of {n} forwarded packets lost (p = {p})"
    );
    assert_eq!(
        f(&o.summary["links"]["lte-a.reverse"]["forwarded"]),
        0.0,
        "uplink ACKs are not forwarded"
    );
    assert_eq!(f(&o.summary["flows"]["mptcp"]["delivery_errors"]), 0.0);
}

/// `radio.capacity = sinr`: each operator's downlink follows its serving cell's SINR (lower at
/// cell edges) capped at `max_mbps`, so the run delivers less than with constant 25 Mbit/s and
/// never more than the two caps.
#[test]
fn sinr_capacity_drives_the_train_links() {
    let constant = run(&saturated(p0("minrtt", None)));
    let text = saturated(p0("minrtt", None)) + "\n[hst.radio.capacity]\nmode = \"sinr\"\nmax_mbps = 25\n";
    let o = run(&text);
    let g = |o: &mobipath_sim::api::RunOutput| f(&o.summary["flows"]["mptcp"]["goodput_mbps"]);
    assert!(g(&o) < 50.0 && g(&o) > 10.0, "{}", g(&o));
    assert!(
        g(&o) < g(&constant) - 0.5,
        "SINR {} vs constant {}",
        g(&o),
        g(&constant)
    );
    assert_eq!(f(&o.summary["flows"]["mptcp"]["delivery_errors"]), 0.0);
}

/// `[hst.gps_trace]`: a recorded `time_s,position_m` trace replaces the synthetic GPS sampler —
/// fed the sampler's own fixes it reproduces the run exactly; an NMEA log projected onto a
/// lat/lon track drives PHA-D too; malformed traces are reported with file and line.
#[test]
fn recorded_gps_traces_replace_the_sampler() {
    use mobipath_sim::hst::gps::{nmea_sentences, GeoTrack};
    let dir = std::env::temp_dir().join(format!("mobipath-gpstrace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = p0("minrtt", None);
    std::fs::write(
        dir.join("table.csv"),
        learn_handover_table(&text, "p0.toml", &dir, 20, 1, None, None, None).unwrap(),
    )
    .unwrap();
    let sc = Scenario::load(&text, "p0.toml", Path::new(".")).unwrap();
    let h = sc.file.hst.as_ref().unwrap();
    let synthetic = TrainRun::new(h, 1, 70_000_000_000);
    let mut csv = String::from("time_s,position_m\n");
    for &(t, p) in &synthetic.gps {
        csv.push_str(&format!("{},{p}\n", t as f64 / 1e9));
    }
    std::fs::write(dir.join("gps.csv"), csv).unwrap();
    let phad = |extra: &str| {
        p0("minrtt", Some("table.csv")).replace(
            "traffic = { kind = \"bulk\" }",
            "traffic = { kind = \"bulk\" }\nmptcp = { pha_d = { policy = \"paper\" } }",
        ) + extra
    };
    let base = run_toml(&phad(""), "p0.toml", &dir, None, None).unwrap();
    let replay = run_toml(
        &phad("[hst.gps_trace]\nfile = \"gps.csv\"\n"),
        "p0.toml",
        &dir,
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        replay.summary["flows"], base.summary["flows"],
        "the sampler's own fixes replayed give the same run"
    );

    // 10 Hz NMEA along a track heading east from 37.0 N 127.0 E, the train's true positions.
    let track = "lat,lon\n37.0,127.0\n37.0,127.2\n";
    std::fs::write(dir.join("track.csv"), track).unwrap();
    let g = GeoTrack::from_csv(track, "track.csv").unwrap();
    let mut nmea = String::new();
    for i in 0..700 {
        let (lat, lon) = g.point_at(synthetic.mobility.position_at(i * 100_000_000));
        nmea.push_str(&nmea_sentences(1_714_521_600.0 + i as f64 * 0.1, lat, lon));
    }
    std::fs::write(dir.join("run.nmea"), nmea).unwrap();
    let o = run_toml(
        &phad("[hst.gps_trace]\nfile = \"run.nmea\"\ntrack = \"track.csv\"\n"),
        "p0.toml",
        &dir,
        None,
        None,
    )
    .unwrap();
    let fl = &o.summary["flows"]["mptcp"];
    assert!(
        fl["pha_d_mp_prio"].as_array().unwrap().len() >= 8,
        "PHA-D acts on the NMEA positions: {}",
        fl["pha_d_mp_prio"]
    );
    assert_eq!(f(&fl["delivery_errors"]), 0.0);

    std::fs::write(dir.join("bad.csv"), "time_s,position_m\n0,1\n0.1,x\n").unwrap();
    std::fs::write(
        dir.join("bad.nmea"),
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48\n",
    )
    .unwrap();
    for (extra, want) in [
        (
            "[hst.gps_trace]\nfile = \"bad.csv\"\n",
            "bad.csv: line 3: position_m = x",
        ),
        (
            "[hst.gps_trace]\nfile = \"bad.nmea\"\ntrack = \"track.csv\"\n",
            "bad.nmea: line 1: checksum = 48",
        ),
        (
            "[hst.gps_trace]\nfile = \"nope.csv\"\n",
            "hst.gps_trace.file = nope.csv: cannot read",
        ),
    ] {
        let errs = run_toml(&phad(extra), "p0.toml", &dir, None, None).expect_err(extra);
        assert!(
            errs.iter().any(|e| e.to_string().starts_with(want)),
            "{extra}: {errs:?}"
        );
    }
}

/// Tables learned from recorded runs (NMEA + handover logs, here written from simulated runs)
/// cover held-out runs' handovers like tables learned from the simulated runs directly.
#[test]
fn tables_learned_from_recorded_runs_cover_held_out_handovers() {
    use mobipath_sim::api::{learn_handover_table_recorded, RecordedRunText};
    use mobipath_sim::hst::gps::{nmea_sentences, GeoTrack};
    let text = p0("minrtt", None);
    let sc = Scenario::load(&text, "p0.toml", Path::new(".")).unwrap();
    let h = sc.file.hst.as_ref().unwrap();
    let track = "lat,lon\n37.0,127.0\n37.0,127.05\n37.03,127.1\n";
    let g = GeoTrack::from_csv(track, "track.csv").unwrap();
    let t0 = 1_714_521_600.0;
    let runs: Vec<RecordedRunText> = (1..=20)
        .map(|seed| {
            let run = TrainRun::new(h, seed, 70_000_000_000);
            let mut nmea = String::new();
            for &(t, p) in run.gps.iter().step_by(10) {
                let (lat, lon) = g.point_at(p); // 10 Hz fixes with the sampler's GPS error
                nmea.push_str(&nmea_sentences(t0 + t as f64 / 1e9, lat, lon));
            }
            let mut log = String::from("operator,start,end\n");
            for e in &run.handovers {
                log.push_str(&format!(
                    "{},{},{}\n",
                    h.operator_name(e.operator),
                    t0 + e.start as f64 / 1e9,
                    t0 + e.end as f64 / 1e9
                ));
            }
            RecordedRunText {
                nmea,
                nmea_file: format!("run{seed}.nmea"),
                handovers: log,
                handovers_file: format!("run{seed}.csv"),
            }
        })
        .collect();
    let (csv, summary) =
        learn_handover_table_recorded(track, "track.csv", &runs, None, None, None, None, None).unwrap();
    assert!(summary.contains("from 20 runs"), "{summary}");
    let table = HandoverTable::from_csv(&csv, "t.csv").unwrap();
    let (mut inside, mut total) = (0, 0);
    for seed in 1000..1010 {
        for e in &TrainRun::new(h, seed, 70_000_000_000).handovers {
            total += 1;
            inside += table.contains(&h.operator_name(e.operator), e.position_m) as usize;
        }
    }
    assert!(
        inside as f64 >= 0.9 * total as f64,
        "{inside}/{total} held-out handovers inside the recorded-run table"
    );
    // A malformed log is reported with its file and line.
    let mut bad = runs[..1].to_vec();
    bad[0].handovers = "operator,start,end\nA,soon,later\n".into();
    let errs = learn_handover_table_recorded(track, "track.csv", &bad, None, None, None, None, None).unwrap_err();
    assert!(
        errs.iter()
            .any(|e| e.to_string().starts_with("run1.csv: line 2: start = soon")),
        "{errs:?}"
    );
}

/// The statistical test, on the paper profile (ns-3's 128 KiB receive buffer, LIA, 70 s):
/// over 10 seeds (1..=10, disjoint from the 50 table-learning seeds 1000..), PHA raises the
/// instantaneous throughput during handovers (goodput in the 1 s windows containing a handover
/// start) and lowers the mean HoL delay during handovers versus the same scheduler without PHA,
/// each by a one-sided paired t-test at the 5 % level (t > t(0.95, 9) = 1.833), for minRTT and
/// ECF. (With Linux's 6 MiB buffer it does not: see `report.md` of `mobipath reproduce p0`.)
#[test]
fn pha_raises_handover_throughput_and_cuts_hol_delay_over_seeds() {
    const SEEDS: u64 = 10;
    const T_95_DF9: f64 = 1.833;
    let dir = std::env::temp_dir().join(format!("mobipath-phastat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = p0("minrtt", None);
    std::fs::write(
        dir.join("table.csv"),
        learn_handover_table(&text, "p0.toml", &dir, 50, 1000, None, None, None).unwrap(),
    )
    .unwrap();
    let paired_t = |d: &[f64]| {
        let n = d.len() as f64;
        let m = d.iter().sum::<f64>() / n;
        let sd = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        (
            m,
            if sd > 0.0 {
                m / (sd / n.sqrt())
            } else if m > 0.0 {
                f64::INFINITY
            } else {
                0.0
            },
        )
    };
    for sched in ["minrtt", "ecf"] {
        let (mut thr, mut hol) = (Vec::new(), Vec::new());
        for seed in 1..=SEEDS {
            let go = |s: &str, t: Option<&str>| run_toml(&p0(s, t), "p0.toml", &dir, Some(seed), None).unwrap();
            let (plain, pha) = (go(sched, None), go(&format!("pha({sched})"), Some("table.csv")));
            let m = |o: &mobipath_sim::api::RunOutput, k: &str| f(&o.summary["flows"]["mptcp"][k]);
            assert_eq!(m(&pha, "delivery_errors"), 0.0);
            thr.push(m(&pha, "handover_goodput_mbps") - m(&plain, "handover_goodput_mbps"));
            hol.push(m(&plain, "hol_delay_in_handover_mean_ms") - m(&pha, "hol_delay_in_handover_mean_ms"));
        }
        let ((dt, tt), (dh, th)) = (paired_t(&thr), paired_t(&hol));
        eprintln!("{sched}: PHA - plain handover goodput {dt:+.2} Mbit/s (t = {tt:.1}); HoL mean in handovers {:+.2} ms (t = {th:.1}); {SEEDS} seeds", -dh);
        assert!(
            tt > T_95_DF9,
            "{sched}: PHA does not raise handover throughput: mean diff {dt:.3} Mbit/s, t = {tt:.2} ({thr:?})"
        );
        assert!(
            th > T_95_DF9,
            "{sched}: PHA does not lower HoL delay in handovers: mean diff {dh:.3} ms, t = {th:.2} ({hol:?})"
        );
    }
}

/// PHA-D with an uplink that loses what the UE sends during a handover interruption
/// (`handover.uplink = "discard"`): a B=0 MP_PRIO sent while the link is interrupted is lost, and
/// since Linux never repeats MP_PRIO, the 1-RTT rule leaves the subflow backup for the rest of
/// the run; the "re-send B=0" policy repeats it until data flows and recovers the subflow. With
/// the uplink held (`"hold"`) the same B=0 arrives late and the 1-RTT rule recovers too.
#[test]
fn a_lost_b0_mp_prio_leaves_the_path_backup_unless_re_sent() {
    let dir = std::env::temp_dir().join(format!("mobipath-uplink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = p0("minrtt", Some("table.csv"));
    let sc = Scenario::load(&p0("minrtt", None), "p0.toml", Path::new(".")).unwrap();
    let h = sc.file.hst.as_ref().unwrap();
    // A 500 ms interruption; the (hand-made) range of operator A's first handover ends 20 m
    // (240 ms at 300 km/h) after its start, so B=0, due one RTT before the range's end, is sent
    // inside the interruption.
    let first = TrainRun::new(h, 1, 70_000_000_000)
        .handovers
        .into_iter()
        .find(|e| e.operator == 0)
        .unwrap();
    let csv = format!(
        "operator,start_m,end_m,count\nA,{:.1},{:.1},1\n",
        first.position_m - 150.0,
        first.position_m + 20.0
    );
    std::fs::write(dir.join("table.csv"), csv).unwrap();
    assert!(
        base.contains("[hst.handover]\n") && base.contains("uplink = \"discard\""),
        "the P0 scenario loses the uplink in handovers"
    );
    let scenario = |policy: &str, uplink: &str| {
        base.replace(
            "traffic = { kind = \"bulk\" }",
            &format!("traffic = {{ kind = \"bulk\" }}\nmptcp = {{ pha_d = {{ policy = \"{policy}\" }} }}"),
        )
        .replace(
            "uplink = \"discard\"",
            &format!("interruption_ms = 500\nuplink = \"{uplink}\""),
        )
    };
    let go = |policy: &str, uplink: &str| {
        let o = run_toml(&scenario(policy, uplink), "p0.toml", &dir, None, None).unwrap();
        let fl = o.summary["flows"]["mptcp"].clone();
        let b0: Vec<f64> = fl["pha_d_mp_prio"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["backup"] == false)
            .map(|p| f(&p["t_s"]))
            .collect();
        (
            fl["subflows"][0]["backup_at_end"].as_bool().unwrap(),
            f(&fl["mp_prio_received"]),
            b0,
            f(&fl["subflows"][0]["goodput_mbps"]),
        )
    };
    let start = first.start as f64 / 1e9;
    let (backup, received, b0, gp_lost) = go("paper", "discard");
    assert_eq!(b0.len(), 1, "the 1-RTT rule sends B=0 once: {b0:?}");
    assert!(
        b0[0] >= start && b0[0] < start + 0.5,
        "B=0 at {} s, inside the interruption from {start} s",
        b0[0]
    );
    assert!(backup, "the lost B=0 leaves subflow 0 backup");
    assert_eq!(received, 1.0, "only B=1 reached the sender");
    let (backup, received, b0, gp_resend) = go("resend", "discard");
    assert!(
        !backup && b0.len() >= 2 && received >= 2.0,
        "re-sent B=0 recovers the subflow: {b0:?}, {received} received"
    );
    assert!(
        gp_resend > 2.0 * gp_lost + 1.0,
        "subflow 0 goodput {gp_resend} (re-send) vs {gp_lost} (1-RTT rule)"
    );
    let (backup, received, _, _) = go("paper", "hold");
    assert!(!backup && received == 2.0, "a held B=0 arrives after the interruption");
}

/// On the P0 paper profile (128 KiB shared receive buffer, window-limited), Linux's
/// receive-buffer optimisation (penalisation) keeps plain minRTT's goodput down between
/// handovers; `rcvbuf_optimisation = false` takes it away (no penalisations) and minRTT then
/// reaches about one path's window-limited rate. This is the issue-17 finding behind the large
/// average gain of PHA in `reproduce p0`.
#[test]
fn receive_buffer_optimisation_costs_minrtt_on_the_window_limited_p0_profile() {
    for seed in 1..=2 {
        let with = run_seed(&p0("minrtt", None), seed);
        let without = run_seed(
            &p0("minrtt", None).replace(
                "scheduler = \"minrtt\"",
                "scheduler = { name = \"minrtt\", rcvbuf_optimisation = false }",
            ),
            seed,
        );
        let (fw, fo) = (&with.summary["flows"]["mptcp"], &without.summary["flows"]["mptcp"]);
        assert_eq!(fo["scheduler"], "minrtt");
        assert!(
            f(&fw["penalisations"]) > 10.0 && f(&fo["penalisations"]) == 0.0,
            "{} / {}",
            fw["penalisations"],
            fo["penalisations"]
        );
        let (gw, go) = (f(&fw["goodput_mbps"]), f(&fo["goodput_mbps"]));
        assert!(
            go > gw + 2.0,
            "seed {seed}: {go} Mbit/s without vs {gw} with the optimisation"
        );
        assert_eq!(f(&fo["delivery_errors"]), 0.0);
    }
}

/// `[hst.harq]` reaches both directions of the train links: residual loss drops about the
/// configured fraction of the packets that leave each link, HARQ round trips raise the RTT by
/// about `bler` round trips per packet, delivery stays in order (no delivery errors), and a bad
/// value is refused with its field.
#[test]
fn harq_delay_and_residual_loss_reach_the_train_links() {
    let short = |extra: &str| p0("minrtt", None).replace("duration_s = 70", "duration_s = 20") + extra;
    let base = run(&short(""));
    let p = 0.005;
    let o = run(&short(&format!("\n[hst.harq]\nbler = 0\nresidual_loss = {p}\n")));
    for l in ["lte-a.forward", "lte-b.forward", "lte-a.reverse"] {
        let lost = f(&o.summary["links"][l]["drops_loss"]);
        let n = f(&o.summary["links"][l]["packets_delivered"]) + lost;
        // Losses come per 1 ms transport block (about 2 packets at 25 Mbit/s): a wider spread.
        let sd = (3.0 * n * p * (1.0 - p)).sqrt();
        assert!(
            n > 1000.0 && (lost - n * p).abs() < 4.0 * sd,
            "{l}: {lost} of {n} lost (p = {p})"
        );
    }
    assert_eq!(f(&base.summary["links"]["lte-a.forward"]["drops_loss"]), 0.0);
    let (fo, fb) = (&o.summary["flows"]["mptcp"], &base.summary["flows"]["mptcp"]);
    assert!(
        f(&fo["retransmission_ratio"]) > 0.5 * p,
        "{} vs {}",
        fo["retransmission_ratio"],
        fb["retransmission_ratio"]
    );
    assert_eq!(f(&fo["delivery_errors"]), 0.0);
    // HARQ delay only (no loss): in-order delivery, a higher smoothed RTT, no extra loss.
    let o = run(&short("\n[hst.harq]\nbler = 0.3\nmax_retx = 7\n"));
    let srtt = |o: &mobipath_sim::api::RunOutput| {
        let s = series(o, "subflow", "mptcp/via-a", "srtt_ms");
        s.iter().map(|x| x.1).sum::<f64>() / s.len() as f64
    };
    let (with, without) = (srtt(&o), srtt(&base));
    assert!(
        with > without + 3.0,
        "mean srtt {with} ms with HARQ vs {without} ms without"
    );
    assert_eq!(f(&o.summary["flows"]["mptcp"]["delivery_errors"]), 0.0);
    let err =
        Scenario::load(&short("\n[hst.harq]\nbler = 0.9\n"), "x.toml", Path::new(".")).expect_err("bler 0.9 refused");
    assert!(err.iter().any(|e| e.to_string().contains("hst.harq.bler")), "{err:?}");
}

// ---- The signalling handover model (`[hst.handover] model = "signalling"`) against the issue's
// ns-3 LTE anchors: single NewReno over one operator dips 38 % (±25 %) in its handover windows,
// with an in-order gap of 83–114 ms per handover (docs/handover-model.md). ----

/// P0's paper profile as a single-path TCP (`cc`) over operator A's link, with `extra` lines in
/// `[hst.handover]`.
fn single_tcp(cc: &str, extra: &str, duration_s: u32) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0/hst-minrtt.toml"))
            .unwrap();
    let t = text
        .replace("paths = [\"via-a\", \"via-b\"]", "path = \"via-a\"")
        .replace("cc = \"lia\"", &format!("cc = \"{cc}\""))
        .replace("scheduler = \"minrtt\"\n", "")
        .replace("duration_s = 70", &format!("duration_s = {duration_s}"));
    assert!(t.contains("path = \"via-a\"") && !t.contains("scheduler"));
    t.replacen("[hst.handover]\n", &format!("[hst.handover]\n{extra}"), 1)
}

/// One run's handover numbers (operator A).
struct HoNumbers {
    /// Fig. 6(a) dip as `mobipath reproduce p0` measures it (%): per-second goodput (mean of the
    /// series' samples in each whole second); handover windows = the seconds holding the start of
    /// one of operator A's handovers; dip = inside / outside − 1.
    dip: f64,
    /// Per handover: the in-order gap (ms).
    gaps: Vec<f64>,
    /// Per handover: the interruption (ms), negative for an RLF / handover failure.
    interr: Vec<f64>,
    /// Mean per-second goodput outside the handover windows (Mbit/s).
    outside: f64,
    /// Per handover, relative to the second before its start (mean of the goodput bins ending in
    /// (start − 1, start]): the goodput of the bins ending in (start, start + 1] − 1 (%), and of
    /// those ending in (start + 5, start + 6] as a fraction of it (%): the "dip around a handover" and "recovery five seconds
    /// later" read relative to the pre-handover rate. Handovers with less than 6 s of ride after
    /// them are left out.
    pre_dip: Vec<f64>,
    rec5: Vec<f64>,
    /// The flow's retransmission timeouts and fast retransmits (recovery episodes) in the run.
    timeouts: f64,
    fast_retransmits: f64,
}

fn dip_and_gaps(text: &str, seed: u64) -> HoNumbers {
    let o = run_seed(text, seed);
    let hos: Vec<&serde_json::Value> = o.summary["handovers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["operator"] == "A")
        .collect();
    let dur = f(&o.summary["duration_s"]) as i64;
    let starts: std::collections::BTreeSet<i64> =
        hos.iter().map(|h| (f(&h["start_s"]) + 1e-9).floor() as i64).collect();
    let mut per: std::collections::BTreeMap<i64, (f64, f64)> = Default::default();
    let g = series(&o, "flow", "mptcp", "goodput_mbps");
    for &(t, v) in &g {
        let s = (t + 1e-9).floor() as i64;
        if s < dur {
            let e = per.entry(s).or_default();
            e.0 += v;
            e.1 += 1.0;
        }
    }
    let (mut i, mut ni, mut x, mut nx) = (0.0, 0.0, 0.0, 0.0);
    for (s, (sum, n)) in per {
        if starts.contains(&s) {
            i += sum / n;
            ni += 1.0
        } else {
            x += sum / n;
            nx += 1.0
        }
    }
    let gaps = hos.iter().filter_map(|h| h["app_gap_ms"]["mptcp"].as_f64()).collect();
    let interr = hos
        .iter()
        .map(|h| {
            if h["outcome"] == "x2" {
                f(&h["interruption_ms"])
            } else {
                -f(&h["interruption_ms"])
            }
        })
        .collect();
    // A sample at t covers the bin [t, t + bin); a window [a, a + 1) takes the bins that end in
    // (a, a + 1], so the second before a handover holds none of it.
    let bin = g[1].0 - g[0].0;
    let mean_in = |a: f64| {
        let v: Vec<f64> = g
            .iter()
            .filter(|(t, _)| *t + bin > a + 1e-9 && *t + bin <= a + 1.0 + 1e-9)
            .map(|x| x.1)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (mut pre_dip, mut rec5) = (Vec::new(), Vec::new());
    for h in &hos {
        let s = f(&h["start_s"]);
        if s >= 1.0 && s + 6.0 <= dur as f64 {
            let pre = mean_in(s - 1.0);
            pre_dip.push(mean_in(s) / pre * 100.0 - 100.0);
            rec5.push(mean_in(s + 5.0) / pre * 100.0);
        }
    }
    let fl = &o.summary["flows"]["mptcp"];
    HoNumbers {
        dip: (i / ni) / (x / nx) * 100.0 - 100.0,
        gaps,
        interr,
        outside: x / nx,
        pre_dip,
        rec5,
        timeouts: f(&fl["timeouts"]),
        fast_retransmits: f(&fl["fast_retransmits"]),
    }
}

fn mean_ci(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    // Student t, 97.5 %, for n − 1 = 2..=19 degrees of freedom.
    const T: [f64; 18] = [
        4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
        2.101, 2.093,
    ];
    let t = if v.len() <= 20 { T[v.len() - 3] } else { 2.02 }; // df > 19: t ≤ 2.09, 2.02 at df 40
    (m, t * sd / n.sqrt())
}

/// The signalling model's interruptions are outputs: per handover, preparation = the steps
/// before the command (20 ms with the defaults), interruption = RRC processing + PRACH wait +
/// preamble attempts + complete (25–35 ms with one attempt, +10 ms per retry), the IP-level gap
/// = interruption + X2 forwarding; and single NewReno's in-order gap over 5 rides meets the ns-3
/// anchor of 83–114 ms.
#[test]
fn signalling_interruptions_are_outputs_and_the_in_order_gap_meets_the_anchor() {
    let text = single_tcp("newreno", "model = \"signalling\"\n", 70);
    let (mut gaps, mut interruptions) = (Vec::new(), Vec::new());
    for seed in 1..=5 {
        let o = run_seed(&text, seed);
        for h in o.summary["handovers"].as_array().unwrap() {
            assert_eq!(
                h["outcome"], "x2",
                "no radio-link failure with ideal RRC in P0's geometry: {h}"
            );
            assert!((f(&h["preparation_ms"]) - 20.0).abs() < 1e-6, "{h}");
            let (i, n) = (f(&h["interruption_ms"]), f(&h["rach_attempts"]));
            assert!(
                i >= 25.0 + 10.0 * (n - 1.0) - 1e-6 && i < 35.0 + 10.0 * (n - 1.0),
                "{h}"
            );
            if h["operator"] == "A" {
                let ip = f(&h["ip_gap_ms"]);
                assert!(
                    ip >= i + 10.0 - 1e-6 && ip < i + 10.0 + 2.0,
                    "IP gap {ip} = interruption + 10 ms X2 (+ one transmission): {h}"
                );
                gaps.push(f(&h["app_gap_ms"]["mptcp"]));
            }
            interruptions.push(i);
        }
    }
    interruptions.sort_by(f64::total_cmp);
    assert!(
        interruptions[interruptions.len() - 1] - interruptions[0] > 5.0,
        "drawn per handover: {interruptions:?}"
    );
    let (m, _) = mean_ci(&gaps);
    assert!(
        (83.0..=114.0).contains(&m),
        "single NewReno in-order gap {m:.1} ms (ns-3: 83–114): {gaps:?}"
    );
}

/// The ns-3 anchors for single NewReno (dip −28.5 to −47.5 %, in-order gap 83–114 ms), met by the
/// signalling model only with NewReno **without SACK** (seeds 1–10: −36.6 ± 7.9 %, 103.8 ±
/// 6.1 ms). With SACK (Linux's default, and the P0 scenarios') the dip is −19.6 ± 2.4 % and
/// misses; CUBIC without SACK dips −37.3 ± 7.8 % against ns-3's ~−13 % (docs/handover-model.md).
/// This pins that calibration state; it does not establish that ns-3 ran without SACK.
#[test]
fn single_newreno_without_sack_meets_the_ns3_dip_and_gap_anchors() {
    let text = single_tcp("newreno", "model = \"signalling\"\n", 70)
        .replace("cc = \"newreno\"\n", "cc = \"newreno\"\ntcp = { sack = false }\n");
    let (mut dips, mut gaps) = (Vec::new(), Vec::new());
    for seed in 1..=10 {
        let r = dip_and_gaps(&text, seed);
        dips.push(r.dip);
        gaps.push(r.gaps.iter().sum::<f64>() / r.gaps.len() as f64);
    }
    let ((dm, dc), (gm, _)) = (mean_ci(&dips), mean_ci(&gaps));
    assert!(
        (-47.5..=-28.5).contains(&dm),
        "dip {dm:.1} ± {dc:.1} % (ns-3: −38 % ± 25 %): {dips:?}"
    );
    assert!(
        (83.0..=114.0).contains(&gm),
        "in-order gap {gm:.1} ms (ns-3: 83–114): {gaps:?}"
    );
}

/// The ns-3 anchors for single TCP (NewReno dips 38–49 % around a handover, CUBIC ~13 %, in-order
/// gap 83–114 ms) read against the second before each handover (`HoNumbers::pre_dip`), met by the
/// two ns-3 semantics that decide the window reduction (docs/handover-model.md §4): NewReno
/// halves the flight (ns-3 `TcpNewReno::GetSsThresh(tcb, BytesInFlight())`), and cwnd grows
/// while the 128 KiB receive window limits the flight (ns-3 `TcpNewReno`, and `TcpCubic` before
/// ns-3.42). Then CUBIC's 0.7 × cwnd stays above the flight and never bites (its dip is the
/// in-order gap alone), while NewReno's half of the flight always does. Seeds 1–10 (95 % CIs):
/// NewReno −44.9 ± 1.2 %, gap 100.5 ± 0.9 ms, CUBIC −11.2 ± 0.1 %; with Linux's semantics CUBIC
/// dips −22.4 ± 0.1 % and misses. About 2 s of CI.
#[test]
fn the_ns3_profile_meets_the_single_tcp_anchors_and_linux_semantics_miss_cubics() {
    let ns3 = "tcp = { reno_ssthresh = \"flight\", cwnd_validation = false }\n";
    let run = |cc: &str, fx: &str, seeds: u64| {
        let text = single_tcp(cc, "model = \"signalling\"\n", 70)
            .replace(&format!("cc = \"{cc}\"\n"), &format!("cc = \"{cc}\"\n{fx}"));
        let (mut pre, mut gaps) = (Vec::new(), Vec::new());
        for seed in 1..=seeds {
            let r = dip_and_gaps(&text, seed);
            pre.push(r.pre_dip.iter().sum::<f64>() / r.pre_dip.len() as f64);
            gaps.push(r.gaps.iter().sum::<f64>() / r.gaps.len() as f64);
        }
        (mean_ci(&pre), mean_ci(&gaps).0)
    };
    let ((nm, nc), ngap) = run("newreno", ns3, 10);
    assert!(
        nm - nc >= -47.5 && nm + nc <= -28.5,
        "ns-3 profile NewReno dip {nm:.1} ± {nc:.1} % (ns-3: −38 % ± 25 %)"
    );
    assert!(
        (83.0..=114.0).contains(&ngap),
        "ns-3 profile NewReno in-order gap {ngap:.1} ms (ns-3: 83–114)"
    );
    // reno_ssthresh does not apply to CUBIC (a scenario refuses it there): ns-3's CUBIC also
    // reduces from cwnd.
    let ((cm, cc), _) = run("cubic", "tcp = { cwnd_validation = false }\n", 10);
    assert!(
        cm - cc >= -13.0 * 1.25 && cm + cc <= -13.0 * 0.75,
        "ns-3 profile CUBIC dip {cm:.1} ± {cc:.1} % (ns-3: ~−13 %)"
    );
    let ((lm, lc), _) = run("cubic", "", 3);
    assert!(
        lm + lc < -13.0 * 1.25,
        "Linux semantics: CUBIC's 0.7 × a validated cwnd bites ({lm:.1} ± {lc:.1} %)"
    );
}

/// With the RRC command sent over the source's radio (`rrc = "radio"`), a handover whose source
/// is below Qout before the command is a radio-link failure: the link stays down for N310 × 200 ms
/// plus T310 + re-establishment (2.3 s with the defaults), nothing is forwarded over X2, and the
/// summary says so.
#[test]
fn a_too_late_handover_over_radio_rrc_is_a_radio_link_failure() {
    let text = single_tcp(
        "newreno",
        "model = \"signalling\"\nsignalling = { rrc = \"radio\" }\n",
        30,
    );
    let o = run_seed(&text, 1);
    let hos = o.summary["handovers"].as_array().unwrap();
    let rlf: Vec<&serde_json::Value> = hos.iter().filter(|h| h["outcome"] == "rlf").collect();
    assert!(
        !rlf.is_empty(),
        "P0's A3 settings trigger late: the source is below −5 dB at some commands: {hos:?}"
    );
    for h in &rlf {
        assert!((f(&h["interruption_ms"]) - 2300.0).abs() < 1e-6, "{h}");
        assert_eq!(f(&h["rach_attempts"]), 0.0);
        if h["operator"] == "A" {
            assert!(f(&h["ip_gap_ms"]) >= 2300.0, "{h}");
        }
    }
    assert!(
        f(&o.summary["links"]["lte-a.forward"]["drops_forwarding"]) > 0.0,
        "an RLF forwards nothing: what reaches the source is lost"
    );
}

/// Bad signalling values are refused with the field's path and its allowed range.
#[test]
fn bad_signalling_values_name_the_field() {
    let text = single_tcp(
        "newreno",
        "model = \"signalling\"\nsignalling = { rach_failure = 1.0, n310 = 0, x2_delay_ms = -1 }\n",
        5,
    );
    let e = format!(
        "{:?}",
        mobipath_sim::api::run_toml(&text, "t.toml", Path::new("."), None, None).expect_err("refused")
    );
    for field in [
        "hst.handover.signalling.rach_failure",
        "hst.handover.signalling.n310",
        "hst.handover.signalling.x2_delay_ms",
    ] {
        assert!(e.contains(field), "{field} not named in {e}");
    }
}

/// Measurement over seeds 1–10 of the full 70 s ride (not in CI: `--ignored --nocapture`):
/// single TCP over operator A, both readings of the dip (docs/handover-model.md §4), the in-order
/// gap, the recovery at +5 s, RTOs and fast retransmits. HO_EXTRA = `[hst.handover]` lines,
/// HO_TAIL = an appended section, FLOW_EXTRA = a flow line, TEXT_SUB = `from=>to;;…`
/// replacements, CCS = algorithms (`newreno,cubic`), SEEDS = seed count (≤ 20).
#[test]
#[ignore]
fn measure_single_tcp_anchors() {
    let extra = std::env::var("HO_EXTRA").unwrap_or_default().replace("\\n", "\n");
    // CCS="newreno,cubic" and SEEDS=10 (seeds 1..=SEEDS) by default.
    let ccs = std::env::var("CCS").unwrap_or("newreno,cubic".into());
    let seeds: u64 = std::env::var("SEEDS")
        .map(|s| s.parse().expect("SEEDS: a count"))
        .unwrap_or(10);
    for cc in ccs.split(',') {
        let tail = std::env::var("HO_TAIL").unwrap_or_default().replace("\\n", "\n");
        let fx = std::env::var("FLOW_EXTRA").unwrap_or_default();
        let text = (single_tcp(cc, &extra, 70) + &tail)
            .replace(&format!("cc = \"{cc}\"\n"), &format!("cc = \"{cc}\"\n{fx}\n"));
        // TEXT_SUB="from=>to;;from=>to": plain text substitutions in the scenario (e.g. the link queue).
        let text = std::env::var("TEXT_SUB")
            .unwrap_or_default()
            .split(";;")
            .filter(|r| !r.is_empty())
            .fold(text, |t, r| {
                let (a, b) = r.split_once("=>").expect("TEXT_SUB: from=>to");
                assert!(t.contains(a), "TEXT_SUB: {a} not in the scenario");
                t.replace(a, &b.replace("\\n", "\n"))
            });
        let (mut dips, mut gaps, mut ints, mut outs, mut pre, mut rec) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut tos, mut frs) = (Vec::new(), Vec::new());
        for seed in 1..=seeds {
            let r = dip_and_gaps(&text, seed);
            outs.push(r.outside);
            dips.push(r.dip);
            gaps.push(r.gaps.iter().sum::<f64>() / r.gaps.len() as f64);
            ints.extend(r.interr);
            pre.push(r.pre_dip.iter().sum::<f64>() / r.pre_dip.len() as f64);
            rec.push(r.rec5.iter().sum::<f64>() / r.rec5.len() as f64);
            tos.push(r.timeouts);
            frs.push(r.fast_retransmits);
        }
        let ((tm, tc), (fm, fc)) = (mean_ci(&tos), mean_ci(&frs));
        let ((pm, pc), (rm, rc)) = (mean_ci(&pre), mean_ci(&rec));
        let (dm, dc) = mean_ci(&dips);
        let (gm, gc) = mean_ci(&gaps);
        let ok: Vec<f64> = ints.iter().cloned().filter(|&x| x >= 0.0).collect();
        let (im, ic) = mean_ci(&ok);
        let (om, oc) = mean_ci(&outs);
        eprintln!("{cc} [{extra}|{tail}|{fx}]: goodput outside {om:.2} ± {oc:.2} Mbit/s, dip {dm:.1} ± {dc:.1} %, in-order gap {gm:.1} ± {gc:.1} ms, \
            vs the second before: dip {pm:.1} ± {pc:.1} %, at +5 s {rm:.1} ± {rc:.1} %; per run {tm:.1} ± {tc:.1} RTOs, {fm:.1} ± {fc:.1} fast retransmits (95 % CIs over the {seeds} per-seed means); \
            X2 interruptions {im:.1} ± {ic:.1} ms (n = {}, min {:.1}, max {:.1}), failures (RLF/HO failure) {} of {}",
            ok.len(), ok.iter().cloned().fold(f64::INFINITY, f64::min), ok.iter().cloned().fold(0.0, f64::max), ints.len() - ok.len(), ints.len());
    }
}

/// Where PHA's average gain comes from (not in CI: `--ignored --nocapture`): the paper profile as
/// in [`paper_profile`], per class of second — W = holds a handover start (either operator), P =
/// one of the 4 seconds after a W second, F = the rest — PHA's gain paired by seed, the plain
/// goodput, scheduler waits and retransmitted segments, seeds 1–10. SCHEDS = schedulers, WRAP =
/// the wrapper (`pha`, `oracle`), FLOW_EXTRA = a flow line, HO_EXTRA = `[hst.handover]` lines.
#[test]
#[ignore]
fn measure_pha_gain_by_window() {
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0/hst-minrtt.toml"))
            .unwrap();
    let table = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/p0/table.csv")
        .canonicalize()
        .unwrap();
    let extra_ho = std::env::var("HO_EXTRA")
        .unwrap_or("model = \"signalling\"\n".into())
        .replace("\\n", "\n");
    for sched in std::env::var("SCHEDS").unwrap_or("blest,minrtt".into()).split(',') {
        let opt = if sched == "peekaboo" {
            String::new()
        } else {
            ", rcvbuf_optimisation = false".into()
        };
        let mk = |pha: bool| {
            let wrap = std::env::var("WRAP").unwrap_or("pha".into());
            let name = if pha {
                format!("{wrap}({sched})")
            } else {
                sched.to_string()
            };
            let t = base
                .replace(
                    "scheduler = \"minrtt\"",
                    &format!("scheduler = {{ name = \"{name}\"{opt} }}"),
                )
                .replace("[hst.handover]\n", &format!("[hst.handover]\n{extra_ho}"))
                .replace(
                    "traffic = { kind = \"bulk\" }\n",
                    &format!(
                        "traffic = {{ kind = \"bulk\" }}\n{}\n",
                        std::env::var("FLOW_EXTRA").unwrap_or_default()
                    ),
                );
            if pha {
                t.replace("[hst]\n", &format!("[hst]\ntable = \"{}\"\n", table.display()))
            } else {
                t
            }
        };
        // Per seed, per class of second: W = holds a handover start, P = one of the 4 seconds after
        // a W second (not W), F = the rest. Mean per-second goodput per class.
        let classes = |o: &mobipath_sim::api::RunOutput| {
            let dur = f(&o.summary["duration_s"]) as i64;
            let w: std::collections::BTreeSet<i64> = o.summary["handovers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (f(&h["start_s"]) + 1e-9).floor() as i64)
                .collect();
            let g = series(o, "flow", "mptcp", "goodput_mbps");
            let mut acc = [(0.0, 0.0); 3];
            for s in 0..dur {
                let v: Vec<f64> = g
                    .iter()
                    .filter(|(t, _)| (t + 1e-9).floor() as i64 == s)
                    .map(|x| x.1)
                    .collect();
                let m = v.iter().sum::<f64>() / v.len().max(1) as f64;
                let c = if w.contains(&s) {
                    0
                } else if (1..=4).any(|k| w.contains(&(s - k))) {
                    1
                } else {
                    2
                };
                acc[c].0 += m;
                acc[c].1 += 1.0;
            }
            (
                acc.map(|(a, n)| a / n),
                f(&o.summary["flows"]["mptcp"]["scheduler_waits"]),
                f(&o.summary["flows"]["mptcp"]["segments_retransmitted"]),
            )
        };
        let (mut gw, mut gp, mut gf, mut gall, mut wp, mut wq, mut rp, mut rq, mut pl) = (
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![[0.0; 3]; 0],
        );
        for seed in 1..=10 {
            let (a, b) = (run_seed(&mk(false), seed), run_seed(&mk(true), seed));
            let ((ca, wa, ra), (cb, wb, rb)) = (classes(&a), classes(&b));
            gw.push(cb[0] / ca[0] * 100.0 - 100.0);
            gp.push(cb[1] / ca[1] * 100.0 - 100.0);
            gf.push(cb[2] / ca[2] * 100.0 - 100.0);
            gall.push(
                f(&b.summary["flows"]["mptcp"]["goodput_mbps"]) / f(&a.summary["flows"]["mptcp"]["goodput_mbps"])
                    * 100.0
                    - 100.0,
            );
            wp.push(wa);
            wq.push(wb);
            rp.push(ra);
            rq.push(rb);
            pl.push(ca);
        }
        let p = |v: &[f64]| {
            let (m, c) = mean_ci(v);
            format!("{m:+.2} ± {c:.2}")
        };
        let col = |k: usize| pl.iter().map(|x| x[k]).collect::<Vec<f64>>();
        eprintln!("{sched} [{}]: PHA gain average {} %, in W (handover-start seconds) {} %, in P (4 s after) {} %, in F (rest) {} %; plain Mbit/s W {} P {} F {}; waits plain {} PHA {}; retransmitted segments plain {} PHA {} (10 seeds, 95 % CI)",
            extra_ho.trim(), p(&gall), p(&gw), p(&gp), p(&gf), p(&col(0)), p(&col(1)), p(&col(2)), p(&wp), p(&wq), p(&rp), p(&rq));
    }
}

/// P0's paper profile (MPTCP, LIA, 128 KiB shared receive buffer, the shipped table learned from
/// seeds 100000–100049) with the signalling handover model, the receive-buffer optimisation off
/// (Peekaboo never applies it) and `extra` added to the flow: per scheduler, over held-out seeds
/// 1..=`seeds`, (PHA average gain %, PHA handover-window gain %, plain retransmission ratio %),
/// each as the per-seed values (gains paired by seed).
fn paper_profile(sched: &str, extra: &str, seeds: u64, duration_s: u32) -> [Vec<f64>; 3] {
    let r = paper_profile_runs(sched, extra, seeds, duration_s);
    [r[0].clone(), r[1].clone(), r[2].clone()]
}

/// As [`paper_profile`], plus the plain runs' goodput in the handover windows (Mbit/s) and p99
/// head-of-line delay inside them (ms).
fn paper_profile_runs(sched: &str, extra: &str, seeds: u64, duration_s: u32) -> [Vec<f64>; 5] {
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0/hst-minrtt.toml"))
            .unwrap();
    let table = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/p0/table.csv")
        .canonicalize()
        .unwrap();
    let opt = if sched == "peekaboo" || std::env::var("PP_OPT_ON").is_ok() {
        ""
    } else {
        ", rcvbuf_optimisation = false"
    };
    let mk = |pha: bool| {
        let name = if pha {
            format!("pha({sched})")
        } else {
            sched.to_string()
        };
        let t = base
            .replace(
                "scheduler = \"minrtt\"",
                &format!("scheduler = {{ name = \"{name}\"{opt} }}"),
            )
            .replace("[hst.handover]\n", "[hst.handover]\nmodel = \"signalling\"\n")
            .replace(
                "traffic = { kind = \"bulk\" }\n",
                &format!("traffic = {{ kind = \"bulk\" }}\n{extra}\n"),
            )
            .replace("duration_s = 70", &format!("duration_s = {duration_s}"));
        assert!(t.contains(&format!("\"{name}\"")) && t.contains("model = \"signalling\"") && t.contains(extra));
        if pha {
            t.replace("[hst]\n", &format!("[hst]\ntable = \"{}\"\n", table.display()))
        } else {
            t
        }
    };
    let (plain, pha) = (mk(false), mk(true));
    let mut out = [vec![], vec![], vec![], vec![], vec![]];
    for seed in 1..=seeds {
        let (a, b) = (run_seed(&plain, seed), run_seed(&pha, seed));
        let (fa, fb) = (&a.summary["flows"]["mptcp"], &b.summary["flows"]["mptcp"]);
        out[0].push(f(&fb["goodput_mbps"]) / f(&fa["goodput_mbps"]) * 100.0 - 100.0);
        out[1].push(f(&fb["handover_goodput_mbps"]) / f(&fa["handover_goodput_mbps"]) * 100.0 - 100.0);
        out[2].push(f(&fa["retransmission_ratio"]) * 100.0);
        out[3].push(f(&fa["handover_goodput_mbps"]));
        out[4].push(f(&fa["hol_delay_in_handover_p99_ms"]));
    }
    out
}

/// BLEST + PHA's average gain above P0's [0, +5] % is BLEST's own recovery after a handover, not
/// PHA acting outside the handover windows: with Linux's cwnd validation a handover halves the
/// window of the subflow BLEST favours, and BLEST keeps waiting for it (its other subflow idles
/// with a stale, handover-inflated srtt) for ~4 s after the window, which PHA avoids; with
/// ns-3's semantics (cwnd grows while the 128 KiB receive window limits the flight) the halving
/// does not bite and the gain falls inside the target (docs/handover-model.md §5; seeds 1–10:
/// +7.17 ± 1.05 % vs +0.89 ± 0.19 %). Two seeds here (about 4 s of CI).
#[test]
fn blest_phas_average_gain_is_the_post_handover_recovery_that_ns3_cwnd_semantics_remove() {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let [linux, _, _] = paper_profile("blest", "", 2, 70);
    let [ns3, ns3_ho, _] = paper_profile("blest", "tcp = { cwnd_validation = false }", 2, 70);
    assert!(
        mean(&linux) > 5.0,
        "Linux semantics: BLEST + PHA average gain {linux:?} % (seeds 1–10: +7.17 ± 1.05)"
    );
    assert!(
        (0.0..=5.0).contains(&mean(&ns3)),
        "ns-3 semantics: BLEST + PHA average gain {ns3:?} % (P0: +1.87)"
    );
    assert!(
        mean(&ns3_ho) > 5.0,
        "and PHA still gains in the handover windows: {ns3_ho:?} %"
    );
}

/// Measurement of the paper-profile targets (not in CI: `--ignored --nocapture`; PP_EXTRA = the
/// flow line, PP_SEEDS = seed count).
#[test]
#[ignore]
fn measure_paper_profile() {
    let extra = std::env::var("PP_EXTRA").unwrap_or_default();
    let seeds = std::env::var("PP_SEEDS").map(|s| s.parse().unwrap()).unwrap_or(10);
    for sched in ["minrtt", "ecf", "blest", "peekaboo"] {
        let [a, h, r, w, hol] = paper_profile_runs(sched, &extra, seeds, 70);
        let p = |v: &[f64]| {
            let (m, c) = mean_ci(v);
            format!("{m:+.2} ± {c:.2}")
        };
        eprintln!("{sched} [{extra}]: PHA average gain {} %, handover-window gain {} %, plain retransmission ratio {} %; plain in the windows {} Mbit/s, HoL p99 {} ms ({seeds} seeds, 95 % CI)", p(&a), p(&h), p(&r), p(&w), p(&hol));
    }
}
