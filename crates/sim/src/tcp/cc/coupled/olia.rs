//! OLIA, the Opportunistic Linked-Increases Algorithm.
//!
//! Sources: R. Khalili, N. Gast, M. Popovic, J.-Y. Le Boudec, "MPTCP Is Not Pareto-Optimal:
//! Performance Issues and a Possible Solution", IEEE/ACM ToN 21(5), 2013 (§V, eq. (5));
//! draft-khalili-mptcp-congestion-control; Linux out-of-tree MPTCP `net/mptcp/mptcp_olia.c`.
//!
//! What it does:
//! - Slow start, loss response (ssthresh = max(cwnd/2, 2), i.e. halve) and RTO as Reno.
//! - Loss intervals: `l_r = max(l1r, l2r)`, `l1r` the bytes between the last two loss events of
//!   subflow r, `l2r` the bytes since its last one (paper §V; Linux `mptcp_loss1..3`). Each
//!   subflow's controller records its own loss events exactly (`set_state` into Recovery or
//!   Loss, not on a repeated RTO, and only if bytes were ACKed since the last one — as Linux's
//!   `mptcp_olia_set_state`) in the shared table ([`super::LossRecord`]); siblings read each
//!   other's records there, as Linux's `mptcp_get_epsilon` reads every subflow's counters.
//! - M = subflows with the largest cwnd; B = subflows with the best `l_r/rtt_r²` — `l`, not
//!   `l²`, as Linux: it ranks paths by the rate a TCP would get there, `√(2·l_r)/rtt_r`.
//!   Compared exactly in integers (`l_a·rtt_b²` vs `l_b·rtt_a²`), so ties are ties.
//! - ε: if B\M is empty all ε_r = 0; else ε_r = +1/(n·|B\M|) for r ∈ B\M, −1/(n·|M|) for
//!   r ∈ M, 0 otherwise (n = number of subflows counted).
//! - Per ACKed segment in congestion avoidance, in segments:
//!   `cwnd_r += (w_r/rtt_r²)/(Σ_p w_p/rtt_p)² + ε_r/w_r`; the fractional part accumulates in a
//!   counter and cwnd moves by whole segments (down to 1) as in Linux.
//! - Subflows counted: active with an RTT sample, backups included (see [`super::paths`]).
//!   With one such subflow it is Reno.
//!
//! Deviations from Linux:
//! - Floating point instead of the 2^10-scaled counter; the remainder is carried over instead of
//!   reset to 0 when cwnd moves, and `acked` segments count `acked` times (Linux counts one per
//!   ACK). Slow-start leftovers go to congestion avoidance as in `tcp_reno_cong_avoid`.
//! - Byte counts are bytes cumulatively ACKed on the subflow (Linux: `snd_una`, the same thing
//!   in sequence space). Linux skips a loss event while RTO retransmissions are outstanding
//!   (`icsk_retransmits`); here a repeated RTO is skipped. (An RTO during fast recovery is no
//!   new event in either: the byte count moves only in congestion avoidance, like
//!   `mptcp_loss3`.)
//! - Linux uses ssthresh instead of cwnd for subflows in fast recovery (undoing the RFC 5681
//!   inflation); the table has no state, and this sender does not inflate cwnd (PRR).
use super::{paths, publish, reno_ssthresh, slow_start_part, Coupling, LossRecord};
use crate::core::Time;
use crate::tcp::cc::{CaState, CongestionControl, Tcb};
use std::cmp::Ordering;

/// One subflow's inputs to OLIA.
#[derive(Clone, Copy, Debug)]
pub struct OliaPath {
    /// Window in segments.
    pub cwnd: u32,
    /// Smoothed RTT in ns.
    pub rtt: Time,
    /// Loss interval l_r in bytes.
    pub interval: u64,
}

/// ε_r for every subflow (Linux `mptcp_get_epsilon`).
pub fn epsilons(ps: &[OliaPath]) -> Vec<f64> {
    // a better than b in l/rtt²  ⇔  l_a·rtt_b² > l_b·rtt_a².
    let cmp = |a: &OliaPath, b: &OliaPath| {
        (a.interval as u128 * (b.rtt as u128).pow(2)).cmp(&(b.interval as u128 * (a.rtt as u128).pow(2)))
    };
    let Some(best) = ps.iter().max_by(|a, b| cmp(a, b)) else {
        return vec![];
    };
    let max_cwnd = ps.iter().map(|p| p.cwnd).max().unwrap_or(0);
    let in_m = |p: &OliaPath| p.cwnd == max_cwnd;
    let in_b = |p: &OliaPath| cmp(p, best) == Ordering::Equal;
    let m = ps.iter().filter(|p| in_m(p)).count() as f64;
    let b_not_m = ps.iter().filter(|p| in_b(p) && !in_m(p)).count() as f64;
    let n = ps.len() as f64;
    ps.iter()
        .map(|p| {
            if b_not_m == 0.0 {
                0.0
            } else if in_m(p) {
                -1.0 / (n * m)
            } else if in_b(p) {
                1.0 / (n * b_not_m)
            } else {
                0.0
            }
        })
        .collect()
}

/// Window change of `ps[me]` per ACKed segment: `(w_r/rtt_r²)/(Σ_p w_p/rtt_p)² + ε_r/w_r`.
pub fn increase(ps: &[OliaPath], me: usize, eps: f64) -> f64 {
    let sum: f64 = ps.iter().map(|p| p.cwnd as f64 / p.rtt as f64).sum();
    let (w, r) = (ps[me].cwnd as f64, ps[me].rtt as f64);
    w / (r * r) / (sum * sum) + eps / w
}

pub struct Olia {
    coupling: Coupling,
    index: usize,
    /// This subflow's loss events (mirrored into its table entry for the siblings).
    own: LossRecord,
    /// Fractional window change carried between ACKs, in segments.
    cnt: f64,
}

impl Olia {
    pub fn new(coupling: Coupling, index: usize) -> Self {
        Olia {
            coupling,
            index,
            own: LossRecord::default(),
            cnt: 0.0,
        }
    }

    /// Loss interval l_r of subflow `index`: its own record for this subflow, the sibling's
    /// record from the table otherwise.
    fn interval(&self, index: usize) -> u64 {
        if index == self.index {
            self.own.interval()
        } else {
            self.coupling.borrow().get(index).map_or(0, |e| e.losses.interval())
        }
    }

    /// Loss events of this subflow so far.
    pub fn loss_events(&self) -> u64 {
        self.own.events
    }

    /// Copies this subflow's loss record into its table entry.
    fn publish_losses(&self) {
        if let Some(e) = self.coupling.borrow_mut().get_mut(self.index) {
            e.losses = self.own;
        }
    }

    /// `mptcp_loss3 = snd_una` at the start of congestion avoidance.
    fn observe(&mut self, tcb: &Tcb) {
        self.own.now = match self.coupling.borrow().get(self.index) {
            Some(e) => e.bytes_acked,
            None => tcb.delivered * tcb.mss as u64,
        };
        self.publish_losses();
    }

    fn coupled_increase(&mut self, tcb: &mut Tcb, acked: u32) {
        let (paths, me) = paths(&self.coupling, self.index, tcb);
        let me = match me {
            Some(me) if paths.len() > 1 => me,
            _ => return tcb.cong_avoid_ai(tcb.cwnd, acked),
        };
        let ps: Vec<OliaPath> = paths
            .iter()
            .map(|p| OliaPath {
                cwnd: p.cwnd,
                rtt: p.rtt,
                interval: self.interval(p.index),
            })
            .collect();
        let eps = epsilons(&ps)[me];
        self.cnt += acked as f64 * increase(&ps, me, eps);
        const SLACK: f64 = 1e-9;
        if self.cnt >= 1.0 - SLACK {
            let k = (self.cnt + SLACK).floor();
            tcb.cwnd = (tcb.cwnd as f64 + k).min(tcb.cwnd_clamp as f64) as u32;
            self.cnt -= k;
        } else if self.cnt <= -1.0 + SLACK {
            let k = (-self.cnt + SLACK).floor();
            tcb.cwnd = (tcb.cwnd as f64 - k).max(1.0) as u32;
            self.cnt += k;
        }
    }
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, _now: Time) {
        self.observe(tcb);
        if let Some(acked) = slow_start_part(tcb, acked) {
            self.coupled_increase(tcb, acked);
        }
        publish(&self.coupling, self.index, tcb);
    }

    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        reno_ssthresh(tcb)
    }

    fn set_state(&mut self, tcb: &mut Tcb, new_state: CaState, _now: Time) {
        let repeated_rto = new_state == CaState::Loss && tcb.ca_state == CaState::Loss;
        if matches!(new_state, CaState::Loss | CaState::Recovery) && !repeated_rto && self.own.on_loss() {
            self.publish_losses();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{self, Fluid};
    use super::super::{new_coupling, SubflowCc};
    use super::*;
    use crate::core::time::NS_PER_MS;
    use crate::tcp::cc::reno::Reno;
    use crate::tcp::cc::RecoveryStyle;

    fn op(cwnd: u32, rtt_ms: u64, interval: u64) -> OliaPath {
        OliaPath {
            cwnd,
            rtt: rtt_ms * NS_PER_MS,
            interval,
        }
    }

    #[test]
    fn epsilon_zero_when_best_paths_have_the_largest_windows() {
        // Subflow 0: largest window and best l/rtt².
        let e = epsilons(&[op(30, 100, 90_000), op(10, 100, 50_000), op(5, 50, 10_000)]);
        assert_eq!(e, vec![0.0, 0.0, 0.0]);
        // Both in M and both equally good: B\M empty.
        let e = epsilons(&[op(20, 100, 40_000), op(20, 50, 10_000)]);
        assert_eq!(e, vec![0.0, 0.0]);
    }

    #[test]
    fn epsilon_moves_window_from_m_to_b_minus_m() {
        // n = 3. 0 ∈ M (largest window, poor path); 1 ∈ B\M (best l/rtt²); 2 neither.
        let e = epsilons(&[op(30, 100, 10_000), op(10, 100, 50_000), op(5, 100, 20_000)]);
        assert_eq!(e, vec![-1.0 / 3.0, 1.0 / 3.0, 0.0]);
        // n = 4, |M| = 2, |B\M| = 2; l/rtt² ties compared exactly (40000/50² = 160000/100²).
        let e = epsilons(&[
            op(30, 100, 10_000),
            op(30, 100, 20_000),
            op(10, 50, 40_000),
            op(8, 100, 160_000),
        ]);
        assert_eq!(e, vec![-1.0 / 8.0, -1.0 / 8.0, 1.0 / 8.0, 1.0 / 8.0]);
        assert_eq!(e.iter().sum::<f64>(), 0.0);
    }

    #[test]
    fn increase_formula() {
        // w = (10, 20) segments, rtt = (100, 50) ms: Σ w/rtt = 0.1 + 0.4 per ms.
        let ps = [op(10, 100, 0), op(20, 50, 0)];
        let per_ms2 = |x: f64| x * 1e-12; // (1/ms²) → (1/ns²)
        let first = per_ms2(10.0 / 1e4) / (per_ms2(0.5 * 0.5));
        assert!((first - 0.004).abs() < 1e-15);
        assert!((increase(&ps, 0, 0.0) - 0.004).abs() < 1e-12);
        assert!((increase(&ps, 0, 0.25) - (0.004 + 0.025)).abs() < 1e-12);
        // Subflow 1: (20/2500)/0.25 = 0.032.
        assert!((increase(&ps, 1, -0.25) - (0.032 - 0.0125)).abs() < 1e-12);
    }

    /// Two controllers sharing a table as the connection core drives them: the core writes
    /// `bytes_acked` (and windows) before each ACK, each controller records its own losses.
    struct Pair {
        c: Coupling,
        o: [Olia; 2],
        tcb: [Tcb; 2],
    }

    impl Pair {
        fn new() -> Pair {
            let c = new_coupling(2);
            for e in c.borrow_mut().iter_mut() {
                *e = SubflowCc {
                    active: true,
                    cwnd: 40,
                    ssthresh: 20,
                    srtt: 100 * NS_PER_MS,
                    mss: 1000,
                    ..Default::default()
                };
            }
            let mut tcb = Tcb::new(1000, 40);
            tcb.ssthresh = 20;
            tcb.srtt = 100 * NS_PER_MS;
            Pair {
                o: [Olia::new(c.clone(), 0), Olia::new(c.clone(), 1)],
                c,
                tcb: [tcb.clone(), tcb],
            }
        }
        /// An ACK on subflow `k` with `bytes` ACKed on it so far.
        fn ack(&mut self, k: usize, bytes: u64) {
            self.c.borrow_mut()[k].bytes_acked = bytes;
            self.o[k].cong_avoid(&mut self.tcb[k], 1, 0);
        }
        /// Subflow `k` enters `state` (Recovery on three dupacks, Loss on an RTO).
        fn enter(&mut self, k: usize, state: CaState) {
            self.o[k].set_state(&mut self.tcb[k], state, 0);
            self.tcb[k].ca_state = state;
        }
        fn recover(&mut self, k: usize) {
            self.o[k].set_state(&mut self.tcb[k], CaState::Open, 0);
            self.tcb[k].ca_state = CaState::Open;
        }
        /// A fast-recovery episode on subflow `k` once `bytes` have been ACKed on it.
        fn loss_at(&mut self, k: usize, bytes: u64) {
            self.ack(k, bytes);
            self.enter(k, CaState::Recovery);
            self.recover(k);
        }
    }

    #[test]
    fn loss_intervals_count_bytes_between_each_subflows_own_losses() {
        let mut p = Pair::new();
        p.ack(0, 1000);
        p.ack(1, 1000);
        // No loss yet: l = bytes ACKed so far, for itself and as the sibling sees it.
        assert_eq!((p.o[0].interval(0), p.o[1].interval(0)), (1000, 1000));
        // Subflow 0 loses at 50 kB ACKed; an RTO in that recovery and a repeated RTO are the
        // same event.
        p.ack(0, 50_000);
        p.enter(0, CaState::Recovery);
        p.enter(0, CaState::Loss);
        p.enter(0, CaState::Loss);
        p.recover(0);
        assert_eq!(p.o[0].loss_events(), 1);
        // Next loss at 70 kB: l1 = 20 kB, l2 = 0.
        p.ack(0, 70_000);
        p.enter(0, CaState::Recovery);
        assert_eq!(p.o[0].interval(0), 20_000);
        assert_eq!(p.o[1].interval(0), 20_000, "the sibling reads the same record");
        p.recover(0);
        // 30 kB since the last loss > 20 kB between the last two.
        p.ack(0, 100_000);
        assert_eq!((p.o[0].interval(0), p.o[1].interval(0)), (30_000, 30_000));
        assert_eq!(p.o[0].loss_events(), 2);
    }

    #[test]
    fn siblings_see_losses_that_leave_the_window_alone_and_ignore_cuts_that_are_not_losses() {
        let mut p = Pair::new();
        // Subflow 1 at cwnd = ssthresh = 2 (a window that a loss cannot shrink) loses at 9 kB
        // and again at 12 kB ACKed. Nothing in its window shows it; its own record does.
        p.tcb[1].cwnd = 2;
        p.tcb[1].ssthresh = 2;
        p.c.borrow_mut()[1].cwnd = 2;
        p.c.borrow_mut()[1].ssthresh = 2;
        p.loss_at(1, 9000);
        p.loss_at(1, 12_000);
        p.ack(1, 13_000);
        p.ack(0, 5000);
        assert_eq!(p.o[0].interval(1), 3000, "l1 = 12 kB − 9 kB");
        // The receive-buffer optimisation halves subflow 1's window (and ssthresh) without a
        // loss: the interval keeps growing with the bytes ACKed since the last loss.
        p.c.borrow_mut()[1].cwnd = 1;
        p.c.borrow_mut()[1].ssthresh = 1;
        p.ack(1, 40_000);
        p.ack(0, 6000);
        assert_eq!(p.o[0].interval(1), 28_000);
        assert_eq!(p.o[1].loss_events(), 2);
    }

    /// ε follows the loss records: the subflow with the longer loss interval (equal RTTs,
    /// smaller window) gets the positive ε, the largest window the negative one.
    #[test]
    fn epsilon_uses_the_siblings_recorded_losses() {
        let mut p = Pair::new();
        // Subflow 0: window 40, losses every 10 kB; subflow 1: window 10, one loss at 50 kB.
        p.c.borrow_mut()[1].cwnd = 10;
        p.tcb[1].cwnd = 10;
        for k in 1..=6 {
            p.loss_at(0, 10_000 * k);
        }
        p.loss_at(1, 50_000);
        p.ack(1, 60_000);
        p.ack(0, 61_000);
        let ps: Vec<OliaPath> = (0..2)
            .map(|k| OliaPath {
                cwnd: [40, 10][k],
                rtt: 100 * NS_PER_MS,
                interval: p.o[0].interval(k),
            })
            .collect();
        assert_eq!((ps[0].interval, ps[1].interval), (10_000, 50_000));
        assert_eq!(epsilons(&ps), vec![-0.5, 0.5]);
    }

    /// One subflow (sibling without RTT sample): Reno, ACK by ACK.
    #[test]
    fn one_subflow_is_reno() {
        let c = new_coupling(2);
        let mut o = Olia::new(c.clone(), 0);
        let mut reno = Reno::new(RecoveryStyle::NewReno);
        let mut a = Tcb::new(1448, 10);
        a.srtt = 100 * NS_PER_MS;
        a.ssthresh = 30;
        let mut b = a.clone();
        for i in 0..3000 {
            o.cong_avoid(&mut a, 1, 0);
            reno.cong_avoid(&mut b, 1, 0);
            assert_eq!(a.cwnd, b.cwnd, "ack {i}");
        }
    }

    /// Two paths with equal RTTs, the second losing 4× as often. OLIA moves (nearly) all of its
    /// window to the better path, where LIA keeps about p1/p2 = 1/4 of the first path's window
    /// on the worse one; OLIA's total is about one Reno flow's on the better path.
    #[test]
    fn shifts_window_to_the_better_path() {
        let rtt = 100 * NS_PER_MS;
        let (p1, p2) = (1e-3, 4e-3);
        let olia = Fluid::lossy("olia", &[(rtt, p1), (rtt, p2)]).run_avg(100, 400);
        let lia = Fluid::lossy("lia", &[(rtt, p1), (rtt, p2)]).run_avg(100, 400);
        let share = |w: &[f64]| w[1] / (w[0] + w[1]);
        assert!(share(&olia) < 0.1, "olia {olia:?}");
        assert!(share(&olia) < 0.6 * share(&lia), "olia {olia:?} lia {lia:?}");
        let reno = fluid::single_reno(p1, rtt);
        let total = olia[0] + olia[1];
        assert!((0.7..=1.3).contains(&(total / reno)), "olia {olia:?} reno {reno:.1}");
    }

    /// The paths swap roles. ε (+1/(n·|B\\M|) per RTT for the now-better path with the small
    /// window, −1/(n·|M|) for the large one) moves the window over in about 50 RTTs; with the
    /// fully coupled increase alone (ε = 0) the small window grows by only ~(w_r/Σw)² per RTT
    /// and the move takes about 200 RTTs (path 0 still holds twice path 1's window here).
    #[test]
    fn follows_the_better_path_when_paths_swap() {
        let rtt = 100 * NS_PER_MS;
        let (good, bad) = (1e-3, 4e-3);
        let mut f = Fluid::lossy("olia", &[(rtt, good), (rtt, bad)]);
        let before = f.run_avg(100, 20);
        assert!(before[1] < 0.1 * before[0], "{before:?}");
        // Swap at 120 s; measure from 125 s to 135 s.
        f.set_loss(0, bad);
        f.set_loss(1, good);
        let after = f.run_avg(125, 10);
        assert!(after[0] < 0.33 * after[1], "{after:?}");
    }

    #[test]
    fn shared_bottleneck_total_is_one_tcp() {
        let p = 1e-3;
        let rtt = 100 * NS_PER_MS;
        let reno = fluid::single_reno(p, rtt);
        let olia = Fluid::lossy("olia", &[(rtt, p), (rtt, p)]).run_avg_total();
        assert!((0.7..=1.3).contains(&(olia / reno)), "olia {olia:.1} reno {reno:.1}");
    }
}
