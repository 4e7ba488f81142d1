//! Peekaboo (from the published description).
//!
//! Source: H. Wu, Ö. Alay, A. Brunstrom, G. Caso, S. Ferlin, "Peekaboo: Learning-based Multipath
//! Scheduling for Dynamic Heterogeneous Environments", IEEE JSAC 38(10), 2020 (MPQUIC);
//! algorithms.md §Peekaboo. No public text of its exact rules was available, so this is a
//! reconstruction of what the paper describes: when the fastest path cannot take the packet, an
//! online learner decides between *waiting for the fast path* and *sending on the slower one*,
//! combining a deterministic completion-time estimate (ECF's) with learning from path features,
//! tuned by α.
//!
//! Choices made:
//! - **When it decides**: only when minRTT's choice `s` ([`super::minrtt::select`]) is not the
//!   fastest established subflow `f`. Otherwise it behaves as minRTT (send on `s`, or wait when
//!   minRTT waits).
//! - **Learner**: disjoint LinUCB (Li et al., WWW 2010) with two arms, 0 = wait, 1 = send-slow;
//!   per arm `A = I + Σ x xᵀ` (inverse kept by Sherman–Morrison), `b = Σ r x`, `θ = A⁻¹ b`;
//!   score = `θ·x + c·√(xᵀA⁻¹x) + α·prior/√(1 + n)` with `c` = [`UCB_WIDTH`], `n` = episodes
//!   completed on that arm. With probability ε (default [`DEFAULT_EPSILON`]) the arm is drawn at
//!   random instead (the "stochastic adjustment"); exact ties are broken at random. All randomness
//!   comes from a ChaCha8 stream seeded by the constructor's `seed`.
//! - **Prior** (α, default [`DEFAULT_ALPHA`]): ECF's test ([`super::ecf::verdict`], β = 1/4, no
//!   hysteresis, δ = max(RTTVAR_f, RTTVAR_s) as in the ECF paper, no floor): prior = 1 for the arm
//!   ECF would take, 0 for the other. It fades as the arm gathers episodes; ECF's verdict is also
//!   a feature, so the learner can learn where ECF is right.
//! - **Context** `x` (10 values, each in [0, 1]): 1 (bias), ECF-says-wait, min(srtt_s/srtt_f, 10)/10,
//!   in-flight/cwnd of f and of s, min(RTTVAR/srtt, 1) of f and of s, loss rate of f and of s,
//!   min(unsent/(cwnd_f·mss_f), 8)/8.
//! - **Episodes and reward**: a chosen arm is *committed* for one interval of
//!   `srtt_s + srtt_f` (≥ 1 ms): every decision in that interval that reaches the learner gets
//!   the same arm, and the reward is the connection-level data acknowledged
//!   ([`SchedEvent::DataAcked`]) during it (`start < t ≤ end`), normalised by what both windows
//!   would deliver in that time, `(cwnd_f·mss_f/srtt_f + cwnd_s·mss_s/srtt_s)·interval`, clipped to
//!   [0, 2]. The episode is closed (and the arm updated) by the first event or decision at or
//!   after its end.
//! - [`Scheduler::rcvbuf_optimisation`] = false (MPQUIC has no such mechanism).
use super::{ecf, minrtt, ConnView, Decision, SchedEvent, Scheduler, SubflowView};
use crate::core::rng::Rng;
use crate::core::Time;
use rand::{Rng as _, SeedableRng};

/// Context dimension.
pub const DIM: usize = 10;
/// LinUCB exploration width `c`.
pub const UCB_WIDTH: f64 = 0.5;
pub const DEFAULT_ALPHA: f64 = 1.0;
pub const DEFAULT_EPSILON: f64 = 0.05;
pub const WAIT: usize = 0;
pub const SEND_SLOW: usize = 1;
const MIN_INTERVAL: Time = 1_000_000;

type Vector = [f64; DIM];

#[derive(Clone, Debug)]
struct Arm {
    a_inv: [[f64; DIM]; DIM],
    b: Vector,
    episodes: u64,
}

impl Arm {
    fn new() -> Self {
        let mut a_inv = [[0.0; DIM]; DIM];
        for (i, row) in a_inv.iter_mut().enumerate() {
            row[i] = 1.0;
        }
        Arm {
            a_inv,
            b: [0.0; DIM],
            episodes: 0,
        }
    }

    fn a_inv_x(&self, x: &Vector) -> Vector {
        let mut out = [0.0; DIM];
        for (o, row) in out.iter_mut().zip(&self.a_inv) {
            *o = row.iter().zip(x).map(|(a, b)| a * b).sum();
        }
        out
    }

    /// (estimated reward θ·x, confidence width √(xᵀA⁻¹x)).
    fn estimate(&self, x: &Vector) -> (f64, f64) {
        let ax = self.a_inv_x(x);
        let theta = self.a_inv_x(&self.b);
        let mean = theta.iter().zip(x).map(|(t, v)| t * v).sum();
        let var: f64 = ax.iter().zip(x).map(|(a, v)| a * v).sum();
        (mean, var.max(0.0).sqrt())
    }

    fn update(&mut self, x: &Vector, reward: f64) {
        let ax = self.a_inv_x(x);
        let denom = 1.0 + ax.iter().zip(x).map(|(a, v)| a * v).sum::<f64>();
        for i in 0..DIM {
            for j in 0..DIM {
                self.a_inv[i][j] -= ax[i] * ax[j] / denom;
            }
            self.b[i] += reward * x[i];
        }
        self.episodes += 1;
    }
}

#[derive(Clone, Debug)]
struct Episode {
    arm: usize,
    x: Vector,
    start: Time,
    end: Time,
    acked: u64,
    norm_bytes: f64,
}

#[derive(Clone, Debug)]
pub struct Peekaboo {
    arms: [Arm; 2],
    alpha: f64,
    epsilon: f64,
    rng: Rng,
    episode: Option<Episode>,
}

impl Peekaboo {
    /// `alpha` ≥ 0 weights the ECF prior; `epsilon` in [0, 1] is the random-exploration
    /// probability; `seed` seeds the learner's own random stream.
    pub fn new(alpha: f64, epsilon: f64, seed: u64) -> Self {
        Peekaboo {
            arms: [Arm::new(), Arm::new()],
            alpha,
            epsilon,
            rng: Rng::seed_from_u64(seed),
            episode: None,
        }
    }

    /// Episodes completed per arm ([wait, send-slow]).
    pub fn episodes(&self) -> [u64; 2] {
        [self.arms[0].episodes, self.arms[1].episodes]
    }

    fn close_if_over(&mut self, now: Time) {
        if let Some(ep) = self.episode.take_if(|ep| ep.end <= now) {
            let reward = (ep.acked as f64 / ep.norm_bytes).clamp(0.0, 2.0);
            self.arms[ep.arm].update(&ep.x, reward);
        }
    }

    fn choose(&mut self, x: &Vector, ecf_wait: bool) -> usize {
        let explore: f64 = self.rng.gen();
        let coin: bool = self.rng.gen();
        if explore < self.epsilon {
            return usize::from(coin);
        }
        let score = |arm: usize, this: &Self| {
            let (mean, width) = this.arms[arm].estimate(x);
            let prior = if (arm == WAIT) == ecf_wait { 1.0 } else { 0.0 };
            mean + UCB_WIDTH * width + this.alpha * prior / (1.0 + this.arms[arm].episodes as f64).sqrt()
        };
        let (w, s) = (score(WAIT, self), score(SEND_SLOW, self));
        if (w - s).abs() <= 1e-12 * (1.0 + w.abs()) {
            usize::from(coin)
        } else if w > s {
            WAIT
        } else {
            SEND_SLOW
        }
    }
}

fn ratio(a: f64, b: f64, cap: f64) -> f64 {
    if b <= 0.0 {
        0.0
    } else {
        (a / b).clamp(0.0, cap) / cap
    }
}

/// The context vector (see the module docs).
fn features(f: &SubflowView, s: &SubflowView, unsent: u64, ecf_wait: bool) -> Vector {
    let rtt_ratio = if f.srtt == 0 {
        0.1
    } else {
        ratio(s.srtt as f64, f.srtt as f64, 10.0)
    };
    [
        1.0,
        f64::from(u8::from(ecf_wait)),
        rtt_ratio,
        ratio(f.in_flight as f64, f.cwnd as f64, 1.0),
        ratio(s.in_flight as f64, s.cwnd as f64, 1.0),
        ratio(f.rttvar as f64, f.srtt as f64, 1.0),
        ratio(s.rttvar as f64, s.srtt as f64, 1.0),
        f.loss_rate.clamp(0.0, 1.0),
        s.loss_rate.clamp(0.0, 1.0),
        ratio(unsent as f64, f.cwnd as f64 * f.mss as f64, 8.0),
    ]
}

/// Bytes/s a subflow's window delivers (0 without an RTT sample).
fn window_rate(v: &SubflowView) -> f64 {
    if v.srtt == 0 {
        0.0
    } else {
        v.cwnd as f64 * v.mss as f64 * 1e9 / v.srtt as f64
    }
}

impl Scheduler for Peekaboo {
    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "peekaboo".into()
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        self.close_if_over(conn.now);
        let Some(k) = minrtt::select(subflows, conn.segment.sent_on) else {
            return Decision::Wait;
        };
        let s = &subflows[k];
        let Some(fi) = minrtt::fastest(subflows) else {
            return Decision::Send(s.id);
        };
        if fi == k {
            return Decision::Send(s.id);
        }
        let f = &subflows[fi];
        let arm = match &self.episode {
            Some(ep) => ep.arm,
            None => {
                let delta = f.rttvar.max(s.rttvar);
                let ecf_wait = ecf::verdict(f, s, conn.unsent_bytes, false, delta) == ecf::EcfVerdict::Wait;
                let x = features(f, s, conn.unsent_bytes, ecf_wait);
                let arm = self.choose(&x, ecf_wait);
                let interval = (s.srtt + f.srtt).max(MIN_INTERVAL);
                let norm_bytes = ((window_rate(f) + window_rate(s)) * interval as f64 / 1e9).max(1.0);
                self.episode = Some(Episode {
                    arm,
                    x,
                    start: conn.now,
                    end: conn.now + interval,
                    acked: 0,
                    norm_bytes,
                });
                arm
            }
        };
        if arm == WAIT {
            Decision::Wait
        } else {
            Decision::Send(s.id)
        }
    }

    fn on_event(&mut self, ev: &SchedEvent, _subflows: &[SubflowView]) {
        if let SchedEvent::DataAcked { now, bytes } = *ev {
            if let Some(ep) = &mut self.episode {
                if now > ep.start && now <= ep.end {
                    ep.acked += bytes;
                }
            }
            self.close_if_over(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// Fast 0 (10 ms, full) and slow 1 (12 ms, empty): ECF says "send on the slow one".
    fn views() -> [SubflowView; 2] {
        let mut f = sf(0, 10, 10, 10);
        f.rttvar = MS;
        let mut s = sf(1, 12, 10, 0);
        s.rttvar = MS;
        [f, s]
    }

    /// Synthetic environment: every 5 ms the scheduler decides, and the data acknowledged in
    /// that step depends on the decision (`wait_bytes` after a wait, `send_bytes` after a send).
    fn run(p: &mut Peekaboo, steps: u64, wait_bytes: u64, send_bytes: u64) -> Vec<Decision> {
        let sfs = views();
        (1..=steps)
            .map(|i| {
                let now = i * 5 * MS;
                let d = p.schedule(&conn(now / MS), &sfs);
                let bytes = if d == Decision::Wait { wait_bytes } else { send_bytes };
                p.on_event(&SchedEvent::DataAcked { now, bytes }, &sfs);
                d
            })
            .collect()
    }

    fn wait_share(ds: &[Decision]) -> f64 {
        ds.iter().filter(|d| **d == Decision::Wait).count() as f64 / ds.len() as f64
    }

    #[test]
    fn ecf_prior_decides_before_any_learning() {
        let sfs = views();
        let mut p = Peekaboo::new(1.0, 0.0, 1);
        assert_eq!(p.schedule(&conn(0), &sfs), Decision::Send(1));
        // A much slower second path: ECF (and so the prior) says wait.
        let mut slow = sfs.clone();
        slow[1].srtt = 100 * MS;
        let mut p = Peekaboo::new(1.0, 0.0, 1);
        assert_eq!(p.schedule(&conn(0), &slow), Decision::Wait);
    }

    #[test]
    fn learns_to_wait_when_waiting_pays_off() {
        let mut p = Peekaboo::new(DEFAULT_ALPHA, DEFAULT_EPSILON, 7);
        let ds = run(&mut p, 3000, 20_000, 5_000);
        assert_eq!(ds[0], Decision::Send(1), "the ECF prior starts with sending");
        let late = wait_share(&ds[2000..]);
        assert!(late > 0.85, "wait share at the end {late}");
        assert!(p.episodes()[WAIT] > 100);
    }

    #[test]
    fn learns_to_send_when_sending_pays_off_against_the_prior() {
        let mut p = Peekaboo::new(DEFAULT_ALPHA, DEFAULT_EPSILON, 7);
        let mut sfs = views();
        sfs[1].srtt = 100 * MS; // ECF says wait
        let ds: Vec<Decision> = (1..=6000u64)
            .map(|i| {
                let now = i * 5 * MS;
                let d = p.schedule(&conn(now / MS), &sfs);
                let bytes = if d == Decision::Wait { 2_000 } else { 30_000 };
                p.on_event(&SchedEvent::DataAcked { now, bytes }, &sfs);
                d
            })
            .collect();
        assert_eq!(ds[0], Decision::Wait);
        let late = wait_share(&ds[4000..]);
        assert!(late < 0.15, "wait share at the end {late}");
    }

    #[test]
    fn deterministic_for_a_seed() {
        let a = run(&mut Peekaboo::new(0.2, 0.1, 42), 2000, 9_000, 10_000);
        let b = run(&mut Peekaboo::new(0.2, 0.1, 42), 2000, 9_000, 10_000);
        assert_eq!(a, b);
        let c = run(&mut Peekaboo::new(0.2, 0.1, 43), 2000, 9_000, 10_000);
        assert_ne!(a, c, "the seed drives exploration");
    }

    #[test]
    fn committed_arm_holds_for_one_interval_and_reward_counts_only_inside_it() {
        let sfs = views();
        let mut p = Peekaboo::new(1.0, 0.0, 3);
        assert_eq!(p.schedule(&conn(0), &sfs), Decision::Send(1)); // interval 22 ms
                                                                   // Within the interval the arm holds even for a context where ECF would wait.
        let mut slow = sfs.clone();
        slow[1].srtt = 100 * MS;
        assert_eq!(p.schedule(&conn(10), &slow), Decision::Send(1));
        p.on_event(
            &SchedEvent::DataAcked {
                now: 22 * MS,
                bytes: 1000,
            },
            &sfs,
        );
        assert_eq!(p.episodes(), [0, 1]);
        assert!(p.episode.is_none());
        // b of the send arm = reward·x with reward = 1000 / norm.
        let norm = (10.0 * 1448.0 / 0.010 + 10.0 * 1448.0 / 0.012) * 0.022;
        assert!((p.arms[SEND_SLOW].b[0] - 1000.0 / norm).abs() < 1e-9);
    }

    #[test]
    fn behaves_as_minrtt_when_the_fastest_can_send() {
        let mut sfs = views();
        sfs[0].in_flight = 0;
        let mut p = Peekaboo::new(1.0, 0.0, 1);
        assert_eq!(p.schedule(&conn(0), &sfs), Decision::Send(0));
        sfs[0].in_flight = 10;
        sfs[1].in_flight = 10;
        assert_eq!(p.schedule(&conn(0), &sfs), Decision::Wait);
        assert!(p.episode.is_none());
        assert!(!p.rcvbuf_optimisation());
    }
}
