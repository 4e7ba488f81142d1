//! PHA-D — the deployable downlink variant of PHA (P0 §3.3): the train side (the MPTCP data
//! receiver) marks the subflow about to hand over as backup with MP_PRIO (B=1) before the
//! predicted handover start and clears it (B=0) before the predicted end; the unmodified sender's
//! backup handling does the rest.
//!
//! Prediction: from the train's position and speed (a least-squares fit over the last second —
//! or the last five fixes of a slower receiver such as 1 Hz NMEA — of
//! GPS fixes) and the operator's next range in the handover table, `time to start = (range.start −
//! pos) / speed`, `time to end = (range.end − pos) / speed`. RTT per subflow is the receiver's
//! estimate (2 × the smoothed one-way delay of arriving data).
//!
//! Timing policies (each is a choice a deployment makes):
//! - `paper`: B=1 at least one RTT before the predicted start (sent at the first GPS fix where
//!   `time to start ≤ RTT + three GPS periods`), B=0 at most one RTT before the predicted end.
//! - `queue-aware`: B=1 earlier by `lead_ms` — MP_PRIO stops new assignments, but what the sender
//!   already queued on the subflow still goes out, so the lead must cover that queue's drain time.
//! - `resend`: as `paper`, and B=0 is re-sent every RTT until data arrives on that subflow again
//!   (Linux sends MP_PRIO once, on a pure ACK: a B=0 lost while the link is interrupted would leave
//!   the path backup for good).
//!
//! The state machine is the router's own (`mobipath_hst::phad`, crates/hst): the simulator and
//! the live router decide the same MP_PRIO from the same fixes, table and RTTs by construction.
//! This module adds the scenario's configuration, the receiver's observations and the driver.
use super::table::HandoverTable;
use crate::core::time::Time;
use mobipath_hst::phad as controller;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::rc::Rc;

/// How far past the last GPS fix [`PhaD::on_tick`] still extrapolates the position.
pub const MAX_EXTRAPOLATION: Time = controller::MAX_EXTRAPOLATION;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PhaDPolicy {
    Paper,
    QueueAware,
    Resend,
}

/// `mptcp.pha_d` in a scenario.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaDConfig {
    pub policy: PhaDPolicy,
    /// Extra lead for B=1 in ms (`queue-aware`), in [0, 10000]. Default 0.
    #[serde(default)]
    pub lead_ms: f64,
}

/// One MP_PRIO the controller sent.
#[derive(Clone, Debug, PartialEq)]
pub struct PrioSent {
    pub at: Time,
    pub subflow: usize,
    pub backup: bool,
    /// Predicted time to the range's start (B=1) or end (B=0) when sent, ns (negative: inside).
    pub predicted_lead_ns: i64,
    /// The RTT estimate used.
    pub rtt: Time,
}

/// The handover table as the shared controller reads it.
impl controller::Ranges for HandoverTable {
    fn next_range(&self, operator: &str, pos_m: f64) -> Option<controller::Range> {
        HandoverTable::next_range(self, operator, pos_m).map(|r| controller::Range {
            start_m: r.start_m,
            end_m: r.end_m,
        })
    }
}

/// PHA-D on a simulated data receiver: the router's state machine (`mobipath_hst::phad`), fed
/// the receiver's RTT estimates and segment counts, without a send-queue drain (the lead of
/// `queue-aware` is the fixed `lead_ms`), and with a log of what it sent for the summary.
pub struct PhaD {
    ctl: controller::Controller<Rc<HandoverTable>>,
    pub log: Vec<PrioSent>,
}

impl PhaD {
    pub fn new(cfg: PhaDConfig, table: Rc<HandoverTable>, operators: Vec<Option<String>>, gps_period: Time) -> Self {
        let policy = match cfg.policy {
            PhaDPolicy::Paper => controller::Policy::Paper,
            PhaDPolicy::QueueAware => controller::Policy::QueueAware,
            PhaDPolicy::Resend => controller::Policy::Resend,
        };
        let cfg = controller::Config {
            policy,
            lead_ms: cfg.lead_ms,
            resend_b0: false,
        };
        PhaD {
            ctl: controller::Controller::new(cfg, table, operators, gps_period),
            log: Vec::new(),
        }
    }

    /// A GPS fix at `now`. `rtt[k]`: the receiver's RTT estimate for subflow k (0 = unknown);
    /// `rx[k]`: segments received so far on subflow k. Returns the MP_PRIO to send now as
    /// (subflow, backup).
    pub fn on_fix(&mut self, now: Time, pos_m: f64, rtt: &[Time], rx: &[u64]) -> Vec<(usize, bool)> {
        let decisions = self.ctl.on_fix(now, pos_m, &self.observations(rtt, rx));
        self.record(decisions)
    }

    /// A decision between fixes (`mobipath_hst::phad::Controller::on_tick`): a live router with a
    /// 1 Hz receiver calls it every few tens of ms.
    pub fn on_tick(&mut self, now: Time, rtt: &[Time], rx: &[u64]) -> Vec<(usize, bool)> {
        let decisions = self.ctl.on_tick(now, &self.observations(rtt, rx));
        self.record(decisions)
    }

    /// One per subflow, each with its subflow (a simulated endpoint always has them; an RTT or
    /// count not given is 0: the RTT unknown, no data yet); RTO is not reported (no idle
    /// restart is flagged).
    fn observations(&self, rtt: &[Time], rx: &[u64]) -> Vec<controller::Obs> {
        (0..self.ctl.subflows().max(rtt.len()).max(rx.len()))
            .map(|k| controller::Obs {
                rtt: rtt.get(k).copied().unwrap_or(0),
                rx: rx.get(k).copied().unwrap_or(0),
                has_subflows: true,
                ..Default::default()
            })
            .collect()
    }

    fn record(&mut self, decisions: Vec<controller::Decision>) -> Vec<(usize, bool)> {
        decisions
            .into_iter()
            .map(|d| {
                self.log.push(PrioSent {
                    at: d.at,
                    subflow: d.subflow,
                    backup: d.backup,
                    predicted_lead_ns: d.predicted_lead_ns,
                    rtt: d.rtt,
                });
                (d.subflow, d.backup)
            })
            .collect()
    }
}

/// PHA-D in a simulated run: a [driver](crate::engine::drivers) that feeds the train's GPS fixes
/// to the controller of one flow's data receiver and sends the MP_PRIO it asks for.
pub struct PhaDDriver {
    pub flow: usize,
    pub ctl: PhaD,
    /// The fixes: (time, metres along the track).
    pub fixes: Rc<[(Time, f64)]>,
}

impl crate::engine::drivers::Driver for PhaDDriver {
    fn flow(&self) -> usize {
        self.flow
    }

    fn start(&mut self, q: &mut crate::engine::drivers::Schedule) {
        if let Some(&(t, _)) = self.fixes.first() {
            q.at(t, 0);
        }
    }

    fn fire(
        &mut self,
        now: Time,
        token: u32,
        world: &mut dyn crate::engine::drivers::World,
        q: &mut crate::engine::drivers::Schedule,
    ) {
        use crate::engine::drivers::Side;
        let k = token as usize;
        let Some(&(_, pos)) = self.fixes.get(k) else { return };
        let obs = world.observe(self.flow, Side::Receiver);
        for (subflow, backup) in self.ctl.on_fix(now, pos, &obs.rtt, &obs.segments_received) {
            world.act(
                self.flow,
                Side::Receiver,
                crate::endpoint::Action::SetBackup { subflow, backup },
            );
        }
        if let Some(&(t, _)) = self.fixes.get(k + 1) {
            q.at(t, token + 1);
        }
    }

    fn flow_summary(&self) -> Vec<(String, serde_json::Value)> {
        use crate::core::time::to_secs_f64;
        use crate::metrics::round6;
        let log: Vec<serde_json::Value> = self
            .ctl
            .log
            .iter()
            .map(|p| serde_json::json!({"t_s": round6(to_secs_f64(p.at)), "subflow": p.subflow, "backup": p.backup, "predicted_lead_ms": round6(p.predicted_lead_ns as f64 / 1e6), "rtt_ms": round6(p.rtt as f64 / 1e6)}))
            .collect();
        vec![("pha_d_mp_prio".into(), serde_json::Value::Array(log))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::{NS_PER_MS, NS_PER_S};
    use crate::hst::table::ObservedHandover;

    fn table() -> Rc<HandoverTable> {
        let mut t = HandoverTable::new();
        t.learn(
            &[ObservedHandover {
                operator: "A".into(),
                gps_start_m: 1000.0,
                gps_end_m: 1003.0,
            }],
            10.0,
        );
        Rc::new(t) // range [990, 1013]
    }

    /// Drives the controller along a track at `speed` m/s with perfect GPS every 10 ms.
    fn ride(policy: PhaDPolicy, lead_ms: f64, rx_of: impl Fn(Time) -> u64) -> Vec<PrioSent> {
        let mut c = PhaD::new(
            PhaDConfig { policy, lead_ms },
            table(),
            vec![Some("A".into()), Some("B".into())],
            10 * NS_PER_MS,
        );
        let speed = 83.33;
        let rtt = 50 * NS_PER_MS;
        for i in 0..2000u64 {
            let t = i * 10 * NS_PER_MS;
            let pos = 500.0 + speed * t as f64 / 1e9;
            c.on_fix(t, pos, &[rtt, rtt], &[rx_of(t), 0]);
        }
        c.log
    }

    #[test]
    fn paper_policy_obeys_the_one_rtt_rules() {
        let log = ride(PhaDPolicy::Paper, 0.0, |t| t / 1_000_000);
        assert_eq!(log.len(), 2, "{log:?}");
        let (b1, b0) = (&log[0], &log[1]);
        assert!(b1.backup && !b0.backup && b1.subflow == 0);
        // B=1 at least one RTT before the predicted start (and not much earlier than 1 RTT + a fix).
        assert!(b1.predicted_lead_ns >= b1.rtt as i64, "{b1:?}");
        assert!(b1.predicted_lead_ns <= (b1.rtt + 30 * NS_PER_MS) as i64);
        // B=0 at most one RTT before the predicted end.
        assert!(
            b0.predicted_lead_ns <= b0.rtt as i64 && b0.predicted_lead_ns > b0.rtt as i64 - 20_000_000,
            "{b0:?}"
        );
        // True times: the train reaches 990 m at (490/83.33) s.
        let start = (490.0 / 83.33 * 1e9) as i64;
        assert!(start - b1.at as i64 >= 50_000_000);
    }

    #[test]
    fn queue_aware_leads_by_the_extra_time() {
        let paper = ride(PhaDPolicy::Paper, 0.0, |_| 0);
        let qa = ride(PhaDPolicy::QueueAware, 300.0, |_| 0);
        let d = paper[0].at as i64 - qa[0].at as i64;
        assert!((290_000_000..=310_000_000).contains(&d), "lead difference {d}");
    }

    #[test]
    fn resend_repeats_b0_until_data_flows() {
        // No data arrives on subflow 0 until 200 ms after the first B=0.
        let first_b0 = ride(PhaDPolicy::Paper, 0.0, |_| 0)[1].at;
        let log = ride(PhaDPolicy::Resend, 0.0, |t| {
            if t >= first_b0 + 200 * NS_PER_MS {
                1
            } else {
                0
            }
        });
        let b0s: Vec<&PrioSent> = log.iter().filter(|p| !p.backup).collect();
        assert!(b0s.len() >= 4 && b0s.len() <= 6, "{} B=0 sent", b0s.len());
        assert!(b0s.windows(2).all(|w| w[1].at - w[0].at >= 50 * NS_PER_MS));
        // The paper policy sends it once.
        assert_eq!(
            ride(PhaDPolicy::Paper, 0.0, |_| 0).iter().filter(|p| !p.backup).count(),
            1
        );
    }

    /// Subflows the caller gives no figures for are still subflows: under `resend` their B=0 is
    /// re-sent (at the default 100 ms RTT) until data is seen, as for any other.
    #[test]
    fn resend_without_figures_keeps_resending() {
        let mut c = PhaD::new(
            PhaDConfig {
                policy: PhaDPolicy::Resend,
                lead_ms: 0.0,
            },
            table(),
            vec![Some("A".into())],
            10 * NS_PER_MS,
        );
        for i in 0..2000u64 {
            let t = i * 10 * NS_PER_MS;
            c.on_fix(t, 500.0 + 83.33 * t as f64 / 1e9, &[], &[]);
        }
        let b0s: Vec<&PrioSent> = c.log.iter().filter(|p| !p.backup).collect();
        assert!(b0s.len() > 10, "{} B=0 sent", b0s.len());
        assert!(b0s.windows(2).all(|w| w[1].at - w[0].at >= 100 * NS_PER_MS));
    }

    /// A 1 Hz receiver: at fixes only, B=0 can come up to a second after the range's end; with
    /// ticks every 50 ms between fixes it comes at most one RTT (plus a tick) before the end.
    #[test]
    fn ticks_between_slow_fixes_send_b0_on_time() {
        let speed = 83.33;
        let rtt = 50 * NS_PER_MS;
        let run = |ticks: bool| {
            let mut c = PhaD::new(
                PhaDConfig {
                    policy: PhaDPolicy::Paper,
                    lead_ms: 0.0,
                },
                table(),
                vec![Some("A".into())],
                NS_PER_S,
            );
            for ms in (0..30_000u64).step_by(50) {
                let t = ms * NS_PER_MS;
                if ms % 1000 == 0 {
                    c.on_fix(t, 100.0 + speed * t as f64 / 1e9, &[rtt], &[0]);
                } else if ticks {
                    c.on_tick(t, &[rtt], &[0]);
                }
            }
            c.log
        };
        // The range [990, 1013] ends when the train reaches 1013 m.
        let end = ((1013.0 - 100.0) / speed * 1e9) as i64;
        let at_fixes = run(false);
        assert_eq!(at_fixes.len(), 2);
        assert!(
            at_fixes[1].at as i64 > end,
            "at fixes only, B=0 comes after the end: {:?}",
            at_fixes[1]
        );
        let ticked = run(true);
        assert_eq!(ticked.len(), 2);
        let lead = end - ticked[1].at as i64;
        assert!(
            lead > 0 && lead <= (rtt + 50 * NS_PER_MS) as i64,
            "B=0 {lead} ns before the end"
        );
        // B=1 keeps its lead of at least one RTT.
        assert!(ticked[0].predicted_lead_ns >= rtt as i64);
    }

    /// GPS lost: ticks extrapolate at most MAX_EXTRAPOLATION past the last fix. 10 Hz fixes at
    /// 83.33 m/s that end at 575 m (0.9 s) would, extrapolated, make B=1 due at ~5.5 s (the
    /// range [990, 1013], 400 ms ahead at the assumed 100 ms RTT) and B=0 at ~6.1 s: ticks up
    /// to 12 s send neither. The same fixes ending at 875 m make B=1 due at ~1.9 s, within the
    /// limit, and a tick sends it.
    #[test]
    fn no_decision_long_after_the_last_fix() {
        let silent_after = |last_m: f64| {
            let mut c = PhaD::new(
                PhaDConfig {
                    policy: PhaDPolicy::Paper,
                    lead_ms: 0.0,
                },
                table(),
                vec![Some("A".into())],
                100 * NS_PER_MS,
            );
            for i in 0..10u64 {
                c.on_fix(i * 100 * NS_PER_MS, last_m - 8.333 * (9 - i) as f64, &[0], &[0]);
            }
            c
        };
        let mut far = silent_after(575.0);
        assert!(far.on_tick(NS_PER_S / 2, &[0], &[0]).is_empty(), "before the last fix");
        for ms in (950..12_000u64).step_by(50) {
            assert!(
                far.on_tick(ms * NS_PER_MS, &[0], &[0]).is_empty(),
                "a decision at {ms} ms, {} ms after the last fix",
                ms - 900
            );
        }
        assert!(far.log.is_empty());
        let mut near = silent_after(875.0);
        let b1: Vec<u64> = (950..2_900u64)
            .step_by(50)
            .filter(|&ms| near.on_tick(ms * NS_PER_MS, &[0], &[0]) == [(0, true)])
            .collect();
        assert!(
            b1.len() == 1 && (1_800..=1_950).contains(&b1[0]),
            "B=1 by a tick within the limit, at ~1.9 s: {b1:?}"
        );
    }
}
