//! The signalling handover model (`[hst.handover] model = "signalling"`) against the ns-3
//! LTE anchors: single NewReno over one operator dips 38 % (±25 %) in its handover windows, with an
//! in-order gap of 83–114 ms per handover.
mod common;
use common::*;
use std::path::Path;

/// P0's paper profile as a single-path TCP (`cc`) over operator A's link, with `extra` lines in
/// `[hst.handover]`.
fn single_tcp(cc: &str, extra: &str, duration_s: u32) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/p0/hst-minrtt.toml")).unwrap();
    let t = text.replace("paths = [\"via-a\", \"via-b\"]", "path = \"via-a\"").replace("cc = \"lia\"", &format!("cc = \"{cc}\""))
        .replace("scheduler = \"minrtt\"\n", "").replace("duration_s = 70", &format!("duration_s = {duration_s}"));
    assert!(t.contains("path = \"via-a\"") && !t.contains("scheduler"));
    t.replacen("[hst.handover]\n", &format!("[hst.handover]\n{extra}"), 1)
}

/// Per run: (dip %, in-order gaps ms) measured as `mobipath reproduce p0` does for Fig. 6(a):
/// per-second goodput (mean of the series' samples in each whole second); handover windows = the
/// seconds holding the start of one of operator A's handovers; dip = inside / outside − 1.
fn dip_and_gaps(text: &str, seed: u64) -> (f64, Vec<f64>, Vec<f64>) {
    let o = run_seed(text, seed);
    let hos: Vec<&serde_json::Value> = o.summary["handovers"].as_array().unwrap().iter().filter(|h| h["operator"] == "A").collect();
    let dur = f(&o.summary["duration_s"]) as i64;
    let starts: std::collections::BTreeSet<i64> = hos.iter().map(|h| (f(&h["start_s"]) + 1e-9).floor() as i64).collect();
    let mut per: std::collections::BTreeMap<i64, (f64, f64)> = Default::default();
    for (t, v) in series(&o, "flow", "mptcp", "goodput_mbps") {
        let s = (t + 1e-9).floor() as i64;
        if s < dur {
            let e = per.entry(s).or_default();
            e.0 += v;
            e.1 += 1.0;
        }
    }
    let (mut i, mut ni, mut x, mut nx) = (0.0, 0.0, 0.0, 0.0);
    for (s, (sum, n)) in per {
        if starts.contains(&s) { i += sum / n; ni += 1.0 } else { x += sum / n; nx += 1.0 }
    }
    let gaps = hos.iter().filter_map(|h| h["app_gap_ms"]["mptcp"].as_f64()).collect();
    let interr = hos.iter().map(|h| if h["outcome"] == "x2" { f(&h["interruption_ms"]) } else { -f(&h["interruption_ms"]) }).collect();
    ((i / ni) / (x / nx) * 100.0 - 100.0, gaps, interr)
}

fn mean_ci(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    // Student t, 97.5 %, for n − 1 = 2..=19 degrees of freedom.
    const T: [f64; 18] = [4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093];
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
            assert_eq!(h["outcome"], "x2", "no radio-link failure with ideal RRC in P0's geometry: {h}");
            assert!((f(&h["preparation_ms"]) - 20.0).abs() < 1e-6, "{h}");
            let (i, n) = (f(&h["interruption_ms"]), f(&h["rach_attempts"]));
            assert!(i >= 25.0 + 10.0 * (n - 1.0) - 1e-6 && i < 35.0 + 10.0 * (n - 1.0), "{h}");
            if h["operator"] == "A" {
                let ip = f(&h["ip_gap_ms"]);
                assert!(ip >= i + 10.0 - 1e-6 && ip < i + 10.0 + 2.0, "IP gap {ip} = interruption + 10 ms X2 (+ one transmission): {h}");
                gaps.push(f(&h["app_gap_ms"]["mptcp"]));
            }
            interruptions.push(i);
        }
    }
    interruptions.sort_by(f64::total_cmp);
    assert!(interruptions[interruptions.len() - 1] - interruptions[0] > 5.0, "drawn per handover: {interruptions:?}");
    let (m, _) = mean_ci(&gaps);
    assert!((83.0..=114.0).contains(&m), "single NewReno in-order gap {m:.1} ms (ns-3: 83–114): {gaps:?}");
}

/// The ns-3 anchors for single NewReno (dip −28.5 to −47.5 %, in-order gap 83–114 ms), met by the
/// signalling model only with NewReno **without SACK** (seeds 1–10: −36.6 ± 7.9 %, 103.8 ±
/// 6.1 ms). With SACK (Linux's default, and the P0 scenarios') the dip is −19.6 ± 2.4 % and
/// misses; CUBIC without SACK dips −37.3 ± 7.8 % against ns-3's ~−13 % (docs/handover-model.md).
/// This pins that calibration state; it does not establish that ns-3 ran without SACK.
#[test]
fn single_newreno_without_sack_meets_the_ns3_dip_and_gap_anchors() {
    let text = single_tcp("newreno", "model = \"signalling\"\n", 70).replace("cc = \"newreno\"\n", "cc = \"newreno\"\ntcp = { sack = false }\n");
    let (mut dips, mut gaps) = (Vec::new(), Vec::new());
    for seed in 1..=10 {
        let (d, g, _) = dip_and_gaps(&text, seed);
        dips.push(d);
        gaps.push(g.iter().sum::<f64>() / g.len() as f64);
    }
    let ((dm, dc), (gm, _)) = (mean_ci(&dips), mean_ci(&gaps));
    assert!((-47.5..=-28.5).contains(&dm), "dip {dm:.1} ± {dc:.1} % (ns-3: −38 % ± 25 %): {dips:?}");
    assert!((83.0..=114.0).contains(&gm), "in-order gap {gm:.1} ms (ns-3: 83–114): {gaps:?}");
}

/// With the RRC command sent over the source's radio (`rrc = "radio"`), a handover whose source
/// is below Qout before the command is a radio-link failure: the link stays down for N310 × 200 ms
/// + T310 + re-establishment (2.3 s with the defaults), nothing is forwarded over X2, and the
/// summary says so.
#[test]
fn a_too_late_handover_over_radio_rrc_is_a_radio_link_failure() {
    let text = single_tcp("newreno", "model = \"signalling\"\nsignalling = { rrc = \"radio\" }\n", 30);
    let o = run_seed(&text, 1);
    let hos = o.summary["handovers"].as_array().unwrap();
    let rlf: Vec<&serde_json::Value> = hos.iter().filter(|h| h["outcome"] == "rlf").collect();
    assert!(!rlf.is_empty(), "P0's A3 settings trigger late: the source is below −5 dB at some commands: {hos:?}");
    for h in &rlf {
        assert!((f(&h["interruption_ms"]) - 2300.0).abs() < 1e-6, "{h}");
        assert_eq!(f(&h["rach_attempts"]), 0.0);
        if h["operator"] == "A" {
            assert!(f(&h["ip_gap_ms"]) >= 2300.0, "{h}");
        }
    }
    assert!(f(&o.summary["links"]["lte-a.forward"]["drops_forwarding"]) > 0.0, "an RLF forwards nothing: what reaches the source is lost");
}

/// Bad signalling values are refused with the field's path and its allowed range.
#[test]
fn bad_signalling_values_name_the_field() {
    let text = single_tcp("newreno", "model = \"signalling\"\nsignalling = { rach_failure = 1.0, n310 = 0, x2_delay_ms = -1 }\n", 5);
    let e = format!("{:?}", mobipath_sim::api::run_toml(&text, "t.toml", Path::new("."), None, None).err().expect("refused"));
    for field in ["hst.handover.signalling.rach_failure", "hst.handover.signalling.n310", "hst.handover.signalling.x2_delay_ms"] {
        assert!(e.contains(field), "{field} not named in {e}");
    }
}

/// Measurement over seeds 1–10 of the full 70 s ride (not in CI: `--ignored --nocapture`).
#[test]
#[ignore]
fn measure_single_tcp_anchors() {
    let extra = std::env::var("HO_EXTRA").unwrap_or_default().replace("\\n", "\n");
    for cc in ["newreno", "cubic"] {
        let tail = std::env::var("HO_TAIL").unwrap_or_default().replace("\\n", "\n");
    let fx = std::env::var("FLOW_EXTRA").unwrap_or_default();
    let text = (single_tcp(cc, &extra, 70) + &tail).replace(&format!("cc = \"{cc}\"\n"), &format!("cc = \"{cc}\"\n{fx}\n"));
        let (mut dips, mut gaps, mut ints) = (Vec::new(), Vec::new(), Vec::new());
        for seed in 1..=10 {
            let (d, g, i) = dip_and_gaps(&text, seed);
            dips.push(d);
            gaps.push(g.iter().sum::<f64>() / g.len() as f64);
            ints.extend(i);
        }
        let (dm, dc) = mean_ci(&dips);
        let (gm, gc) = mean_ci(&gaps);
        let ok: Vec<f64> = ints.iter().cloned().filter(|&x| x >= 0.0).collect();
        let (im, ic) = mean_ci(&ok);
        eprintln!("{cc} [{extra}|{tail}|{fx}]: dip {dm:.1} ± {dc:.1} %, in-order gap {gm:.1} ± {gc:.1} ms (95 % CI over the 10 per-seed means); \
            X2 interruptions {im:.1} ± {ic:.1} ms (n = {}, min {:.1}, max {:.1}), failures (RLF/HO failure) {} of {}",
            ok.len(), ok.iter().cloned().fold(f64::INFINITY, f64::min), ok.iter().cloned().fold(0.0, f64::max), ints.len() - ok.len(), ints.len());
    }
}
