//! Handover decision (A3 event with hysteresis and time-to-trigger) and X2 handover execution.
//!
//! Sources and choices:
//! - **Measurement**: the UE measures every site's RSRP every `measurement_period_ms` (default
//!   200 ms, the TS 36.133 §8.1.2.2 intra-frequency measurement period, also ns-3's; no L1
//!   averaging inside the period since fast fading is not modelled) and applies the L3 filter
//!   of TS 36.331 §5.5.3.2,
//!   `F_n = (1 − a)·F_{n−1} + a·M_n`, `a = 1/2^(k/4)`, k = 4 (the RRC default `fc4`).
//! - **A3 entering condition** (TS 36.331 §5.5.4.4, with the cell-specific offsets at 0):
//!   `Mn − Hys > Mp + Off`. Each neighbour keeps its own timer (the `cellsTriggeredList`); the
//!   handover fires at the first measurement at which some neighbour has met the condition at
//!   every measurement for at least `time_to_trigger_ms`; if several have, the strongest wins.
//!   The eNB is assumed to decide at once (no preparation delay; ns-3's "ideal RRC" likewise).
//! - **Execution** (X2, TS 36.300 §10.1.2.1): the UE detaches from the source at the trigger time
//!   and resumes on the target `interruption_ms` later (default 40 ms; together with the 10 ms of
//!   X2 forwarding this gives a 50 ms IP-level delivery gap, inside the 40–60 ms ns-3 reports for
//!   P0). No measurement happens meanwhile; the A3 timers restart on the new cell.
//! - With `model = "signalling"` the execution is `signalling.rs`'s instead: the UE detaches
//!   when the handover command reaches it (preparation after the trigger), the interruption is the
//!   sum of the access steps (drawn per handover), and a source below Qout before the command
//!   makes it a radio-link failure. The next measurement follows the end either way.
//! - The first serving cell is the strongest one at t = 0 (initial cell selection).
use super::config::{HandoverConfig, HandoverModel, HandoverType, HstConfig};
use super::layout::RadioMap;
use super::mobility::Mobility;
use super::nr;
use super::signalling::{self, HandoverOutcome};
use crate::core::rng::RngStreams;
use crate::core::time::{from_ms_f64, Time};

/// One handover of one operator's link.
#[derive(Clone, Debug, PartialEq)]
pub struct HandoverEvent {
    /// Index into `radio.operators`.
    pub operator: usize,
    /// Detach from the source (the A3 trigger).
    pub start: Time,
    /// Resume on the target.
    pub end: Time,
    /// Site index `k` of the source and target cells.
    pub from_cell: i64,
    pub to_cell: i64,
    /// Train's distance along the track at `start`, m.
    pub position_m: f64,
    /// The A3 trigger (equal to `start` in the fixed model; after `start` when a radio-link
    /// failure's loss of sync came before it).
    pub trigger: Time,
    /// Preamble attempts (1 in the fixed model, 0 after a radio-link failure).
    pub rach_attempts: u32,
    pub outcome: HandoverOutcome,
    /// The link delivers nothing in `[outage_start, end)`: `start` except for DAPS (`radio/nr.rs`),
    /// whose source keeps delivering until the release.
    pub outage_start: Time,
    /// The declared handover type (`[hst.handover] type`; None = undeclared hard).
    pub kind: Option<HandoverType>,
    /// The re-establishment part of the interruption after a failure (0 otherwise).
    pub reestablishment: Time,
}

/// TS 36.331 §5.5.3.2 layer-3 filter over a set of cells; −∞ (not measured) resets a cell.
#[derive(Clone, Debug)]
pub struct L3Filter {
    a: f64,
    state: Vec<f64>,
}

impl L3Filter {
    pub fn new(k: u32) -> Self {
        L3Filter {
            a: 1.0 / 2f64.powf(k as f64 / 4.0),
            state: Vec::new(),
        }
    }

    /// Filters one measurement of every cell in place.
    pub fn apply(&mut self, raw: &mut [f64]) {
        self.state.resize(raw.len(), f64::NEG_INFINITY);
        for (f, m) in self.state.iter_mut().zip(raw.iter_mut()) {
            *f = if f.is_finite() && m.is_finite() {
                (1.0 - self.a) * *f + self.a * *m
            } else {
                *m
            };
            *m = *f;
        }
    }
}

/// A3 event evaluation with per-neighbour time-to-trigger timers.
#[derive(Clone, Debug)]
pub struct A3 {
    hysteresis_db: f64,
    offset_db: f64,
    ttt: Time,
    /// Since when each cell has continuously met the entering condition.
    since: Vec<Option<Time>>,
}

impl A3 {
    pub fn new(cfg: &HandoverConfig) -> Self {
        A3 {
            hysteresis_db: cfg.hysteresis_db,
            offset_db: cfg.a3_offset_db,
            ttt: from_ms_f64(cfg.time_to_trigger_ms as f64),
            since: Vec::new(),
        }
    }

    /// Forgets every timer (after a handover).
    pub fn reset(&mut self) {
        self.since.iter_mut().for_each(|s| *s = None);
    }

    /// Feeds one (filtered) measurement of every cell; returns the handover target, if any.
    pub fn step(&mut self, now: Time, rsrp: &[f64], serving: usize) -> Option<usize> {
        self.since.resize(rsrp.len(), None);
        let threshold = rsrp[serving] + self.hysteresis_db + self.offset_db;
        let mut best: Option<usize> = None;
        for (i, &m) in rsrp.iter().enumerate() {
            let entering = i != serving && m > threshold;
            let since = &mut self.since[i];
            *since = if entering { Some(since.unwrap_or(now)) } else { None };
            let ready = since.is_some_and(|t0| now - t0 >= self.ttt);
            if ready && best.is_none_or(|b| m > rsrp[b]) {
                best = Some(i);
            }
        }
        best
    }
}

/// Handovers of operator `op` for a train run of length `duration`.
/// `run_seed` feeds the signalling model's draws (unused by the fixed model).
pub fn run_operator(
    map: &RadioMap,
    mobility: &Mobility,
    op: usize,
    cfg: &HandoverConfig,
    duration: Time,
    run_seed: u64,
) -> Vec<HandoverEvent> {
    let streams = RngStreams::new(run_seed);
    let mut rng = streams.stream(&format!("radio/handover/signalling/{op}"));
    let mut re_rng = streams.stream(&format!("radio/handover/reestablishment/{op}"));
    let mut serving_since: Time = 0;
    let period = from_ms_f64(cfg.measurement_period_ms).max(1);
    let interruption = from_ms_f64(cfg.interruption_ms);
    let sites = &map.operators[op].sites;
    let (mut a3, mut filter) = (A3::new(cfg), L3Filter::new(cfg.l3_filter_k));
    // CHO: the preparation condition, an A3 event `prepare_offset_db` earlier (radio/nr.rs).
    let mut prepare = (cfg.kind == Some(HandoverType::Cho)).then(|| {
        A3::new(&HandoverConfig {
            a3_offset_db: cfg.a3_offset_db + cfg.cho.prepare_offset_db,
            ..cfg.clone()
        })
    });
    let mut prepared: Vec<Option<Time>> = vec![None; sites.len()];
    let mut rsrp = Vec::with_capacity(sites.len());
    let mut serving: Option<usize> = None;
    let mut events = Vec::new();
    let mut t: Time = 0;
    while t < duration {
        let s = mobility.position_at(t);
        map.rsrp_all(op, s, &mut rsrp);
        filter.apply(&mut rsrp);
        let srv = *serving.get_or_insert_with(|| argmax(&rsrp));
        if let Some(p) = prepare.as_mut().and_then(|a| a.step(t, &rsrp, srv)) {
            prepared[p].get_or_insert(t);
        }
        if let Some(target) = a3.step(t, &rsrp, srv) {
            let (x, outage_start, reestablishment) = match (cfg.kind, cfg.model) {
                (None, HandoverModel::Fixed) => {
                    let x = signalling::Execution {
                        start: t,
                        end: t + interruption,
                        rach_attempts: 1,
                        outcome: HandoverOutcome::X2,
                    };
                    (x, t, 0)
                }
                (None, HandoverModel::Signalling) => {
                    let x = signalling::execute(
                        &cfg.signalling,
                        t,
                        serving_since,
                        |u| map.sinr_db(op, srv, mobility.position_at(u)),
                        &mut rng,
                    );
                    (x, x.start, 0)
                }
                (Some(kind), _) => {
                    let source = |u: Time| map.sinr_db(op, srv, mobility.position_at(u));
                    let target_sinr = |u: Time| map.sinr_db(op, target, mobility.position_at(u));
                    let radio = nr::Radio {
                        source_sinr_db: &source,
                        target_sinr_db: &target_sinr,
                    };
                    let y = nr::execute(
                        cfg,
                        kind,
                        t,
                        serving_since,
                        prepared[target],
                        &radio,
                        &mut rng,
                        &mut re_rng,
                    );
                    (y.x, y.outage_start, y.reestablishment)
                }
            };
            let position_m = mobility.position_at(x.start);
            serving_since = x.end;
            events.push(HandoverEvent {
                operator: op,
                start: x.start,
                end: x.end,
                from_cell: sites[srv].cell,
                to_cell: sites[target].cell,
                position_m,
                trigger: t,
                rach_attempts: x.rach_attempts,
                outcome: x.outcome,
                outage_start,
                kind: cfg.kind,
                reestablishment,
            });
            if x.outcome != HandoverOutcome::Fallback {
                serving = Some(target);
            }
            a3.reset();
            if let Some(p) = prepare.as_mut() {
                p.reset();
                prepared.iter_mut().for_each(|x| *x = None);
            }
            t = x.end.div_ceil(period) * period; // next measurement after the UE is back
            continue;
        }
        t += period;
    }
    events
}

fn argmax(v: &[f64]) -> usize {
    (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b })
}

/// The mobility and radio maps of one run, for the handover and link-effect computations.
pub struct HstRun {
    pub run_seed: u64,
    pub mobility: Mobility,
    pub map: RadioMap,
    pub duration: Time,
}

impl HstRun {
    /// Builds a run of a *validated* config: the environment from `cfg.environment_seed`, the
    /// run-to-run terms from `run_seed`.
    pub fn new(cfg: &HstConfig, run_seed: u64, duration: Time) -> Self {
        let mobility = Mobility::new(&cfg.train);
        let (lo, hi) = (mobility.position_at(0), mobility.position_at(duration));
        let map = RadioMap::new(cfg, run_seed, mobility.track(), lo.min(hi), lo.max(hi));
        HstRun {
            run_seed,
            mobility,
            map,
            duration,
        }
    }

    /// Every operator's handovers, sorted by start time (then operator).
    pub fn handovers(&self, cfg: &HandoverConfig) -> Vec<HandoverEvent> {
        let mut all: Vec<HandoverEvent> = (0..self.map.operators.len())
            .flat_map(|op| run_operator(&self.map, &self.mobility, op, cfg, self.duration, self.run_seed))
            .collect();
        all.sort_by_key(|e| (e.start, e.operator));
        all
    }
}

/// Handovers of a run: deterministic for (`cfg.environment_seed`, `run_seed`).
pub fn simulate_handovers(cfg: &HstConfig, run_seed: u64, duration: Time) -> Vec<HandoverEvent> {
    HstRun::new(cfg, run_seed, duration).handovers(&cfg.handover)
}

/// Pairs `(i, j)` of handovers `a[i]`, `b[j]` whose intervals come within `tolerance` of each
/// other: both links would be interrupted at (nearly) the same time.
pub fn simultaneous_handovers(a: &[HandoverEvent], b: &[HandoverEvent], tolerance: Time) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            if x.start <= y.end.saturating_add(tolerance) && y.start <= x.end.saturating_add(tolerance) {
                out.push((i, j));
            }
        }
    }
    out
}

/// The events of one operator.
pub fn of_operator(events: &[HandoverEvent], op: usize) -> Vec<HandoverEvent> {
    events.iter().filter(|e| e.operator == op).cloned().collect()
}

#[cfg(test)]
mod tests;
