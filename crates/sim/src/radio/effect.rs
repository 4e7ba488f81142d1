//! What handovers do to a link: outages, delay spikes of forwarded data, and capacity.
//!
//! Semantics (the link layer applies them; see `link::capacity` for outages):
//! - **Outage** `[start, end)`: the handover interruption. Nothing is delivered; queued packets are
//!   *held* (not dropped) and go out afterwards (`OutageQueued::Hold` in the link model).
//! - **Delay spike** `{start, end, extra_delay, loss_prob, queued_loss}`: downlink packets arriving
//!   at the source eNB during `[start, end)` are forwarded over X2 to the target (TS 36.300
//!   §10.1.2.1, §10.1.2.3) and go out no earlier than `end + extra_delay`, each lost with
//!   `loss_prob` (forwarding is best effort). Packets already in the source's buffer at the detach
//!   are lost with `queued_loss`: 1 with `source_buffer = "discard"` (default; ns-3 LENA, the
//!   calibration source), `loss_prob` with `"forward"` (3GPP lossless forwarding). The link layer
//!   applies this as `link::Forwarding`. With the defaults the first packet after a handover
//!   arrives 40 + 10 = 50 ms (+ one transmission) after the last one before it (the IP-level gap),
//!   and the transport recovers the discarded packets one round trip later (the in-order gap,
//!   ~100 ms in an MPTCP run: see `tests/hst_behaviour.rs`).
//! - **Capacity**: per-UE downlink rate, either constant (P0: 25 Mbit/s) or from the serving cell's
//!   SINR with the attenuated Shannon bound of TR 36.942 Annex A.2 (downlink: α = 0.6,
//!   SINR_min = −10 dB, SINR_max = 22 dB → 4.4 bit/s/Hz), over the occupied bandwidth
//!   N_RB·180 kHz, capped at `max_mbps` (a UE's share of the cell), as a piecewise-constant schedule.
use super::config::{CapacityConfig, HandoverConfig, HandoverModel, HandoverType, HstConfig, SourceBuffer};
use super::handover::{HandoverEvent, HstRun};
use super::layout::resource_blocks;
use super::signalling::HandoverOutcome;
use crate::core::time::{from_ms_f64, Time};

/// A span in which the link delivers nothing (queued packets are held).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    pub start: Time,
    pub end: Time,
}

/// Packets held in `[start, end)` are delivered no earlier than `end + extra_delay`; those
/// arriving during it are lost with `loss_prob`, those already queued at `start` with
/// `queued_loss` (1 with `source_buffer = "discard"`, else `loss_prob`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelaySpike {
    pub start: Time,
    pub end: Time,
    pub extra_delay: Time,
    pub loss_prob: f64,
    pub queued_loss: f64,
    /// The target's buffer for the forwarded packets (signalling model: `rlc_buffer_bytes`).
    pub buffer_bytes: Option<u64>,
}

/// Everything one operator's link needs from the train model.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkEffects {
    pub outages: Vec<Outage>,
    pub delay_spikes: Vec<DelaySpike>,
    /// Piecewise-constant capacity `(from, bit/s)`; the first point is at 0.
    pub capacity_bps: Vec<(Time, u64)>,
}

/// Outages and delay spikes of operator `op`'s link from its handovers (pure).
pub fn outages_and_spikes(events: &[HandoverEvent], op: usize, ho: &HandoverConfig) -> (Vec<Outage>, Vec<DelaySpike>) {
    let extra = from_ms_f64(ho.forwarding_delay_ms);
    let buffer_bytes = match (ho.model, ho.signalling.rlc_buffer_bytes) {
        (HandoverModel::Signalling, b) if b > 0 => Some(b),
        _ => None,
    };
    let mine = events.iter().filter(|e| e.operator == op);
    let outages: Vec<Outage> = mine
        .clone()
        .map(|e| Outage {
            start: e.outage_start,
            end: e.end,
        })
        .collect();
    let queued_loss = match ho.source_buffer {
        SourceBuffer::Discard => 1.0,
        SourceBuffer::Forward => ho.forwarding_loss,
    };
    // A radio-link or handover failure loses the source's context: nothing is forwarded.
    // A DAPS release (radio/nr.rs) forwards what the source still holds (lossless, TS 38.300
    // §9.2.3.2.1's SN status transfer) with no extra delay: the target has been receiving already.
    let spikes = mine
        .map(|e| match e.outcome.lost_context() {
            false if e.kind == Some(HandoverType::Daps) => DelaySpike {
                start: e.outage_start,
                end: e.end,
                extra_delay: 0,
                loss_prob: ho.forwarding_loss,
                queued_loss: ho.forwarding_loss,
                buffer_bytes,
            },
            false => DelaySpike {
                start: e.start,
                end: e.end,
                extra_delay: extra,
                loss_prob: ho.forwarding_loss,
                queued_loss,
                buffer_bytes,
            },
            true => DelaySpike {
                start: e.outage_start,
                end: e.end,
                extra_delay: 0,
                loss_prob: 1.0,
                queued_loss: 1.0,
                buffer_bytes: None,
            },
        })
        .collect();
    (outages, spikes)
}

/// TR 36.942 Annex A.2 downlink throughput (bit/s) at `sinr_db` over `bandwidth_mhz`, capped at `max_bps`.
pub fn sinr_capacity_bps(sinr_db: f64, bandwidth_mhz: f64, max_bps: f64) -> f64 {
    const ALPHA: f64 = 0.6;
    const SINR_MIN_DB: f64 = -10.0;
    const SINR_MAX_DB: f64 = 22.0;
    if sinr_db.is_nan() || sinr_db < SINR_MIN_DB {
        return 0.0;
    }
    let sinr = 10f64.powf(sinr_db.min(SINR_MAX_DB) / 10.0);
    let bps_per_hz = ALPHA * (1.0 + sinr).log2();
    (bps_per_hz * resource_blocks(bandwidth_mhz) * 180e3).min(max_bps)
}

/// Capacity schedule of operator `op` over the run, following its serving cell.
pub fn capacity_schedule(run: &HstRun, cfg: &HstConfig, events: &[HandoverEvent], op: usize) -> Vec<(Time, u64)> {
    match cfg.radio.capacity {
        CapacityConfig::Constant { rate_mbps } => vec![(0, (rate_mbps * 1e6).round() as u64)],
        CapacityConfig::Sinr { max_mbps, period_ms } => {
            sinr_schedule(run, cfg, events, op, max_mbps * 1e6, from_ms_f64(period_ms).max(1))
        }
    }
}

fn sinr_schedule(
    run: &HstRun,
    cfg: &HstConfig,
    events: &[HandoverEvent],
    op: usize,
    max_bps: f64,
    period: Time,
) -> Vec<(Time, u64)> {
    let sites = &run.map.operators[op].sites;
    // A DAPS fallback leaves the UE on the source.
    let mine: Vec<&HandoverEvent> = events
        .iter()
        .filter(|e| e.operator == op && e.outcome != HandoverOutcome::Fallback)
        .collect();
    let mut rsrp = Vec::new();
    run.map.rsrp_all(op, run.mobility.position_at(0), &mut rsrp);
    let mut serving = (0..rsrp.len()).fold(0, |b, i| if rsrp[i] > rsrp[b] { i } else { b }); // as in run_operator
    let (mut next_ho, mut out, mut t) = (0, Vec::<(Time, u64)>::new(), 0);
    while t < run.duration {
        while next_ho < mine.len() && mine[next_ho].start <= t {
            serving = sites
                .iter()
                .position(|s| s.cell == mine[next_ho].to_cell)
                .unwrap_or(serving);
            next_ho += 1;
        }
        let sinr = run.map.sinr_db(op, serving, run.mobility.position_at(t));
        let bps = sinr_capacity_bps(sinr, cfg.radio.bandwidth_mhz, max_bps).round() as u64;
        if out.last().is_none_or(|&(_, b)| b != bps) {
            out.push((t, bps));
        }
        t += period;
    }
    out
}

/// Downlink SINR (dB) of operator `op`'s serving cell over the run, sampled every `period`: the
/// serving-cell walk of the SINR capacity schedule (the strongest site at the start, then each
/// handover's target). Used by LTE cells whose UEs ride the train (`cells.ues.cqi_train`).
pub fn sinr_db_schedule(run: &HstRun, events: &[HandoverEvent], op: usize, period: Time) -> Vec<(Time, f64)> {
    let sites = &run.map.operators[op].sites;
    // A DAPS fallback leaves the UE on the source.
    let mine: Vec<&HandoverEvent> = events
        .iter()
        .filter(|e| e.operator == op && e.outcome != HandoverOutcome::Fallback)
        .collect();
    let mut rsrp = Vec::new();
    run.map.rsrp_all(op, run.mobility.position_at(0), &mut rsrp);
    let mut serving = (0..rsrp.len()).fold(0, |b, i| if rsrp[i] > rsrp[b] { i } else { b });
    let (mut next_ho, mut out, mut t) = (0, Vec::new(), 0);
    while t < run.duration {
        while next_ho < mine.len() && mine[next_ho].start <= t {
            serving = sites
                .iter()
                .position(|s| s.cell == mine[next_ho].to_cell)
                .unwrap_or(serving);
            next_ho += 1;
        }
        out.push((t, run.map.sinr_db(op, serving, run.mobility.position_at(t))));
        t += period.max(1);
    }
    out
}

/// Outages, delay spikes and capacity of operator `op`'s link for one run.
pub fn link_effects(run: &HstRun, cfg: &HstConfig, events: &[HandoverEvent], op: usize) -> LinkEffects {
    let (outages, delay_spikes) = outages_and_spikes(events, op, &cfg.handover);
    LinkEffects {
        outages,
        delay_spikes,
        capacity_bps: capacity_schedule(run, cfg, events, op),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::{NS_PER_MS, NS_PER_S};
    use crate::radio::config::CapacityConfig;

    fn ev(op: usize, start_ms: u64) -> HandoverEvent {
        HandoverEvent {
            operator: op,
            start: start_ms * NS_PER_MS,
            end: (start_ms + 40) * NS_PER_MS,
            from_cell: 0,
            to_cell: 1,
            position_m: 0.0,
            trigger: start_ms * NS_PER_MS,
            rach_attempts: 1,
            outcome: crate::radio::signalling::HandoverOutcome::X2,
            outage_start: start_ms * NS_PER_MS,
            kind: None,
            reestablishment: 0,
        }
    }

    #[test]
    fn outages_and_spikes_follow_the_operator_events() {
        let ho = HandoverConfig {
            forwarding_loss: 0.01,
            ..Default::default()
        };
        let events = [ev(0, 1000), ev(1, 5000), ev(0, 17000)];
        let (o, s) = outages_and_spikes(&events, 0, &ho);
        assert_eq!(
            o,
            vec![
                Outage {
                    start: 1000 * NS_PER_MS,
                    end: 1040 * NS_PER_MS
                },
                Outage {
                    start: 17000 * NS_PER_MS,
                    end: 17040 * NS_PER_MS
                }
            ]
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].extra_delay, 10 * NS_PER_MS);
        assert_eq!(s[0].loss_prob, 0.01);
        assert_eq!(
            s[0].queued_loss, 1.0,
            "default: the source's buffer is discarded (ns-3 LENA)"
        );
        let fwd = HandoverConfig {
            source_buffer: SourceBuffer::Forward,
            ..ho.clone()
        };
        assert_eq!(outages_and_spikes(&events, 0, &fwd).1[0].queued_loss, 0.01);
        // The IP-level gap: interruption + forwarding = 50 ms with the defaults.
        assert_eq!(s[0].end + s[0].extra_delay - s[0].start, 50 * NS_PER_MS);
    }

    #[test]
    fn shannon_capacity_is_bounded_and_monotone() {
        assert_eq!(sinr_capacity_bps(-20.0, 10.0, 1e9), 0.0);
        let top = sinr_capacity_bps(40.0, 10.0, 1e9);
        assert!((top - 0.6 * (1.0 + 10f64.powf(2.2)).log2() * 9e6).abs() < 1.0, "{top}");
        assert_eq!(sinr_capacity_bps(40.0, 10.0, 25e6), 25e6);
        assert!(sinr_capacity_bps(0.0, 10.0, 1e9) < sinr_capacity_bps(10.0, 10.0, 1e9));
    }

    #[test]
    fn sinr_capacity_dips_at_cell_edges_and_constant_is_flat() {
        let mut cfg = HstConfig::default();
        let run = HstRun::new(&cfg, 1, 30 * NS_PER_S);
        let events = run.handovers(&cfg.handover);
        assert_eq!(capacity_schedule(&run, &cfg, &events, 0), vec![(0, 25_000_000)]);
        cfg.radio.capacity = CapacityConfig::Sinr {
            max_mbps: 25.0,
            period_ms: 100.0,
        };
        let sched = capacity_schedule(&run, &cfg, &events, 0);
        let rates: Vec<u64> = sched.iter().map(|p| p.1).collect();
        assert!(rates.contains(&25_000_000), "never reaches the cap: {rates:?}");
        assert!(rates.iter().any(|&r| r < 15_000_000), "never dips: {rates:?}");
        assert_eq!(sched[0].0, 0);
    }
}
