//! The PHA-D decision logic (P0 §3.3) for the live router: the same state machine as the
//! simulator's controller (crates/sim/src/hst/phad.rs, `PhaD`), kept in step with it by
//! `tests/phad_vs_sim.rs`, which drives both through the same rides and asserts identical
//! decisions. It is a port rather than a dependency so that the router binary does not link the
//! simulator (and because the router knows each subflow's own queue, which the simulator's
//! controller takes as one fixed `lead_ms`).
//!
//! Differences from the simulator's controller, each because the router owns its connections:
//! - `queue-aware`: the lead of B=1 is `RTT + drain + three GPS periods + lead_ms`, where `drain`
//!   is *that subflow's* measured send-queue drain time (not-yet-sent bytes over the sending rate,
//!   read from the kernel at each decision). With `drain = lead_ms_sim` it is the simulator's rule.
//! - `resend_b0` (on by default in the daemon, the `resend` policy in the simulator): after B=0,
//!   it is re-sent every RTT until the path carries data again (Linux sends MP_PRIO once, on a
//!   pure ACK, and never repeats it). A subflow-less endpoint has nothing to re-send to: restoring
//!   ends at once.
//! - A backup episode longer than the subflow's RTO is reported (`Decision::idle_past_rto`): the
//!   sender then restarts the path from its initial window (RFC 5681 §4.1, Linux
//!   `tcp_slow_start_after_idle`). The controller keeps every backup as short as its rules allow —
//!   B=1 no earlier than `RTT + drain` (plus the GPS margin) before the range, B=0 one RTT before
//!   its end — but it cannot shorten a range.
pub type Time = u64;
pub const NS_PER_MS: Time = 1_000_000;
pub const NS_PER_S: Time = 1_000_000_000;

/// How far past the last GPS fix [`Controller::on_tick`] still extrapolates (as the simulator).
pub const MAX_EXTRAPOLATION: Time = 2 * NS_PER_S;

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

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Obs {
    /// Smoothed RTT, ns (0 = unknown: 100 ms is assumed, as in the simulator).
    pub rtt: Time,
    /// Time to drain the subflow's not-yet-sent bytes, ns.
    pub drain: Time,
    /// A counter that grows while the path carries data (bytes received + bytes acked).
    pub rx: u64,
    /// Whether the endpoint has any subflow at all.
    pub has_subflows: bool,
    /// Retransmission timeout, ns (0 = unknown).
    pub rto: Time,
    /// The server proxy's drain time towards this path (phad/peer.rs), when known; `drain`
    /// already includes it (the larger of the two). Only reported.
    pub peer_drain: Option<Time>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub policy: Policy,
    /// Extra fixed lead of B=1, ms (`queue-aware` only, as in the simulator).
    pub lead_ms: f64,
    /// Re-send B=0 every RTT until data flows (always true for `resend`).
    pub resend_b0: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Regular,
    Backup { end_m: f64, since: Time },
    Restoring { at: Time, rx: u64, since: Time },
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

pub struct Controller<T: Ranges> {
    cfg: Config,
    table: T,
    operators: Vec<Option<String>>,
    states: Vec<State>,
    handled_end_m: Vec<f64>,
    rtt_hi: Vec<Time>,
    fixes: std::collections::VecDeque<(Time, f64)>,
    gps_period: Time,
    pub log: Vec<Decision>,
}

impl<T: Ranges> Controller<T> {
    pub fn new(cfg: Config, table: T, operators: Vec<Option<String>>, gps_period: Time) -> Self {
        let n = operators.len();
        let cfg = Config { resend_b0: cfg.resend_b0 || cfg.policy == Policy::Resend, ..cfg };
        Controller {
            cfg,
            table,
            operators,
            states: vec![State::Regular; n],
            handled_end_m: vec![f64::NEG_INFINITY; n],
            rtt_hi: vec![0; n],
            fixes: Default::default(),
            gps_period,
            log: Vec::new(),
        }
    }

    /// Whether subflow `k` is (or is being restored from) backup.
    pub fn is_backup(&self, k: usize) -> bool {
        matches!(self.states.get(k), Some(State::Backup { .. }))
    }

    /// Least-squares position and speed over the fit window (the simulator's fit, from the
    /// crate both use, crates/hst).
    fn estimate(&self, now: Time) -> Option<(f64, f64)> {
        mobipath_hst::fit::position_and_speed(self.fixes.iter(), now)
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

    /// A decision between fixes from the extrapolated position; nothing more than
    /// [`MAX_EXTRAPOLATION`] after the last fix.
    pub fn on_tick(&mut self, now: Time, obs: &[Obs]) -> Vec<Decision> {
        match self.fixes.back() {
            Some(&(t, _)) if now >= t && now - t <= MAX_EXTRAPOLATION => self.decide(now, obs, false),
            _ => Vec::new(),
        }
    }

    fn decide(&mut self, now: Time, obs: &[Obs], at_fix: bool) -> Vec<Decision> {
        let mut out = Vec::new();
        let Some((pos_m, speed)) = self.estimate(now) else { return out };
        if speed <= 0.1 {
            return out;
        }
        let secs = |d_m: f64| (d_m / speed * 1e9) as i64;
        for k in 0..self.states.len() {
            let Some(op) = self.operators[k].clone() else { continue };
            let o = obs.get(k).copied().unwrap_or_default();
            let now_rtt = if o.rtt > 0 { o.rtt } else { 100 * NS_PER_MS };
            let decayed = if at_fix { self.rtt_hi[k] - self.rtt_hi[k] / 100 } else { self.rtt_hi[k] };
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
                    let Some(r) = self.table.next_range(&op, pos_m) else { continue };
                    if r.end_m <= self.handled_end_m[k] {
                        continue;
                    }
                    let to_start = secs(r.start_m - pos_m);
                    let extra = if self.cfg.policy == Policy::QueueAware { (self.cfg.lead_ms * 1e6) as i64 + o.drain as i64 } else { 0 };
                    let lead = (rtt_k + 3 * self.gps_period) as i64 + extra;
                    if to_start <= lead && r.end_m > pos_m {
                        self.states[k] = State::Backup { end_m: r.end_m, since: now };
                        self.handled_end_m[k] = r.end_m;
                        let d = mk(true, false, to_start, false);
                        self.log.push(d.clone());
                        out.push(d);
                    }
                }
                State::Backup { end_m, since } => {
                    let to_end = secs(end_m - pos_m);
                    if to_end <= rtt_k as i64 {
                        if let Some(next) = self.table.next_range(&op, end_m + 1e-6) {
                            let gap = secs(next.start_m - end_m);
                            if next.end_m > self.handled_end_m[k] && gap <= (2 * rtt_k + 2 * self.gps_period) as i64 {
                                self.states[k] = State::Backup { end_m: next.end_m, since };
                                self.handled_end_m[k] = next.end_m;
                                continue;
                            }
                        }
                        self.states[k] = State::Restoring { at: now, rx: o.rx, since };
                        let idle = o.rto > 0 && now - since > o.rto;
                        let d = mk(false, false, to_end, idle);
                        self.log.push(d.clone());
                        out.push(d);
                    }
                }
                State::Restoring { at, rx: rx_then, since } => {
                    let data_flows = o.rx > rx_then;
                    if !self.cfg.resend_b0 || data_flows || !o.has_subflows {
                        self.states[k] = State::Regular;
                    } else if now >= at + rtt_k {
                        self.states[k] = State::Restoring { at: now, rx: rx_then, since };
                        let d = mk(false, true, 0, false);
                        self.log.push(d.clone());
                        out.push(d);
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
            (op == "A" && pos <= 1013.0).then_some(Range { start_m: 990.0, end_m: 1013.0 })
        }
    }

    const SPEED: f64 = 83.33;
    const RTT: Time = 50 * NS_PER_MS;

    fn ride(cfg: Config, obs_of: impl Fn(Time) -> Obs) -> Vec<Decision> {
        let mut c = Controller::new(cfg, One, vec![Some("A".into()), Some("B".into())], 10 * NS_PER_MS);
        for i in 0..2000u64 {
            let t = i * 10 * NS_PER_MS;
            let o = obs_of(t);
            c.on_fix(t, 500.0 + SPEED * t as f64 / 1e9, &[o, Obs { rtt: RTT, has_subflows: true, ..Default::default() }]);
        }
        c.log
    }

    fn cfg(policy: Policy, resend_b0: bool) -> Config {
        Config { policy, lead_ms: 0.0, resend_b0 }
    }

    fn obs(drain_ms: u64, rx: u64) -> Obs {
        Obs { rtt: RTT, drain: drain_ms * NS_PER_MS, rx, has_subflows: true, rto: 250 * NS_PER_MS, peer_drain: None }
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
            assert!(b1.predicted_lead_ns <= want && b1.predicted_lead_ns > want - 10 * NS_PER_MS as i64, "drain {drain_ms}: {b1:?}");
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
        let log = ride(cfg(Policy::QueueAware, true), |t| obs(0, if t >= flows_at { 7 } else { 0 }));
        let b0: Vec<&Decision> = log.iter().filter(|d| !d.backup).collect();
        assert_eq!(b0[0].at, first_b0);
        assert!(!b0[0].resend && b0[1..].iter().all(|d| d.resend));
        // 230 ms without data at a 50 ms RTT: re-sends at +50, +100, +150, +200 ms.
        assert_eq!(b0.len(), 5, "{b0:?}");
        assert!(b0.windows(2).all(|w| w[1].at - w[0].at >= RTT));
        assert!(b0.last().unwrap().at < flows_at);
        // Without re-sending: once.
        assert_eq!(ride(cfg(Policy::QueueAware, false), |_| obs(0, 0)).iter().filter(|d| !d.backup).count(), 1);
        // An endpoint without subflows has nothing to re-send to.
        let none = ride(cfg(Policy::Resend, true), |_| Obs { has_subflows: false, ..obs(0, 0) });
        assert_eq!(none.iter().filter(|d| !d.backup).count(), 1);
    }

    #[test]
    fn a_backup_longer_than_the_rto_is_reported() {
        // The backup lasts (23 m + leads) / 83 m/s ≈ 350 ms.
        let long = ride(cfg(Policy::Paper, false), |_| obs(0, 0));
        assert!(long[1].idle_past_rto, "{:?}", long[1]);
        let short = ride(cfg(Policy::Paper, false), |_| Obs { rto: 2 * NS_PER_S, ..obs(0, 0) });
        assert!(!short[1].idle_past_rto);
    }

    #[test]
    fn nothing_without_enough_fixes_or_when_standing() {
        let mut c = Controller::new(cfg(Policy::Paper, true), One, vec![Some("A".into())], 100 * NS_PER_MS);
        for i in 0..50u64 {
            assert!(c.on_fix(i * 100 * NS_PER_MS, 985.0, &[obs(0, 0)]).is_empty(), "standing inside the lead");
        }
        assert!(c.on_tick(60 * NS_PER_S, &[obs(0, 0)]).is_empty());
    }
}
