//! Balia, the Balanced Linked Adaptation algorithm.
//!
//! Sources: Q. Peng, A. Walid, J. Hwang, S. H. Low, "Multipath TCP: Analysis, Design, and
//! Implementation", IEEE/ACM ToN 24(1), 2016 (§VI, Algorithm 1); draft-walid-mptcp-congestion-control;
//! Linux out-of-tree MPTCP `net/mptcp/mptcp_balia.c`.
//!
//! What it does (windows in segments, RTTs in ns):
//! - `x_r = cwnd_r/rtt_r`, `α_r = max_k x_k / x_r`.
//! - Per ACKed segment in congestion avoidance:
//!   `cwnd_r += (x_r/rtt_r)/(Σ_k x_k)² · (1+α_r)/2 · (4+α_r)/5`, done as Linux does it: +1
//!   segment every `ai = ⌊1/increase⌋` ACKed segments with the `cwnd_cnt` counter.
//! - On loss: `cwnd_r −= cwnd_r/2 · min(α_r, 1.5)`, i.e. ssthresh = ⌊cwnd·(1 − min(α_r, 1.5)/2)⌋,
//!   at least 2.
//! - Slow start and RTO as Reno. Subflows counted: active with an RTT sample, backups included
//!   (see [`super::paths`]); with one such subflow it is Reno (α = 1 gives exactly Reno's
//!   increase 1/cwnd and decrease cwnd/2).
//!
//! Deviations from Linux:
//! - Floating point from the shared table on every ACK and loss. Linux keeps `ai` and `md` in
//!   scaled integers per connection, recomputed in slow start, when cwnd grows, on a state
//!   change and on RTO/CWR completion — its `md` can therefore be stale at a loss — and uses an
//!   *integer* α (⌊max x/x_r⌋) in the decrease, so its min(α, 1.5) is 1 or 1.5 only; here α is
//!   real-valued as in the paper. Linux's ssthresh floor is 1; here 2 as the other algorithms.
//! - ACKed segments count per segment (Linux one per ACK); slow-start leftovers go to congestion
//!   avoidance as in `tcp_reno_cong_avoid`.
use super::{ack_count, paths, publish, reno_ssthresh, slow_start_part, Coupling, Path};
use crate::core::Time;
use crate::tcp::cc::{CongestionControl, Tcb};

/// α_r = max_k x_k / x_r.
pub fn alpha(ps: &[Path], me: usize) -> f64 {
    let max = ps.iter().map(Path::rate).fold(0.0, f64::max);
    max / ps[me].rate()
}

/// Window increase of `ps[me]` per ACKed segment.
pub fn increase(ps: &[Path], me: usize) -> f64 {
    let sum: f64 = ps.iter().map(Path::rate).sum();
    let a = alpha(ps, me);
    let p = &ps[me];
    p.rate() / p.rtt as f64 / (sum * sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0
}

/// ssthresh after a loss on `ps[me]`: cwnd − cwnd/2·min(α, 1.5), at least 2.
pub fn decreased(ps: &[Path], me: usize) -> u32 {
    let cwnd = ps[me].cwnd as f64;
    let md = cwnd / 2.0 * alpha(ps, me).min(1.5);
    ((cwnd - md + 1e-9).floor() as u32).max(2)
}

pub struct Balia {
    coupling: Coupling,
    index: usize,
}

impl Balia {
    pub fn new(coupling: Coupling, index: usize) -> Self {
        Balia { coupling, index }
    }
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, _now: Time) {
        if let Some(acked) = slow_start_part(tcb, acked) {
            let (ps, me) = paths(&self.coupling, self.index, tcb);
            let w = match me {
                Some(me) if ps.len() > 1 => ack_count(1.0 / increase(&ps, me)),
                _ => tcb.cwnd,
            };
            tcb.cong_avoid_ai(w, acked);
        }
        publish(&self.coupling, self.index, tcb);
    }

    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        match paths(&self.coupling, self.index, tcb) {
            (ps, Some(me)) if ps.len() > 1 => decreased(&ps, me),
            _ => reno_ssthresh(tcb),
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

    fn path(index: usize, cwnd: u32, rtt_ms: u64) -> Path {
        Path {
            index,
            cwnd,
            rtt: rtt_ms * NS_PER_MS,
            mss: 1448,
        }
    }

    #[test]
    fn increase_and_decrease_formulas() {
        // x = (10/100, 40/50) per ms = (0.1, 0.8); Σx = 0.9; α_0 = 8, α_1 = 1.
        let ps = [path(0, 10, 100), path(1, 40, 50)];
        assert!((alpha(&ps, 0) - 8.0).abs() < 1e-12);
        assert!((alpha(&ps, 1) - 1.0).abs() < 1e-12);
        // Subflow 0: (0.1/100)/0.81 · 9/2 · 12/5 (ms units cancel).
        let inc0 = (0.1 / 100.0) / 0.81 * 4.5 * 2.4;
        assert!((increase(&ps, 0) / inc0 - 1.0).abs() < 1e-12);
        // Subflow 1: (0.8/50)/0.81 · 1 · 1.
        let inc1 = (0.8 / 50.0) / 0.81;
        assert!((increase(&ps, 1) / inc1 - 1.0).abs() < 1e-12);
        // Decrease: 10 − 10/2·1.5 = 2.5 → 2; 40 − 40/2·1 = 20.
        assert_eq!(decreased(&ps, 0), 2);
        assert_eq!(decreased(&ps, 1), 20);
        // α between 1 and 1.5: x = (0.3, 0.4): α_0 = 4/3, 30 − 15·4/3 = 10.
        let ps = [path(0, 30, 100), path(1, 40, 100)];
        assert_eq!(decreased(&ps, 0), 10);
    }

    #[test]
    fn ssthresh_and_increase_through_the_trait() {
        let c = new_coupling(2);
        c.borrow_mut()[1] = SubflowCc {
            active: true,
            cwnd: 40,
            srtt: 50 * NS_PER_MS,
            mss: 1448,
            ..Default::default()
        };
        let mut b = Balia::new(c.clone(), 0);
        let mut tcb = Tcb::new(1448, 20);
        tcb.srtt = 100 * NS_PER_MS;
        tcb.ssthresh = 2;
        // x = (0.2, 0.8): α_0 = 4 → ssthresh = 20 − 10·1.5 = 5.
        assert_eq!(b.ssthresh(&tcb, 0), 5);
        // +1 after ⌊1/increase⌋ ACKs: 1/((0.2/100)/1 · 2.5 · 1.6) = 125.
        let ps = [path(0, 20, 100), path(1, 40, 50)];
        assert_eq!(ack_count(1.0 / increase(&ps, 0)), 125);
        for _ in 0..124 {
            b.cong_avoid(&mut tcb, 1, 0);
        }
        assert_eq!(tcb.cwnd, 20);
        b.cong_avoid(&mut tcb, 1, 0);
        assert_eq!(tcb.cwnd, 21);
        assert_eq!(c.borrow()[0].cwnd, 21);
    }

    #[test]
    fn one_subflow_is_reno() {
        let c = new_coupling(2);
        let mut b = Balia::new(c.clone(), 1);
        let mut reno = Reno::new(RecoveryStyle::NewReno);
        let mut x = Tcb::new(1448, 10);
        x.srtt = 100 * NS_PER_MS;
        x.ssthresh = 30;
        let mut y = x.clone();
        for i in 0..3000 {
            b.cong_avoid(&mut x, 1, 0);
            reno.cong_avoid(&mut y, 1, 0);
            assert_eq!((x.cwnd, x.cwnd_cnt), (y.cwnd, y.cwnd_cnt), "ack {i}");
        }
        assert_eq!(b.ssthresh(&x, 0), reno.ssthresh(&y, 0));
    }

    /// Equal subflows: α = 1, so Balia is LIA here (increase 1/(4w), decrease w/2).
    #[test]
    fn equal_subflows_match_lia() {
        let ps = [path(0, 30, 80), path(1, 30, 80)];
        assert!((increase(&ps, 0) - 1.0 / 120.0).abs() < 1e-12);
        assert_eq!(decreased(&ps, 1), 15);
    }

    #[test]
    fn shared_bottleneck_total_is_one_tcp() {
        let p = 1e-3;
        let rtt = 100 * NS_PER_MS;
        let reno = fluid::single_reno(p, rtt);
        let balia = Fluid::lossy("balia", &[(rtt, p), (rtt, p)]).run_avg_total();
        assert!((0.7..=1.3).contains(&(balia / reno)), "balia {balia:.1} reno {reno:.1}");
    }
}
