//! PHA-D's decision logic (P0 §3.3), the one state machine the simulator (`mobipath-sim`,
//! `hst::phad::PhaD`) and the live router (`mobipath-proxy`, `phad::daemon`) both run. The train
//! side (the MPTCP data receiver) marks the subflow about to hand over as backup with MP_PRIO
//! (B=1) before the predicted handover start and clears it (B=0) before the predicted end.
//!
//! Prediction: position and speed from a least-squares fit over the last second of GPS fixes, or
//! the last five fixes of a slower receiver such as 1 Hz NMEA ([`crate::fit`]), and the
//! operator's next range in the handover table: `time to start = (range.start − pos) / speed`,
//! `time to end = (range.end − pos) / speed`. Each subflow's RTT is its caller's estimate, held
//! as a slowly decaying maximum (1 % per fix) so that the lead covers an RTT that rises between
//! fixes; 100 ms while unknown.
//!
//! Timing policies (each is a choice a deployment makes):
//! - `paper`: B=1 at the first decision where `time to start ≤ RTT + three GPS periods`; B=0 at
//!   most one RTT before the predicted end.
//! - `queue-aware`: B=1 earlier by `lead_ms` plus the subflow's send-queue drain time
//!   ([`Obs::drain`]): MP_PRIO stops new assignments, but what the sender already queued on the
//!   subflow still goes out. The simulator passes no drain (its lead is the fixed `lead_ms`); the
//!   router measures it from the kernel at each decision.
//! - `resend` (or [`Config::resend_b0`]): after B=0, it is re-sent every RTT until the path
//!   carries data again ([`Obs::rx`] grows). Linux sends MP_PRIO once, on a pure ACK, and never
//!   repeats it, so a B=0 lost in the interruption would leave the path backup for good. A
//!   subflow-less endpoint has nothing to re-send to: restoring ends at once.
//!
//! Under every policy, a next range that starts within `2·RTT + 2 GPS periods` of this one's end
//! is handled with it: the path stays backup instead of flapping.
//!
//! A backup episode longer than the subflow's RTO is reported with the B=0
//! ([`Decision::idle_past_rto`]): the sender then restarts the path from its initial window
//! (RFC 5681 §4.1, Linux `tcp_slow_start_after_idle`). The controller keeps each backup as short
//! as its rules allow, but it cannot shorten a range.
//!
//! The controller keeps no history: each call returns its decisions, and a caller that needs a
//! log keeps one (the simulator reports its MP_PRIO; the router daemon, which runs for days,
//! prints each and keeps nothing).
pub type Time = u64;
pub const NS_PER_MS: Time = 1_000_000;
pub const NS_PER_S: Time = 1_000_000_000;

/// How far past the last GPS fix [`Controller::on_tick`] still extrapolates the position (GPS
/// lost, e.g. in a tunnel: the position is then unknown).
pub const MAX_EXTRAPOLATION: Time = 2 * NS_PER_S;

/// The timing policy (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Paper,
    QueueAware,
    Resend,
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "paper" => Some(Policy::Paper),
            "queue-aware" => Some(Policy::QueueAware),
            "resend" => Some(Policy::Resend),
            _ => None,
        }
    }
}

/// One handover range of one operator, metres along the track.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub start_m: f64,
    pub end_m: f64,
}

/// What the controller needs of the table: per operator, sorted disjoint ranges.
pub trait Ranges {
    /// The next range of `operator` that starts at or after `pos_m`, or contains it.
    fn next_range(&self, operator: &str, pos_m: f64) -> Option<Range>;
}

/// A shared table (the router's daemon holds an `Arc`, the simulator an `Rc`).
impl<T: Ranges + ?Sized> Ranges for std::sync::Arc<T> {
    fn next_range(&self, operator: &str, pos_m: f64) -> Option<Range> {
        (**self).next_range(operator, pos_m)
    }
}

impl<T: Ranges + ?Sized> Ranges for std::rc::Rc<T> {
    fn next_range(&self, operator: &str, pos_m: f64) -> Option<Range> {
        (**self).next_range(operator, pos_m)
    }
}

/// What the caller measured of one subflow at a decision.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Obs {
    /// Smoothed RTT, ns (0 = unknown: 100 ms is assumed).
    pub rtt: Time,
    /// Time to drain the subflow's not-yet-sent bytes, ns (`queue-aware`'s lead; 0 in the
    /// simulator).
    pub drain: Time,
    /// A counter that grows while the path carries data (the router: bytes received + bytes
    /// acked; the simulator: segments received).
    pub rx: u64,
    /// Whether the endpoint has any subflow at all.
    pub has_subflows: bool,
    /// Retransmission timeout, ns (0 = unknown).
    pub rto: Time,
    /// The router's server proxy's drain time towards this path (`crates/proxy/src/phad/peer.rs`),
    /// when known; `drain` already includes it (the larger of the two). Only reported, in
    /// [`Decision::peer_drain`].
    pub peer_drain: Option<Time>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub policy: Policy,
    /// Extra fixed lead of B=1, ms (`queue-aware` only).
    pub lead_ms: f64,
    /// Re-send B=0 every RTT until data flows (always true for `resend`).
    pub resend_b0: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Regular,
    /// B=1 sent at `since` for the range ending at `end_m`.
    Backup {
        end_m: f64,
        since: Time,
    },
    /// B=0 sent (last) at `at`; `rx` = the data counter then.
    Restoring {
        at: Time,
        rx: u64,
        since: Time,
    },
}

/// One MP_PRIO the controller asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub at: Time,
    pub subflow: usize,
    pub backup: bool,
    /// A repeated B=0 (the path has carried no data since the last one).
    pub resend: bool,
    /// Predicted time to the range's start (B=1) or end (B=0) when sent, ns.
    pub predicted_lead_ns: i64,
    pub rtt: Time,
    pub drain: Time,
    /// The part of `drain` the server proxy reported (None: no peer figures).
    pub peer_drain: Option<Time>,
    /// For B=0: the path had been backup longer than its RTO.
    pub idle_past_rto: bool,
}

/// PHA-D for one MPTCP connection: one state per subflow, each tied to its operator's ranges.
pub struct Controller<T: Ranges> {
    cfg: Config,
    table: T,
    operators: Vec<Option<String>>,
    states: Vec<State>,
    /// End of the last range handled per subflow (a range is handled once).
    handled_end_m: Vec<f64>,
    /// Slowly decaying maximum of each subflow's RTT estimate.
    rtt_hi: Vec<Time>,
    fixes: std::collections::VecDeque<(Time, f64)>,
    gps_period: Time,
}

impl<T: Ranges> Controller<T> {
    pub fn new(cfg: Config, table: T, operators: Vec<Option<String>>, gps_period: Time) -> Self {
        let n = operators.len();
        let cfg = Config {
            resend_b0: cfg.resend_b0 || cfg.policy == Policy::Resend,
            ..cfg
        };
        Controller {
            cfg,
            table,
            operators,
            states: vec![State::Regular; n],
            handled_end_m: vec![f64::NEG_INFINITY; n],
            rtt_hi: vec![0; n],
            fixes: Default::default(),
            gps_period,
        }
    }

    /// The subflows it decides for (one per operator entry given to [`Controller::new`]).
    pub fn subflows(&self) -> usize {
        self.states.len()
    }

    /// Least-squares position and speed over the fit window ([`crate::fit`]); `None` until
    /// 100 ms of fixes exist.
    fn estimate(&self, now: Time) -> Option<(f64, f64)> {
        crate::fit::position_and_speed(self.fixes.iter(), now)
    }

    /// A fix at `now` (ns, non-decreasing). `obs[k]`: subflow k's measurements.
    pub fn on_fix(&mut self, now: Time, pos_m: f64, obs: &[Obs]) -> Vec<Decision> {
        self.fixes.push_back((now, pos_m));
        let window = NS_PER_S.max(5 * self.gps_period);
        while self.fixes.front().is_some_and(|&(t, _)| t + window < now) {
            self.fixes.pop_front();
        }
        self.decide(now, obs, true)
    }

    /// A decision between fixes, at `now` (not before the last fix), from the position the fit
    /// extrapolates: a 1 Hz receiver would otherwise send a B=0 due between two fixes up to a
    /// second late. Nothing more than [`MAX_EXTRAPOLATION`] after the last fix.
    pub fn on_tick(&mut self, now: Time, obs: &[Obs]) -> Vec<Decision> {
        match self.fixes.back() {
            Some(&(t, _)) if now >= t && now - t <= MAX_EXTRAPOLATION => self.decide(now, obs, false),
            _ => Vec::new(),
        }
    }

    /// `at_fix`: the RTT maximum decays only at fixes, so that ticks between fixes do not make
    /// it decay faster.
    fn decide(&mut self, now: Time, obs: &[Obs], at_fix: bool) -> Vec<Decision> {
        let mut out = Vec::new();
        let Some((pos_m, speed)) = self.estimate(now) else {
            return out;
        };
        if speed <= 0.1 {
            return out; // standing: no prediction
        }
        let secs = |d_m: f64| (d_m / speed * 1e9) as i64;
        for k in 0..self.states.len() {
            let Some(op) = self.operators[k].clone() else { continue };
            let o = obs.get(k).copied().unwrap_or_default();
            let now_rtt = if o.rtt > 0 { o.rtt } else { 100 * NS_PER_MS };
            let decayed = if at_fix {
                self.rtt_hi[k] - self.rtt_hi[k] / 100
            } else {
                self.rtt_hi[k]
            };
            self.rtt_hi[k] = now_rtt.max(decayed);
            let rtt_k = self.rtt_hi[k];
            let mk = |backup: bool, resend: bool, lead: i64, idle: bool| Decision {
                at: now,
                subflow: k,
                backup,
                resend,
                predicted_lead_ns: lead,
                rtt: rtt_k,
                drain: o.drain,
                peer_drain: o.peer_drain,
                idle_past_rto: idle,
            };
            match self.states[k] {
                State::Regular => {
                    let Some(r) = self.table.next_range(&op, pos_m) else {
                        continue;
                    };
                    if r.end_m <= self.handled_end_m[k] {
                        continue;
                    }
                    let to_start = secs(r.start_m - pos_m);
                    let extra = if self.cfg.policy == Policy::QueueAware {
                        (self.cfg.lead_ms * 1e6) as i64 + o.drain as i64
                    } else {
                        0
                    };
                    // One RTT plus three GPS periods: the decision happens at a fix, and the
                    // estimates move a little between fixes.
                    let lead = (rtt_k + 3 * self.gps_period) as i64 + extra;
                    if to_start <= lead && r.end_m > pos_m {
                        self.states[k] = State::Backup {
                            end_m: r.end_m,
                            since: now,
                        };
                        self.handled_end_m[k] = r.end_m;
                        out.push(mk(true, false, to_start, false));
                    }
                }
                State::Backup { end_m, since } => {
                    let to_end = secs(end_m - pos_m);
                    if to_end <= rtt_k as i64 {
                        // A next range starting too soon after this one to give its B=1 a
                        // full RTT of lead is handled as one with this one: stay backup
                        // instead of flapping.
                        if let Some(next) = self.table.next_range(&op, end_m + 1e-6) {
                            let gap = secs(next.start_m - end_m);
                            if next.end_m > self.handled_end_m[k] && gap <= (2 * rtt_k + 2 * self.gps_period) as i64 {
                                self.states[k] = State::Backup {
                                    end_m: next.end_m,
                                    since,
                                };
                                self.handled_end_m[k] = next.end_m;
                                continue;
                            }
                        }
                        self.states[k] = State::Restoring {
                            at: now,
                            rx: o.rx,
                            since,
                        };
                        let idle = o.rto > 0 && now - since > o.rto;
                        out.push(mk(false, false, to_end, idle));
                    }
                }
                State::Restoring { at, rx: rx_then, since } => {
                    let data_flows = o.rx > rx_then;
                    if !self.cfg.resend_b0 || data_flows || !o.has_subflows {
                        self.states[k] = State::Regular;
                    } else if now >= at + rtt_k {
                        self.states[k] = State::Restoring {
                            at: now,
                            rx: rx_then,
                            since,
                        };
                        out.push(mk(false, true, 0, false));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One range [990, 1013] for operator A (as the simulator's tests).
    struct One;
    impl Ranges for One {
        fn next_range(&self, op: &str, pos: f64) -> Option<Range> {
            (op == "A" && pos <= 1013.0).then_some(Range {
                start_m: 990.0,
                end_m: 1013.0,
            })
        }
    }

    const SPEED: f64 = 83.33;
    const RTT: Time = 50 * NS_PER_MS;

    fn ride(cfg: Config, obs_of: impl Fn(Time) -> Obs) -> Vec<Decision> {
        let mut c = Controller::new(cfg, One, vec![Some("A".into()), Some("B".into())], 10 * NS_PER_MS);
        let mut log = Vec::new();
        for i in 0..2000u64 {
            let t = i * 10 * NS_PER_MS;
            let o = obs_of(t);
            log.extend(c.on_fix(
                t,
                500.0 + SPEED * t as f64 / 1e9,
                &[
                    o,
                    Obs {
                        rtt: RTT,
                        has_subflows: true,
                        ..Default::default()
                    },
                ],
            ));
        }
        log
    }

    fn cfg(policy: Policy, resend_b0: bool) -> Config {
        Config {
            policy,
            lead_ms: 0.0,
            resend_b0,
        }
    }

    fn obs(drain_ms: u64, rx: u64) -> Obs {
        Obs {
            rtt: RTT,
            drain: drain_ms * NS_PER_MS,
            rx,
            has_subflows: true,
            rto: 250 * NS_PER_MS,
            peer_drain: None,
        }
    }

    /// Queue-aware: B=1 goes out when the time to the range is at most RTT + drain (+ three GPS
    /// periods), so a 400 ms queue moves it 400 ms earlier than an empty one.
    #[test]
    fn queue_aware_lead_is_drain_plus_rtt() {
        for drain_ms in [0u64, 120, 400] {
            let log = ride(cfg(Policy::QueueAware, false), |_| obs(drain_ms, 0));
            let b1 = &log[0];
            assert!(b1.backup && b1.subflow == 0);
            let want = (RTT + drain_ms * NS_PER_MS + 30 * NS_PER_MS) as i64;
            assert!(
                b1.predicted_lead_ns <= want && b1.predicted_lead_ns > want - 10 * NS_PER_MS as i64,
                "drain {drain_ms}: {b1:?}"
            );
            assert_eq!(b1.drain, drain_ms * NS_PER_MS);
        }
        // The paper policy ignores the queue.
        let p = ride(cfg(Policy::Paper, false), |_| obs(400, 0));
        assert!(p[0].predicted_lead_ns <= (RTT + 30 * NS_PER_MS) as i64);
    }

    /// B=0 is repeated every RTT until the counter of the path's data moves, then never again.
    #[test]
    fn b0_resent_until_data_flows() {
        let first_b0 = ride(cfg(Policy::QueueAware, false), |_| obs(0, 0))[1].at;
        let flows_at = first_b0 + 230 * NS_PER_MS;
        let log = ride(cfg(Policy::QueueAware, true), |t| {
            obs(0, if t >= flows_at { 7 } else { 0 })
        });
        let b0: Vec<&Decision> = log.iter().filter(|d| !d.backup).collect();
        assert_eq!(b0[0].at, first_b0);
        assert!(!b0[0].resend && b0[1..].iter().all(|d| d.resend));
        // 230 ms without data at a 50 ms RTT: re-sends at +50, +100, +150, +200 ms.
        assert_eq!(b0.len(), 5, "{b0:?}");
        assert!(b0.windows(2).all(|w| w[1].at - w[0].at >= RTT));
        assert!(b0.last().unwrap().at < flows_at);
        // Without re-sending: once.
        assert_eq!(
            ride(cfg(Policy::QueueAware, false), |_| obs(0, 0))
                .iter()
                .filter(|d| !d.backup)
                .count(),
            1
        );
        // An endpoint without subflows has nothing to re-send to.
        let none = ride(cfg(Policy::Resend, true), |_| Obs {
            has_subflows: false,
            ..obs(0, 0)
        });
        assert_eq!(none.iter().filter(|d| !d.backup).count(), 1);
    }

    #[test]
    fn a_backup_longer_than_the_rto_is_reported() {
        // The backup lasts (23 m + leads) / 83 m/s ≈ 350 ms.
        let long = ride(cfg(Policy::Paper, false), |_| obs(0, 0));
        assert!(long[1].idle_past_rto, "{:?}", long[1]);
        let short = ride(cfg(Policy::Paper, false), |_| Obs {
            rto: 2 * NS_PER_S,
            ..obs(0, 0)
        });
        assert!(!short[1].idle_past_rto);
    }

    /// No decision before the fit has three fixes over 100 ms; none for a train standing inside
    /// the lead, not even when GPS jitter makes the fitted speed a little negative (a negative
    /// time to the range would otherwise read as "due").
    #[test]
    fn nothing_without_enough_fixes_or_when_standing() {
        let mut c = Controller::new(cfg(Policy::Paper, true), One, vec![Some("A".into())], 100 * NS_PER_MS);
        let mut fixes = std::collections::VecDeque::new();
        for i in 0..50u64 {
            // ±0.5 m of jitter around 985 m and a wander of 2 mm per fix backwards: the fit
            // sees the train creeping back.
            let pos = 985.0 - 0.002 * i as f64 + if i % 2 == 0 { 0.5 } else { -0.5 };
            fixes.push_back((i * 100 * NS_PER_MS, pos));
            assert!(
                c.on_fix(i * 100 * NS_PER_MS, pos, &[obs(0, 0)]).is_empty(),
                "standing inside the lead, fix {i}"
            );
        }
        while fixes.len() > 11 {
            fixes.pop_front();
        }
        let (_, speed) = crate::fit::position_and_speed(fixes.iter(), 4900 * NS_PER_MS).unwrap();
        assert!(
            speed < 0.0 && speed > -0.1,
            "the jitter must fit a small negative speed: {speed}"
        );
        let mut few = Controller::new(cfg(Policy::Paper, true), One, vec![Some("A".into())], 100 * NS_PER_MS);
        // Inside the range at 83 m/s, but two fixes (or three within 100 ms) are no fit.
        assert!(few.on_fix(0, 995.0, &[obs(0, 0)]).is_empty());
        assert!(few.on_fix(40 * NS_PER_MS, 998.3, &[obs(0, 0)]).is_empty());
        assert!(few.on_fix(80 * NS_PER_MS, 1001.7, &[obs(0, 0)]).is_empty());
        assert!(
            few.on_fix(120 * NS_PER_MS, 1005.0, &[obs(0, 0)])
                .first()
                .is_some_and(|d| d.backup),
            "the fourth fix spans 120 ms"
        );
    }

    /// 10 Hz fixes at 83.33 m/s that end at `last_m`, the last at 0.9 s; the range [990, 1013]
    /// is due (B=1, paper, 50 ms RTT: 350 ms ahead, ~29 m) once the train passes ~961 m.
    fn silent_after(last_m: f64) -> Controller<One> {
        let mut c = Controller::new(cfg(Policy::Paper, false), One, vec![Some("A".into())], 100 * NS_PER_MS);
        for i in 0..10u64 {
            c.on_fix(
                i * 100 * NS_PER_MS,
                last_m - SPEED * (9 - i) as f64 / 10.0,
                &[obs(0, 0)],
            );
        }
        c
    }

    /// Ticks extrapolate the position for at most MAX_EXTRAPOLATION after the last fix (GPS lost:
    /// the position is unknown). Fixes ending at 575 m put the range's B=1 at ~5.5 s and its B=0
    /// at ~6.1 s by extrapolation, well past the limit: ticks all the way there decide nothing.
    /// Fixes ending 2 s short of the range decide exactly up to the limit.
    #[test]
    fn no_decision_past_the_extrapolation_limit() {
        let last = 900 * NS_PER_MS;
        let mut far = silent_after(575.0);
        for ms in (950..12_000u64).step_by(50) {
            assert!(
                far.on_tick(ms * NS_PER_MS, &[obs(0, 0)]).is_empty(),
                "a decision {ms} ms after the start, {} ms after the last fix",
                ms - 900
            );
        }
        assert!(
            far.on_tick(last - NS_PER_MS, &[obs(0, 0)]).is_empty(),
            "before the last fix"
        );
        // At last + 2 s the extrapolated position is 1000 m, inside the range: B=1 is due.
        let at_limit = 1000.0 - SPEED * (MAX_EXTRAPOLATION as f64 / 1e9);
        let d = silent_after(at_limit).on_tick(last + MAX_EXTRAPOLATION, &[obs(0, 0)]);
        assert!(d.len() == 1 && d[0].backup, "at the limit: {d:?}");
        assert!(
            silent_after(at_limit)
                .on_tick(last + MAX_EXTRAPOLATION + 1, &[obs(0, 0)])
                .is_empty(),
            "1 ns past the limit"
        );
    }

    /// Two ranges 7 m (84 ms) apart: the path stays backup from the first B=1 to the B=0 before
    /// the second range's end, one episode of ~630 ms. Its idle is measured from that first B=1,
    /// not from the merge (~320 ms before the B=0).
    #[test]
    fn merged_ranges_count_the_idle_from_the_first_b1() {
        struct Two;
        impl Ranges for Two {
            fn next_range(&self, op: &str, pos: f64) -> Option<Range> {
                if op != "A" {
                    return None;
                }
                [
                    Range {
                        start_m: 990.0,
                        end_m: 1013.0,
                    },
                    Range {
                        start_m: 1020.0,
                        end_m: 1040.0,
                    },
                ]
                .into_iter()
                .find(|r| pos <= r.end_m)
            }
        }
        let ride = |rto: Time| {
            let mut c = Controller::new(cfg(Policy::Paper, false), Two, vec![Some("A".into())], 10 * NS_PER_MS);
            let mut log = Vec::new();
            for i in 0..2000u64 {
                let t = i * 10 * NS_PER_MS;
                log.extend(c.on_fix(t, 500.0 + SPEED * t as f64 / 1e9, &[Obs { rto, ..obs(0, 0) }]));
            }
            log
        };
        let log = ride(450 * NS_PER_MS);
        assert_eq!(
            log.iter().map(|d| d.backup).collect::<Vec<_>>(),
            [true, false],
            "merged: one B=1, one B=0: {log:?}"
        );
        let backup_ns = log[1].at - log[0].at;
        assert!(
            (550..700).contains(&(backup_ns / NS_PER_MS)),
            "one episode over both ranges: {backup_ns} ns"
        );
        let b0_pos = 500.0 + SPEED * log[1].at as f64 / 1e9;
        assert!(
            (1020.0..1040.0).contains(&b0_pos) && log[1].predicted_lead_ns <= RTT as i64,
            "B=0 within one RTT of the second range's end: {b0_pos} m, {:?}",
            log[1]
        );
        assert!(log[1].idle_past_rto, "backup {backup_ns} ns > RTO 450 ms: {:?}", log[1]);
        assert!(
            !ride(700 * NS_PER_MS)[1].idle_past_rto,
            "backup {backup_ns} ns < RTO 700 ms"
        );
    }

    /// The RTT maximum decays 1 % per fix, not per tick: a 400 ms RTT seen once stays the lead's
    /// RTT (less 1 % per fix since) through the ticks between 1 Hz fixes. Decaying at ticks as
    /// well (20 decisions a second) would shrink it ~20 times faster.
    #[test]
    fn rtt_maximum_decays_at_fixes_only() {
        let mut c = Controller::new(cfg(Policy::Paper, false), One, vec![Some("A".into())], NS_PER_S);
        let mut log = Vec::new();
        let mut fixes_seen = 0u64;
        for ms in (0..15_000u64).step_by(50) {
            let t = ms * NS_PER_MS;
            // 400 ms at the first fix the fit can use (the third), 50 ms ever after.
            let o = Obs {
                rtt: if ms == 2000 { 400 * NS_PER_MS } else { RTT },
                ..obs(0, 0)
            };
            let ds = if ms % 1000 == 0 {
                fixes_seen += 1;
                c.on_fix(t, 100.0 + SPEED * ms as f64 / 1e3, &[o])
            } else {
                c.on_tick(t, &[o])
            };
            // One decay per fix after the third.
            let mut hi = 400 * NS_PER_MS;
            for _ in 3..fixes_seen {
                hi -= hi / 100;
            }
            for d in &ds {
                assert_ne!(d.at % NS_PER_S, 0, "decided at a tick: {d:?}");
                assert_eq!(d.rtt, hi, "{fixes_seen} fixes: {d:?}");
            }
            log.extend(ds);
        }
        // B=1 ~3.4 s ahead (RTT + three 1 s periods) after 5 decays, B=0 after 8: still > 300 ms.
        assert_eq!(
            log.iter()
                .map(|d| (d.backup, d.rtt > 300 * NS_PER_MS))
                .collect::<Vec<_>>(),
            [(true, true), (false, true)],
            "{log:?}"
        );
    }
}
