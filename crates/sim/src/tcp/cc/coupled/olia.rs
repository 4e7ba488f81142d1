//! OLIA, the Opportunistic Linked-Increases Algorithm.
//!
//! Sources: R. Khalili, N. Gast, M. Popovic, J.-Y. Le Boudec, "MPTCP Is Not Pareto-Optimal:
//! Performance Issues and a Possible Solution", IEEE/ACM ToN 21(5), 2013 (§V, eq. (5));
//! draft-khalili-mptcp-congestion-control; Linux out-of-tree MPTCP `net/mptcp/mptcp_olia.c`.
//!
//! What it does:
//! - Slow start, loss response (ssthresh = max(cwnd/2, 2), i.e. halve) and RTO as Reno.
//! - Loss intervals: `l_r = max(bytes between the last two losses, bytes since the last loss)`
//!   of subflow r (Linux `mptcp_loss1..3`), counted from the table's `bytes_acked`.
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
//! - Linux reads every subflow's loss counters directly. Here each instance learns its own
//!   losses exactly (`set_state` into Recovery/Loss, not on a repeated RTO, only if bytes were
//!   ACKed since the last loss — as Linux) but infers its siblings' losses from the table,
//!   which has no loss signal: a sibling's loss is taken to be when its ssthresh drops, or its
//!   cwnd drops by ≥ 2 segments or by one to at most its ssthresh, at most once per sibling
//!   RTT, at its current `bytes_acked`. This is noticed at this subflow's next ACK and misses a
//!   loss that changes neither window (cwnd = ssthresh = 2). A per-subflow loss counter in
//!   `SubflowCc` would make it exact.
//! - Linux uses ssthresh instead of cwnd for subflows in fast recovery (undoing the RFC 5681
//!   inflation); the table has no state, and this sender does not inflate cwnd (PRR).
use super::{paths, publish, reno_ssthresh, slow_start_part, Coupling, SubflowCc};
use crate::core::Time;
use crate::tcp::cc::{CaState, CongestionControl, Tcb};
use std::cmp::Ordering;

/// Bytes ACKed at the last two losses (Linux `mptcp_loss1`, `mptcp_loss2`).
#[derive(Clone, Copy, Debug, Default)]
struct LossHistory {
    loss1: u64,
    loss2: u64,
}

impl LossHistory {
    /// `l = max(bytes between the last two losses, bytes since the last loss)`.
    fn interval(&self, bytes_now: u64) -> u64 {
        bytes_now
            .saturating_sub(self.loss2)
            .max(self.loss2 - self.loss1)
    }
    /// A loss with `bytes` ACKed so far; ignored if nothing was ACKed since the last one.
    fn on_loss(&mut self, bytes: u64) {
        if bytes > self.loss2 {
            self.loss1 = self.loss2;
            self.loss2 = bytes;
        }
    }
}

/// What this instance has seen of a sibling subflow.
#[derive(Clone, Debug, Default)]
struct Peer {
    loss: LossHistory,
    seen: bool,
    cwnd: u32,
    ssthresh: u32,
    bytes: u64,
    last_loss: Option<Time>,
}

impl Peer {
    fn observe(&mut self, e: &SubflowCc, now: Time) {
        if self.seen {
            let ss_down = e.ssthresh < self.ssthresh;
            let cwnd_down = e.cwnd + 2 <= self.cwnd || (e.cwnd < self.cwnd && e.cwnd <= e.ssthresh);
            let quiet = self.last_loss.is_none_or(|t| now >= t + e.srtt);
            if (ss_down || cwnd_down) && quiet {
                self.loss.on_loss(e.bytes_acked);
                self.last_loss = Some(now);
            }
        }
        self.seen = true;
        self.cwnd = e.cwnd;
        self.ssthresh = e.ssthresh;
        self.bytes = e.bytes_acked;
    }
}

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
        (a.interval as u128 * (b.rtt as u128).pow(2))
            .cmp(&(b.interval as u128 * (a.rtt as u128).pow(2)))
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
    own: LossHistory,
    /// Bytes ACKed at the last `cong_avoid` (Linux `mptcp_loss3`).
    loss3: u64,
    /// Siblings by table index (own entry unused).
    peers: Vec<Peer>,
    /// Fractional window change carried between ACKs, in segments.
    cnt: f64,
}

impl Olia {
    pub fn new(coupling: Coupling, index: usize) -> Self {
        Olia {
            coupling,
            index,
            own: LossHistory::default(),
            loss3: 0,
            peers: vec![],
            cnt: 0.0,
        }
    }

    /// Loss interval l_r of subflow `index` as this instance knows it.
    fn interval(&self, index: usize) -> u64 {
        if index == self.index {
            self.own.interval(self.loss3)
        } else {
            let p = &self.peers[index];
            p.loss.interval(p.bytes)
        }
    }

    fn observe(&mut self, tcb: &Tcb, now: Time) {
        let table = self.coupling.borrow();
        self.loss3 = match table.get(self.index) {
            Some(e) => e.bytes_acked,
            None => tcb.delivered * tcb.mss as u64,
        };
        self.peers.resize(table.len(), Peer::default());
        for (i, e) in table.iter().enumerate() {
            if i != self.index {
                self.peers[i].observe(e, now);
            }
        }
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

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) {
        self.observe(tcb, now);
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
        if matches!(new_state, CaState::Loss | CaState::Recovery) && !repeated_rto {
            self.own.on_loss(self.loss3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{self, Fluid};
    use super::super::new_coupling;
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

    #[test]
    fn loss_intervals_follow_own_losses_and_siblings_windows() {
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
        let mut o = Olia::new(c.clone(), 0);
        let mut tcb = Tcb::new(1000, 40);
        tcb.ssthresh = 20;
        tcb.srtt = 100 * NS_PER_MS;
        let ack = |o: &mut Olia, tcb: &mut Tcb, own: u64, peer: u64, now: Time| {
            c.borrow_mut()[0].bytes_acked = own;
            c.borrow_mut()[1].bytes_acked = peer;
            o.cong_avoid(tcb, 1, now);
        };
        let s = 1_000_000_000;
        ack(&mut o, &mut tcb, 1000, 1000, 0);
        // Own losses at 50 kB and 70 kB ACKed: l = max(20 kB, bytes since the last loss).
        ack(&mut o, &mut tcb, 50_000, 2000, s);
        o.set_state(&mut tcb, CaState::Recovery, s);
        o.set_state(&mut tcb, CaState::Loss, s); // RTO during recovery, nothing ACKed since: same loss
        tcb.ca_state = CaState::Loss;
        o.set_state(&mut tcb, CaState::Loss, s); // repeated RTO
        tcb.ca_state = CaState::Open;
        ack(&mut o, &mut tcb, 70_000, 3000, 2 * s);
        o.set_state(&mut tcb, CaState::Recovery, 2 * s);
        assert_eq!(o.interval(0), 20_000);
        ack(&mut o, &mut tcb, 100_000, 4000, 3 * s);
        assert_eq!(o.interval(0), 30_000);
        // Sibling: no loss yet (l = bytes so far); window 40 → 20 at 9000 bytes ACKed.
        assert_eq!(o.interval(1), 4000);
        c.borrow_mut()[1].cwnd = 20;
        ack(&mut o, &mut tcb, 101_000, 9000, 4 * s);
        c.borrow_mut()[1].cwnd = 25;
        ack(&mut o, &mut tcb, 102_000, 12_000, 5 * s);
        assert_eq!(o.interval(1), 9000);
        // A cwnd step of −1 above ssthresh (OLIA's own ε decrease) is not a loss.
        c.borrow_mut()[1].cwnd = 24;
        ack(&mut o, &mut tcb, 103_000, 30_000, 6 * s);
        assert_eq!(o.interval(1), 21_000);
        // ssthresh drop: a loss.
        c.borrow_mut()[1].ssthresh = 10;
        ack(&mut o, &mut tcb, 104_000, 31_000, 7 * s);
        assert_eq!(o.interval(1), 22_000);
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
        assert!(
            share(&olia) < 0.6 * share(&lia),
            "olia {olia:?} lia {lia:?}"
        );
        let reno = fluid::single_reno(p1, rtt);
        let total = olia[0] + olia[1];
        assert!(
            (0.7..=1.3).contains(&(total / reno)),
            "olia {olia:?} reno {reno:.1}"
        );
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
        assert!(
            (0.7..=1.3).contains(&(olia / reno)),
            "olia {olia:.1} reno {reno:.1}"
        );
    }
}
