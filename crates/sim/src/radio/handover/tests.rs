use super::*;
use crate::core::time::{to_ms_f64, NS_PER_MS, NS_PER_S};

const RUN: Time = 70 * NS_PER_S;
const RUNS: u64 = 10;

fn runs(cfg: &HstConfig, seeds: std::ops::Range<u64>) -> Vec<Vec<HandoverEvent>> {
    seeds.map(|s| simulate_handovers(cfg, s, RUN)).collect()
}

/// Distance past the midpoint between the source and target sites (signed, in travel direction).
fn past_midpoint(cfg: &HstConfig, e: &HandoverEvent) -> f64 {
    let op = &cfg.radio.operators[e.operator];
    let mid = op.offset_m + (e.from_cell + e.to_cell) as f64 / 2.0 * op.spacing_m;
    e.position_m - mid
}

#[test]
fn calibration_report() {
    // Not an assertion: prints the numbers docs/train.md quotes (`--nocapture`).
    let cfg = HstConfig::default();
    for (label, all) in [
        ("default environment, 10 runs", runs(&cfg, 0..RUNS)),
        (
            "10 environments x 1 run",
            (0..RUNS)
                .map(|s| {
                    simulate_handovers(
                        &HstConfig {
                            environment_seed: s,
                            ..Default::default()
                        },
                        s,
                        RUN,
                    )
                })
                .collect(),
        ),
        (
            "50 environments x 1 run",
            (0..50)
                .map(|s| {
                    simulate_handovers(
                        &HstConfig {
                            environment_seed: s,
                            ..Default::default()
                        },
                        s,
                        RUN,
                    )
                })
                .collect(),
        ),
    ] {
        println!("{label}:");
        for op in 0..2 {
            let evs: Vec<&HandoverEvent> = all.iter().flatten().filter(|e| e.operator == op).collect();
            let per_min = evs.len() as f64 / (all.len() as f64 * 70.0 / 60.0);
            let fwd: Vec<f64> = evs
                .iter()
                .filter(|e| e.to_cell > e.from_cell)
                .map(|e| past_midpoint(&cfg, e))
                .collect();
            let mean_past = fwd.iter().sum::<f64>() / fwd.len() as f64;
            let gap = evs.iter().map(|e| to_ms_f64(e.end - e.start)).sum::<f64>() / evs.len() as f64;
            let back = evs.iter().filter(|e| e.to_cell < e.from_cell).count();
            println!("  operator {op}: {per_min:.2} HO/min, forward HOs {mean_past:.0} m past midpoint on average, interruption {gap:.0} ms, {back} backward (ping-pong) of {}", evs.len());
        }
    }
}

#[test]
fn handover_rate_per_operator_is_about_three_per_minute() {
    // 10 runs in 10 different environments (one environment alone is a single sample of the line).
    let all: Vec<Vec<HandoverEvent>> = (0..RUNS)
        .map(|s| {
            simulate_handovers(
                &HstConfig {
                    environment_seed: s,
                    ..Default::default()
                },
                s,
                RUN,
            )
        })
        .collect();
    for op in 0..2 {
        let n: usize = all.iter().map(|r| r.iter().filter(|e| e.operator == op).count()).sum();
        let per_min = n as f64 / (RUNS as f64 * 70.0 / 60.0);
        assert!(
            (2.5..=4.5).contains(&per_min),
            "operator {op}: {per_min} handovers per minute"
        );
    }
}

#[test]
fn default_layout_never_hands_over_both_operators_together() {
    let cfg = HstConfig::default();
    for (seed, evs) in runs(&cfg, 0..RUNS).iter().enumerate() {
        let (a, b) = (of_operator(evs, 0), of_operator(evs, 1));
        assert!(!a.is_empty() && !b.is_empty());
        let sim = simultaneous_handovers(&a, &b, NS_PER_S);
        assert!(sim.is_empty(), "run {seed}: {sim:?}");
    }
}

#[test]
fn aligned_layout_produces_reported_simultaneous_handovers() {
    let mut cfg = HstConfig::default();
    cfg.radio.operators[1].offset_m = 0.0;
    cfg.radio.shadowing.sigma_db = 0.0; // the same sites' geometry: identical borders
    cfg.radio.shadowing.run_sigma_db = 0.0;
    let evs = simulate_handovers(&cfg, 1, RUN);
    let (a, b) = (of_operator(&evs, 0), of_operator(&evs, 1));
    let sim = simultaneous_handovers(&a, &b, NS_PER_S);
    assert!(sim.len() >= 3, "{sim:?}");
    // With the real shadowing most of them still collide.
    cfg.radio.shadowing = Default::default();
    let evs = simulate_handovers(&cfg, 1, RUN);
    let sim = simultaneous_handovers(&of_operator(&evs, 0), &of_operator(&evs, 1), 2 * NS_PER_S);
    assert!(sim.len() >= 2, "{sim:?}");
}

#[test]
fn same_seeds_give_identical_events() {
    let cfg = HstConfig {
        environment_seed: 42,
        ..Default::default()
    };
    assert_eq!(simulate_handovers(&cfg, 7, RUN), simulate_handovers(&cfg, 7, RUN));
    assert_ne!(simulate_handovers(&cfg, 7, RUN), simulate_handovers(&cfg, 8, RUN));
}

/// For each handover in `a`, the distance to the nearest handover of the same operator in `b`.
fn nearest_distances(a: &[HandoverEvent], b: &[HandoverEvent]) -> Vec<f64> {
    a.iter()
        .map(|x| {
            b.iter()
                .filter(|y| y.operator == x.operator)
                .map(|y| (x.position_m - y.position_m).abs())
                .fold(f64::INFINITY, f64::min)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[test]
fn the_environment_fixes_where_handovers_happen() {
    let env_a = HstConfig {
        environment_seed: 1,
        ..Default::default()
    };
    let env_b = HstConfig {
        environment_seed: 2,
        ..Default::default()
    };
    let ref_run = simulate_handovers(&env_a, 100, RUN);
    let mut same = Vec::new();
    let mut other = Vec::new();
    for seed in 101..106 {
        same.extend(nearest_distances(&simulate_handovers(&env_a, seed, RUN), &ref_run));
        other.extend(nearest_distances(&simulate_handovers(&env_b, seed, RUN), &ref_run));
    }
    let close = same.iter().filter(|&&d| d <= 30.0).count() as f64 / same.len() as f64;
    assert!(
        close >= 0.8,
        "only {close} of same-environment handovers within 30 m: {same:?}"
    );
    let (m_same, m_other) = (median(same), median(other));
    assert!(
        m_other > 2.0 * m_same + 10.0,
        "same env median {m_same} m, other env median {m_other} m"
    );
}

#[test]
fn a3_ignores_an_excursion_shorter_than_ttt() {
    let cfg = HandoverConfig::default(); // 3 dB, 256 ms
    let mut a3 = A3::new(&cfg);
    let period = 40 * NS_PER_MS;
    // Neighbour 5 dB above the serving cell for 200 ms (5 samples spanning 160 ms), then back.
    for k in 0..20u64 {
        let neigh = if (5..10).contains(&k) { -75.0 } else { -90.0 };
        assert_eq!(a3.step(k * period, &[-80.0, neigh], 0), None, "fired at sample {k}");
    }
    // Above threshold for 7 samples: fires on the one where 256 ms have elapsed (t0 + 280 ms).
    let mut fired = None;
    for k in 20..40u64 {
        let neigh = if k >= 25 { -75.0 } else { -90.0 };
        if let Some(t) = a3.step(k * period, &[-80.0, neigh], 0) {
            fired = Some((k, t));
            break;
        }
    }
    assert_eq!(fired, Some((32, 1)));
    // Exactly at the hysteresis is not enough (strictly greater, TS 36.331 §5.5.4.4).
    let mut a3 = A3::new(&cfg);
    for k in 0..20u64 {
        assert_eq!(a3.step(k * period, &[-80.0, -77.0], 0), None);
    }
}

#[test]
fn a3_with_zero_ttt_fires_at_once_and_picks_the_strongest() {
    let cfg = HandoverConfig {
        time_to_trigger_ms: 0,
        ..Default::default()
    };
    let mut a3 = A3::new(&cfg);
    assert_eq!(a3.step(0, &[-80.0, -76.0, -70.0, -90.0], 0), Some(2));
}

#[test]
fn l3_filter_smooths_with_rrc_default_coefficient() {
    let mut f = L3Filter::new(4); // a = 1/2
    let mut m = vec![-80.0, f64::NEG_INFINITY];
    f.apply(&mut m);
    assert_eq!(m, vec![-80.0, f64::NEG_INFINITY]);
    let mut m = vec![-70.0, -60.0];
    f.apply(&mut m);
    assert_eq!(m, vec![-75.0, -60.0]);
}

#[test]
fn handovers_move_forward_and_last_the_interruption() {
    let cfg = HstConfig::default();
    let evs = simulate_handovers(&cfg, 3, RUN);
    for e in &evs {
        assert_eq!(e.end - e.start, 40 * NS_PER_MS);
        assert!(e.from_cell != e.to_cell);
    }
    for op in 0..2 {
        let mine = of_operator(&evs, op);
        for w in mine.windows(2) {
            assert!(w[1].start >= w[0].end, "overlapping handovers {w:?}");
            assert_eq!(w[1].from_cell, w[0].to_cell, "serving cell chain broken");
        }
    }
}
