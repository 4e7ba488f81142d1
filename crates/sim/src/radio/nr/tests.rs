use super::*;
use crate::core::rng::RngStreams;
use crate::core::time::{NS_PER_MS, NS_PER_S};
use crate::radio::config::{HstConfig, RrcTransport};
use crate::radio::effect::outages_and_spikes;
use crate::radio::handover::{simulate_handovers, HandoverEvent};

fn streams() -> (Rng, Rng) {
    let s = RngStreams::new(7);
    (s.stream("a"), s.stream("b"))
}

fn signalling(kind: HandoverType) -> HandoverConfig {
    HandoverConfig {
        model: HandoverModel::Signalling,
        kind: Some(kind),
        signalling: SignallingConfig {
            rach_failure: 0.0,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn run(
    cfg: &HandoverConfig,
    kind: HandoverType,
    trigger: Time,
    prepared: Option<Time>,
    src: f64,
    tgt: f64,
) -> TypedExecution {
    let (mut a, mut b) = streams();
    let source = move |_: Time| src;
    let target = move |_: Time| tgt;
    let radio = Radio {
        source_sinr_db: &source,
        target_sinr_db: &target,
    };
    execute(cfg, kind, trigger, 0, prepared, &radio, &mut a, &mut b)
}

#[test]
fn daps_keeps_the_source_until_the_release_and_hard_does_not() {
    let hard = run(
        &signalling(HandoverType::Hard),
        HandoverType::Hard,
        NS_PER_S,
        None,
        10.0,
        10.0,
    );
    let daps = run(
        &signalling(HandoverType::Daps),
        HandoverType::Daps,
        NS_PER_S,
        None,
        10.0,
        10.0,
    );
    assert_eq!(hard.x.outcome, HandoverOutcome::X2);
    assert_eq!(hard.outage_start, hard.x.start);
    assert!(hard.x.end - hard.outage_start >= 25 * NS_PER_MS, "{hard:?}");
    // Same draws, same access: DAPS differs only in what the link loses.
    assert_eq!((daps.x.start, daps.x.end), (hard.x.start, hard.x.end));
    assert_eq!(daps.outage_start, daps.x.end, "no interruption by default");
    let mut c = signalling(HandoverType::Daps);
    c.daps.interruption_ms = 3.0;
    let d3 = run(&c, HandoverType::Daps, NS_PER_S, None, 10.0, 10.0);
    assert_eq!(d3.x.end - d3.outage_start, 3 * NS_PER_MS);
}

#[test]
fn a_weak_target_fails_hard_into_reestablishment_and_daps_back_to_the_source() {
    let hard = run(
        &signalling(HandoverType::Hard),
        HandoverType::Hard,
        NS_PER_S,
        None,
        10.0,
        -10.0,
    );
    assert_eq!(hard.x.outcome, HandoverOutcome::HandoverFailure);
    assert!(hard.reestablishment >= 100 * NS_PER_MS, "{hard:?}");
    assert!(hard.x.end - hard.outage_start > hard.reestablishment);
    let daps = run(
        &signalling(HandoverType::Daps),
        HandoverType::Daps,
        NS_PER_S,
        None,
        10.0,
        -10.0,
    );
    assert_eq!(daps.x.outcome, HandoverOutcome::Fallback);
    assert_eq!(daps.outage_start, daps.x.end, "the source carried the flow throughout");
    assert_eq!(daps.reestablishment, 0);
    // A DAPS UE whose source is lost as well re-establishes, after the access failed.
    let both = run(
        &signalling(HandoverType::Daps),
        HandoverType::Daps,
        NS_PER_S,
        None,
        -8.0,
        -10.0,
    );
    assert!(matches!(
        both.x.outcome,
        HandoverOutcome::HandoverFailure | HandoverOutcome::RadioLinkFailure
    ));
    assert!(both.reestablishment > 0);
}

#[test]
fn a_prepared_cho_target_needs_no_command_at_execution() {
    let c = SignallingConfig::default();
    let prep = signalling::preparation(&c);
    let cho = signalling(HandoverType::Cho);
    let t = 5 * NS_PER_S;
    let prepared = run(&cho, HandoverType::Cho, t, Some(t - NS_PER_S), 10.0, 10.0);
    assert_eq!(prepared.x.start, t, "detach at the execution condition");
    let late = run(&cho, HandoverType::Cho, t, Some(t - prep / 2), 10.0, 10.0);
    assert_eq!(late.x.start, t + prep, "preparation not done in time: a hard handover");
    // A source that fades during the ~20 ms of a hard handover's preparation loses the command;
    // a prepared conditional handover has its configuration already.
    let mut radio_rrc = cho.clone();
    radio_rrc.signalling.rrc = RrcTransport::Radio;
    let fade = move |u: Time| if u > t + NS_PER_MS { -9.0 } else { 5.0 };
    let good = |_: Time| 5.0;
    let radio = Radio {
        source_sinr_db: &fade,
        target_sinr_db: &good,
    };
    let (mut a, mut b) = streams();
    let h = execute(&radio_rrc, HandoverType::Hard, t, 0, None, &radio, &mut a, &mut b);
    assert_eq!(h.x.outcome, HandoverOutcome::RadioLinkFailure);
    let (mut a, mut b) = streams();
    let c = execute(
        &radio_rrc,
        HandoverType::Cho,
        t,
        0,
        Some(t - NS_PER_S),
        &radio,
        &mut a,
        &mut b,
    );
    assert_eq!(c.x.outcome, HandoverOutcome::X2);
}

fn ride(kind: Option<HandoverType>, model: HandoverModel, speed: f64, seed: u64) -> (HstConfig, Vec<HandoverEvent>) {
    let mut cfg = HstConfig::default();
    cfg.train.speed_kmh = speed;
    cfg.handover.kind = kind;
    cfg.handover.model = model;
    cfg.handover.signalling.rrc = RrcTransport::Radio;
    // NR high-speed-train layout (TS 38.101-4 Annex B.3.3 HST-DPS: RRHs every 700 m, 150 m
    // from the track); the two operators half a spacing apart.
    cfg.radio.operators[0].spacing_m = 700.0;
    cfg.radio.operators[1].spacing_m = 700.0;
    cfg.radio.operators[0].lateral_m = 150.0;
    cfg.radio.operators[1].lateral_m = 150.0;
    cfg.radio.operators[1].offset_m = 350.0;
    cfg.handover.time_to_trigger_ms = 100;
    cfg.handover.l3_filter_k = 2;
    cfg.handover.hysteresis_db = 2.0;
    let ev = simulate_handovers(&cfg, seed, 30 * NS_PER_S);
    (cfg, ev)
}

#[test]
fn declared_hard_is_the_undeclared_model_in_the_fixed_model() {
    for seed in 1..4 {
        let (_, a) = ride(None, HandoverModel::Fixed, 300.0, seed);
        let (_, b) = ride(Some(HandoverType::Hard), HandoverModel::Fixed, 300.0, seed);
        assert!(!a.is_empty());
        let strip = |v: &[HandoverEvent]| -> Vec<HandoverEvent> {
            v.iter()
                .map(|e| HandoverEvent {
                    kind: None,
                    ..e.clone()
                })
                .collect()
        };
        assert_eq!(strip(&a), strip(&b));
    }
}

#[test]
fn daps_rides_leave_no_outage_where_hard_rides_leave_the_interruption() {
    let (cfg, hard) = ride(Some(HandoverType::Hard), HandoverModel::Signalling, 500.0, 3);
    let (dcfg, daps) = ride(Some(HandoverType::Daps), HandoverModel::Signalling, 500.0, 3);
    let ok = |v: &[HandoverEvent]| v.iter().filter(|e| e.outcome == HandoverOutcome::X2).count();
    assert!(ok(&hard) > 0 && ok(&daps) > 0);
    let (ho, _) = outages_and_spikes(&hard, 0, &cfg.handover);
    let (dout, _) = outages_and_spikes(&daps, 0, &dcfg.handover);
    let lost = |o: &[crate::radio::effect::Outage]| o.iter().filter(|o| o.end > o.start).count();
    assert!(lost(&ho) > 0);
    let daps_failures = daps
        .iter()
        .filter(|e| e.operator == 0 && e.outcome.lost_context())
        .count();
    assert_eq!(lost(&dout), daps_failures, "only failures interrupt a DAPS link");
}

#[test]
fn cho_fails_less_than_hard_at_500_kmh_on_the_same_seeds() {
    let failures = |kind| -> usize {
        (1..=12)
            .map(|seed| {
                let (_, ev) = ride(Some(kind), HandoverModel::Signalling, 500.0, seed);
                ev.iter().filter(|e| e.outcome.lost_context()).count()
            })
            .sum()
    };
    let (hard, cho) = (failures(HandoverType::Hard), failures(HandoverType::Cho));
    assert!(hard > 0, "no hard-handover failure to improve on");
    assert!(cho < hard, "CHO {cho} failures, hard {hard}");
}
